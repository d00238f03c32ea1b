/* claimtrace's table (app-core.js lists the parts): the classifier's exact table
   (models/table.py) loaded into the page, and the verdict of a claim alone computed from it, every
   token's share included, as explain_input (explain/verdict.py) computes it on the server
   (tests/web/test_browser.py holds the two together over every dev claim). */
(function (claimtrace) {
  "use strict";

  /* The table as the server sends it: g in float32 (base64, little-endian), widened to float64
     for the sums, and the vocabulary with its special tokens' ids. */
  function decode(raw) {
    var binary = atob(raw.g);
    var view = new DataView(new ArrayBuffer(binary.length));
    for (var i = 0; i < binary.length; i++) view.setUint8(i, binary.charCodeAt(i));
    var n = binary.length / 4;
    var g = new Float64Array(n);
    for (var j = 0; j < n; j++) g[j] = view.getFloat32(4 * j, true);
    var index = new Map();
    raw.vocab.forEach(function (token, id) { index.set(token, id); });
    return {
      g: g, bias: raw.bias, labels: raw.labels, vocab: raw.vocab, index: index,
      width: raw.shape[1], maxLen: raw.max_len,
      unk: index.get(raw.special.unk), cls: index.get(raw.special.cls),
      sep: index.get(raw.special.sep), pad: index.get(raw.special.pad)
    };
  }

  /* The table as sent: embedded in the page, else the static site's one shared copy
     (static/table.js), else the server's api/table.json. */
  function fetchRaw() {
    var embedded = document.getElementById("table-data");
    if (embedded) return Promise.resolve(JSON.parse(embedded.textContent));
    if (claimtrace.body.getAttribute("data-mode") === "static") {
      return claimtrace.loadScript(claimtrace.root + "static/table.js").then(function () { return window.claimtraceTable; });
    }
    return fetch(claimtrace.root + "api/table.json").then(function (response) {
      if (!response.ok) throw new Error("the table is not available (" + response.status + ")");
      return response.json();
    });
  }

  /* The decoded table, loaded once per page. */
  function load() {
    var state = claimtrace.state;
    if (state.table) return Promise.resolve(state.table);
    return fetchRaw().then(function (raw) {
      state.table = decode(raw);
      return state.table;
    });
  }

  /* A text's words: split on white space, empty strings dropped. */
  function words(text) {
    return text.split(/\s+/).filter(function (w) { return w.length > 0; });
  }

  /* The model input of some words, as Vocabulary.encode (models/inputs.py) writes it: [CLS], each
     word's id (<unk> for a word outside the vocabulary), [SEP]; past maxLen ids, the first
     maxLen - 1 and [SEP]; then [PAD] up to maxLen. */
  function encode(table, words) {
    var ids = [table.cls];
    for (var i = 0; i < words.length; i++) ids.push(table.index.has(words[i]) ? table.index.get(words[i]) : table.unk);
    ids.push(table.sep);
    if (ids.length > table.maxLen) ids = ids.slice(0, table.maxLen - 1).concat([table.sep]);
    while (ids.length < table.maxLen) ids.push(table.pad);
    return ids;
  }

  /* The whole computation: logits = bias + (1/128) * sum_t g[token_t], each token's share its
     row of g over 128. ``ids`` are a model input (encode), ``words`` the words it encodes: they
     name its tokens (an <unk> shows the word it stands for). The real tokens run to the input's
     last [SEP], so a word typed as "[PAD]" counts as a real token; the rest is padding. */
  function compute(table, ids, words) {
    var real = ids.lastIndexOf(table.sep) + 1, pads = table.maxLen - real;
    var w = table.width, n = table.maxLen;
    var tokens = [], wordsTotal = new Array(w).fill(0), sums = new Array(w).fill(0);
    for (var t = 0; t < real; t++) {
      var row = ids[t] * w, share = new Array(w);
      for (var k = 0; k < w; k++) {
        share[k] = table.g[row + k] / n;
        sums[k] += table.g[row + k];
        wordsTotal[k] += share[k];
      }
      // position 0 is [CLS] and the last real one [SEP]; in between, the t-th word
      var word = t > 0 && t < real - 1 ? words[t - 1] : null;
      tokens.push({ position: t, id: ids[t], token: table.vocab[ids[t]], word: word, unknown: ids[t] === table.unk, share: share });
    }
    var padShare = new Array(w);
    for (var p = 0; p < w; p++) {
      padShare[p] = table.g[table.pad * w + p] * pads / n;
      sums[p] += table.g[table.pad * w + p] * pads;
    }
    var logits = table.bias.map(function (b, k) { return b + sums[k] / n; });
    var best = 0;
    for (var q = 1; q < w; q++) if (logits[q] > logits[best]) best = q;
    return { logits: logits, verdict: table.labels[best], tokens: tokens, padding: { count: pads, share: padShare },
             wordsTotal: wordsTotal, bias: table.bias, real: real, pads: pads,
             cut: Math.max(0, words.length + 2 - table.maxLen),
             unknown: tokens.filter(function (x) { return x.unknown; }).length };
  }

  /* compute of the model input a text's words make (the editor's text box). */
  function computeText(table, text) {
    var split = words(text);
    return compute(table, encode(table, split), split);
  }

  claimtrace.table = { load: load, words: words, encode: encode, compute: compute, computeText: computeText };
})(window.claimtrace);
