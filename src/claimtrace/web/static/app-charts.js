/* claimtrace's verdict charts (app-core.js lists the parts), drawn from a result of
   claimtrace.table.compute: where each logit comes from, the verdict's margin over the runner-up
   and the tokens that push it hardest each way, and every token's share. The live editor redraws
   them on every keystroke; a static claim page draws them once. */
(function (claimtrace) {
  "use strict";

  var el = claimtrace.el;

  var PUSHES = 5; // tokens listed for and against the verdict

  /* The charts are built once, then updated in place: rebuilding ~130 table rows on every
     keystroke would cost more than a frame. */
  function makeCell(tr, strong) {
    var fill = el("span", { cls: "fill" });
    var bar = el("span", { cls: "bar" }, [fill]);
    var off = el("small", { cls: "off", text: "off scale" });
    var v = el("span", { cls: "v" });
    var text = strong ? el("strong") : v;
    if (strong) v.appendChild(text);
    tr.appendChild(el("td", null, [bar, off, v]));
    return { bar: bar, fill: fill, off: off, text: text };
  }

  /* A bar drawn to scale, as the server's pages draw it (render._bar): a half-bar is `scale`, the
     fill is |value| / scale of a half on the value's side of zero; past the scale it is drawn
     full, striped, and marked "off scale"; a tiny value is drawn as tiny as it is. */
  function setCell(c, value, scale, digits) {
    var share = scale ? Math.abs(value) / scale : 0;
    var clipped = share > 1;
    c.fill.className = "fill " + (value >= 0 ? "pos" : "neg") + (clipped ? " clipped" : "");
    c.fill.style.width = (Math.min(share, 1) * 50).toFixed(4) + "%";
    c.bar.setAttribute("data-value", String(value));
    c.bar.setAttribute("data-scale", String(scale));
    c.off.hidden = !clipped;
    c.text.textContent = claimtrace.signed(value, digits);
  }

  /* ---------------------------------------------------------------- building */

  /* Where each logit comes from: bias, real tokens, padding, one row per label. */
  function sumTable(view, labels) {
    var head = el("tr", null, [el("th", { cls: "l", text: "label" }), el("th", { text: "bias" })]);
    view.realHead = el("th"); view.padHead = el("th");
    head.appendChild(view.realHead); head.appendChild(view.padHead); head.appendChild(el("th", { text: "= logit" }));
    var rows = el("tbody");
    view.sumRows = labels.map(function (label) {
      var tr = el("tr", null, [el("th", { cls: "l", text: label })]);
      rows.appendChild(tr);
      return { tr: tr, cells: [makeCell(tr), makeCell(tr), makeCell(tr), makeCell(tr, true)] };
    });
    view.sumCaption = el("caption");
    return el("table", { cls: "chart sum" }, [view.sumCaption, el("thead", null, [head]), rows]);
  }

  /* The margin over the runner-up, token by token: the few that push hardest each way. */
  function marginTable(view) {
    var rows = el("tbody");
    function pushRow(cls) {
      var tr = el("tr", cls ? { cls: cls } : null);
      var row = { tr: tr, name: el("th", { cls: "l" }) };
      tr.appendChild(row.name);
      row.cell = makeCell(tr);
      rows.appendChild(tr);
      return row;
    }
    view.marginBias = pushRow("bias");
    view.pushRows = [];
    for (var k = 0; k < 2 * PUSHES; k++) view.pushRows.push(pushRow(k === PUSHES ? "gap" : null));
    view.marginTokens = pushRow("gap");
    view.marginPad = pushRow("pad");
    view.marginTotal = pushRow("total");
    view.marginCaption = el("caption");
    return el("table", { cls: "chart margin" }, [view.marginCaption, rows]);
  }

  /* Every token's share, for all four labels: its rows are built and kept up to date only while
     it is open. */
  function tokensDetails(view, labels) {
    var head = el("tr", null, [el("th", { cls: "l", text: "token" })]);
    view.labelHeads = labels.map(function (label) { var th = el("th", { text: label }); head.appendChild(th); return th; });
    view.tokensBody = el("tbody");
    view.tokensCaption = el("caption");
    view.tokenRows = null;
    return el("details", { cls: "tokens-detail" }, [
      el("summary", { text: "Every token’s exact share, for all four labels" }),
      el("table", { cls: "chart tokens" }, [view.tokensCaption, el("thead", null, [head]), view.tokensBody])]);
  }

  function build(out, labels, withVerdict) {
    var view = {
      verdict: el("span", { cls: "verdict" }),
      right: el("span"),
      changed: el("span", { cls: "changed" }),
      counts: el("p", { cls: "muted" })
    };
    out.textContent = "";
    /* the editor's verdict line; a static claim page's charts go without it (its verdict is
       section 9's, by protocol, as on the server's page) */
    if (withVerdict) {
      out.appendChild(el("p", { cls: "big" }, [view.verdict, " ", view.right, view.changed]));
      out.appendChild(view.counts);
    }
    out.appendChild(sumTable(view, labels));
    out.appendChild(marginTable(view));
    view.full = tokensDetails(view, labels);
    out.appendChild(view.full);
    return view;
  }

  function buildTokenRows(view, labels, maxLen) {
    function tokenRow(cls, fixedName) {
      var name = el("th", { cls: "l" });
      var row = { pos: el("span", { cls: "at" }), name: el("span"), word: el("s") };
      if (fixedName) name.textContent = fixedName; else { name.appendChild(row.pos); name.appendChild(document.createTextNode(" ")); name.appendChild(row.name); name.appendChild(row.word); }
      row.label = name;
      row.tr = el("tr", cls ? { cls: cls } : null, [name]);
      row.cells = labels.map(function () { return makeCell(row.tr); });
      view.tokensBody.appendChild(row.tr);
      return row;
    }
    var rows = { bias: tokenRow("bias", "bias"), tokens: [] };
    for (var t = 0; t < maxLen; t++) rows.tokens.push(tokenRow(null, null));
    rows.pad = tokenRow("pad", " ");
    return rows;
  }

  /* ---------------------------------------------------------------- drawing */

  function drawTokens(view, result) {
    var table = claimtrace.state.table;
    if (!view.tokenRows) view.tokenRows = buildTokenRows(view, table.labels, table.maxLen);
    var rows = view.tokenRows;
    table.labels.forEach(function (label, i) { view.labelHeads[i].className = label === result.verdict ? "win" : ""; });
    var scale = 0;
    result.tokens.forEach(function (t) { t.share.forEach(function (x) { scale = Math.max(scale, Math.abs(x)); }); });
    view.tokensCaption.textContent = "each token’s share: g[token] / " + table.maxLen + " (a half-bar is " + scale.toFixed(4) +
      ", the largest word’s share; a bar past it is drawn full, striped and marked off scale)";
    result.bias.forEach(function (x, k) { setCell(rows.bias.cells[k], x, scale, 4); });
    rows.tokens.forEach(function (row, t) {
      var tok = result.tokens[t];
      if (!tok) { if (!row.tr.hidden) row.tr.hidden = true; return; }
      row.tr.hidden = false;
      row.pos.textContent = String(tok.position);
      row.name.textContent = tok.unknown ? "<unk> " : tok.token;
      row.word.textContent = tok.unknown ? tok.word : "";
      tok.share.forEach(function (x, k) { setCell(row.cells[k], x, scale, 4); });
    });
    rows.pad.tr.hidden = !result.padding.count;
    rows.pad.label.textContent = "[PAD] × " + result.padding.count;
    result.padding.share.forEach(function (x, k) { setCell(rows.pad.cells[k], x, scale, 4); });
    if (!view.fullMarked) { view.fullMarked = true; claimtrace.markScrollables(view.full); }
  }

  function plural(n, word) { return n + " " + word + (n === 1 ? "" : "s"); }

  function drawVerdict(view, result, reference, maxLen) {
    view.verdict.className = "verdict v-" + result.verdict;
    view.verdict.textContent = result.verdict;
    if (reference.label) {
      var right = result.verdict === reference.label;
      view.right.className = right ? "right" : "wrong";
      view.right.textContent = right ? "✓ right" : "✗ wrong (label " + reference.label + ")";
    } else { view.right.textContent = ""; }
    view.changed.textContent = reference.alone && result.verdict !== reference.alone.verdict
      ? " changed: the unedited input gives " + reference.alone.verdict : "";
    view.counts.textContent = result.real + " real tokens, " + result.pads + " [PAD]" +
      (result.unknown ? ", " + plural(result.unknown, "unknown word") + " (<unk>)" : "") +
      (result.cut ? "; " + plural(result.cut, "word") + " cut off at " + maxLen : "") + ".";
  }

  function drawSums(view, result, labels) {
    view.realHead.textContent = result.real + " real tokens";
    view.padHead.textContent = "[PAD] × " + result.pads;
    var scale = 0;
    labels.forEach(function (_, i) {
      [result.bias[i], result.wordsTotal[i], result.padding.share[i], result.logits[i]].forEach(function (x) { scale = Math.max(scale, Math.abs(x)); });
    });
    view.sumCaption.textContent = "where each logit comes from (one scale: a half-bar is " + scale.toFixed(3) + ")";
    labels.forEach(function (label, i) {
      var row = view.sumRows[i];
      row.tr.className = label === result.verdict ? "win" : "";
      setCell(row.cells[0], result.bias[i], scale, 3);
      setCell(row.cells[1], result.wordsTotal[i], scale, 3);
      setCell(row.cells[2], result.padding.share[i], scale, 3);
      setCell(row.cells[3], result.logits[i], scale, 3);
    });
  }

  function tokenName(tok) { return (tok.unknown ? "<unk> " + tok.word : tok.token) + " @" + tok.position; }

  /* The tokens listed: the PUSHES pushing hardest for the verdict, then the PUSHES pushing
     hardest against it, each named by which way it really pushes. */
  function drawPushes(view, pushes, scale) {
    var against = pushes.slice(Math.max(PUSHES, pushes.length - PUSHES)).reverse();
    var top = pushes.slice(0, PUSHES);
    for (var k = 0; k < 2 * PUSHES; k++) {
      var p = k < PUSHES ? top[k] : against[k - PUSHES];
      var row = view.pushRows[k];
      if (!p) { row.tr.hidden = true; continue; }
      row.tr.hidden = false;
      row.name.textContent = (k < PUSHES ? (p.m >= 0 ? "for: " : "least against: ") : (p.m < 0 ? "against: " : "least for: ")) + tokenName(p.tok);
      setCell(row.cell, p.m, scale, 4);
    }
  }

  /* The margin: the verdict's logit minus the runner-up's, split into bias, tokens and padding. */
  function drawMargin(view, result, labels) {
    var win = labels.indexOf(result.verdict), second = -1;
    result.logits.forEach(function (x, i) { if (i !== win && (second < 0 || x > result.logits[second])) second = i; });
    var pushes = result.tokens.map(function (tok) { return { tok: tok, m: tok.share[win] - tok.share[second] }; });
    pushes.sort(function (a, b) { return b.m - a.m; });
    var scale = 0, tokensM = 0;
    pushes.forEach(function (p) { scale = Math.max(scale, Math.abs(p.m)); tokensM += p.m; });
    view.marginCaption.textContent = "why " + result.verdict + " beats " + labels[second] + " (the runner-up) by " +
      (result.logits[win] - result.logits[second]).toFixed(4) + ": each part’s share of that margin (a half-bar is " +
      scale.toFixed(4) + ", the largest token’s push; a bar past it is drawn full, striped and marked off scale)";
    view.marginBias.name.textContent = "bias";
    setCell(view.marginBias.cell, result.bias[win] - result.bias[second], scale, 4);
    drawPushes(view, pushes, scale);
    view.marginTokens.name.textContent = "all " + result.tokens.length + " real tokens together";
    setCell(view.marginTokens.cell, tokensM, scale, 4);
    view.marginPad.name.textContent = "[PAD] × " + result.padding.count;
    view.marginPad.tr.hidden = !result.padding.count;
    setCell(view.marginPad.cell, result.padding.share[win] - result.padding.share[second], scale, 4);
    view.marginTotal.name.textContent = "= margin";
    setCell(view.marginTotal.cell, result.logits[win] - result.logits[second], scale, 4);
  }

  /* Draw a result into `out` (built there on the first call); `reference` is the claim the
     input came from (its label, its unedited verdict). */
  function draw(out, result, reference, withVerdict) {
    var state = claimtrace.state, labels = state.table.labels;
    if (!state.charts) {
      state.charts = build(out, labels, withVerdict !== false);
      state.charts.full.addEventListener("toggle", function () { if (state.charts.full.open && state.drawn) drawTokens(state.charts, state.drawn); });
    }
    state.drawn = result;
    var view = state.charts;
    drawVerdict(view, result, reference, state.table.maxLen);
    drawSums(view, result, labels);
    drawMargin(view, result, labels);
    if (view.full.open) drawTokens(view, result);
    if (!view.scrollsMarked) { view.scrollsMarked = true; claimtrace.markScrollables(out); }
  }

  claimtrace.charts = { draw: draw };
})(window.claimtrace);
