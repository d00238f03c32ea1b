/* claimtrace: the Explore table's filters and sorting, and the live model-input editor.
   No dependencies, nothing loaded from the internet. Every text goes into the page through
   textContent, never innerHTML. */
(function () {
  "use strict";

  var body = document.body;
  var root = body.getAttribute("data-root") || "";

  function el(tag, attrs, children) {
    var node = document.createElement(tag);
    if (attrs) {
      for (var key in attrs) {
        if (key === "text") node.textContent = attrs[key];
        else if (key === "cls") node.className = attrs[key];
        else node.setAttribute(key, attrs[key]);
      }
    }
    (children || []).forEach(function (child) {
      node.appendChild(typeof child === "string" ? document.createTextNode(child) : child);
    });
    return node;
  }

  /* ---------------------------------------------------------------- shared parts (static export) */

  /* A static claim page leaves what many pages repeat word for word (the build's prose, a
     passage, a batch neighbour) to static/shared-<split>.js: <template data-shared=KEY> marks
     each place. Put every part back, as elements and texts, before anything else reads the page. */
  function buildNode(node) {
    if (typeof node === "string") return document.createTextNode(node);
    var element = document.createElement(node[0]);
    for (var name in node[1]) element.setAttribute(name, node[1][name]);
    for (var i = 2; i < node.length; i++) element.appendChild(buildNode(node[i]));
    return element;
  }

  function expandShared() {
    var parts = window.claimtraceShared;
    var places = document.querySelectorAll("template[data-shared]");
    if (!places.length) return;
    Array.prototype.forEach.call(places, function (place) {
      var fragment = document.createDocumentFragment();
      place.getAttribute("data-shared").split(" ").forEach(function (key) {
        var nodes = parts && parts[key];
        if (!nodes) throw new Error("shared part " + key + " is missing (static/shared-<split>.js)");
        nodes.forEach(function (node) { fragment.appendChild(buildNode(node)); });
      });
      place.parentNode.replaceChild(fragment, place);
    });
  }

  function signed(x, digits) {
    return (x >= 0 ? "+" : "") + x.toFixed(digits);
  }

  /* ---------------------------------------------------------------- Explore */

  /* Explore's table is drawn here from the page's data (#claims-data), a page of rows at a
     time: the filters and the sort run over every claim, the page shows PAGE of them. */
  var SHORT = { SUPPORTS: "SUP", REFUTES: "REF", NOT_ENOUGH_INFO: "NEI", DISPUTED: "DIS" };

  function claimRows(data) {
    var at = {};
    data.fields.forEach(function (name, i) { at[name] = i; });
    return data.rows.map(function (r) {
      var row = { position: r[at.position], id: r[at.id], text: r[at.text], lower: String(r[at.text]).toLowerCase() };
      row.label = r[at.label] === null ? "" : data.labels[r[at.label]];
      ["gold-alone", "gold-notebook", "retrieved-alone", "retrieved-notebook"].forEach(function (key) {
        row[key] = r[at[key]] === null ? "" : data.labels[r[at[key]]];
      });
      row.passed = r[at.passed] === null ? "" : r[at.passed];
      row.fallback = r[at.fallback] === null ? "" : (r[at.fallback] ? "yes" : "no");
      row.f = r[at.f] === null ? "" : r[at.f];
      return row;
    });
  }

  function claimRow(row, columns, labelled, exported) {
    var tr = el("tr", { "data-id": row.id, "data-label": row.label, "data-f": String(row.f), "data-fallback": row.fallback, "data-passed": String(row.passed) });
    tr.appendChild(el("td", { text: String(row.position + 1) }));
    /* a preview export writes some claim pages only: a link to another is disabled and marked,
       as site.py marks the links it writes itself */
    var link = exported && !exported.has(row.id)
      ? el("a", { "data-not-exported": "claim/" + row.id + ".html", "aria-disabled": "true", title: "not exported", text: row.id })
      : el("a", { href: root + "claim/" + row.id + ".html", text: row.id });
    tr.appendChild(el("td", { cls: "l" }, [link, el("span", { cls: "ctext", text: row.text })]));
    if (labelled) tr.appendChild(el("td", { cls: "l" }, [el("span", { cls: "mini v-" + row.label, title: row.label, text: SHORT[row.label] || "" })]));
    columns.forEach(function (key) {
      var v = row[key];
      var cell = el("td", { cls: "l" });
      if (!v) { cell.textContent = "—"; } else {
        cell.appendChild(el("span", { cls: "mini v-" + v, title: v, text: SHORT[v] }));
        if (labelled) cell.appendChild(v === row.label ? el("span", { cls: "right", title: "right", text: "✓" }) : el("span", { cls: "wrong", title: "wrong", text: "✗" }));
      }
      tr.appendChild(cell);
    });
    tr.appendChild(el("td", { text: row.passed === "" ? "—" : String(row.passed) }));
    tr.appendChild(el("td", { text: row.fallback === "" ? "—" : (row.fallback === "yes" ? "yes" : "") }));
    if (labelled) tr.appendChild(el("td", { text: row.f === "" ? "—" : row.f.toFixed(2) }));
    return tr;
  }

  function initExplore() {
    var table = document.getElementById("claims-table");
    var source = document.getElementById("claims-data");
    if (!table || !source) return;
    var data = JSON.parse(source.textContent);
    var all = claimRows(data);
    var PAGE = data.page;
    var exported = table.hasAttribute("data-exported") ? new Set(table.getAttribute("data-exported").split(" ")) : null;
    var tbody = table.tBodies[0];
    var heads = Array.prototype.slice.call(table.tHead.rows[0].cells);
    var labelled = heads.some(function (th) { return th.getAttribute("data-key") === "label"; });
    var columns = heads.map(function (th) { return th.getAttribute("data-key"); })
      .filter(function (key) { return /^(gold|retrieved)-/.test(key || ""); });
    var controls = {
      text: document.getElementById("f-text"),
      label: document.getElementById("f-label"),
      source: document.getElementById("f-source"),
      protocol: document.getElementById("f-protocol"),
      verdict: document.getElementById("f-verdict"),
      right: document.getElementById("f-right"),
      run: document.getElementById("f-run"),
      fallback: document.getElementById("f-fallback")
    };
    /* each compared run's right/wrong per claim, by its digest (Explore's "your run" filter) */
    var runRight = {};
    (data.runs || []).forEach(function (r) { runRight[r.digest] = r.right; });
    var count = document.getElementById("f-count");
    var pager = document.getElementById("pager"), pageOf = document.getElementById("page-of");
    var prev = document.getElementById("page-prev"), next = document.getElementById("page-next");
    var sortKey = "position", sortType = "num", sortDir = 1, page = 0, shown = [];

    function value(control) { return control ? control.value : ""; }

    function sortValue(row) {
      var v = row[sortKey];
      if (sortType === "num") return v === "" ? -Infinity : Number(v);
      if (sortType === "id") return parseInt(String(v).replace(/\D+/g, ""), 10) || 0;
      return String(v);
    }

    function select() {
      var text = value(controls.text).trim().toLowerCase();
      var label = value(controls.label), verdictWanted = value(controls.verdict);
      var right = value(controls.right), fallback = value(controls.fallback), run = value(controls.run);
      var key = value(controls.source) + "-" + value(controls.protocol);
      var correct = 0, judged = 0;
      shown = all.filter(function (row) {
        var verdict = row[key] || "";
        if (text && row.lower.indexOf(text) < 0 && row.id.indexOf(text) < 0) return false;
        if (label && row.label !== label) return false;
        if (verdictWanted && verdict !== verdictWanted) return false;
        if (right === "right" && verdict !== row.label) return false;
        if (right === "wrong" && (verdict === row.label || !verdict)) return false;
        if (fallback && row.fallback !== fallback) return false;
        if (run) {
          var wanted = run.split(":"), mine = (runRight[wanted[0]] || [])[row.position];
          if (mine === null || mine === undefined || !verdict) return false;
          var notebookRight = verdict === row.label;
          if (wanted[1] === "run" && !(mine && !notebookRight)) return false;
          if (wanted[1] === "notebook" && !(notebookRight && !mine)) return false;
        }
        if (verdict && row.label) { judged += 1; if (verdict === row.label) correct += 1; }
        return true;
      });
      var keyed = shown.map(function (row, i) { return [sortValue(row), i, row]; });
      keyed.sort(function (a, b) {
        if (a[0] < b[0]) return -sortDir;
        if (a[0] > b[0]) return sortDir;
        return a[1] - b[1];
      });
      shown = keyed.map(function (k) { return k[2]; });
      if (count) {
        count.textContent = shown.length + " of " + all.length + " claims shown" +
          (judged ? "; " + value(controls.source) + " evidence, " + value(controls.protocol) + ": " + correct + "/" + judged + " right" : "");
      }
    }

    function draw() {
      var pages = Math.max(1, Math.ceil(shown.length / PAGE));
      page = Math.min(Math.max(page, 0), pages - 1);
      var fragment = document.createDocumentFragment();
      shown.slice(page * PAGE, (page + 1) * PAGE).forEach(function (row) { fragment.appendChild(claimRow(row, columns, labelled, exported)); });
      tbody.textContent = "";
      tbody.appendChild(fragment);
      heads.forEach(function (th) {
        th.removeAttribute("aria-sort");
        if (th.getAttribute("data-key") === sortKey) th.setAttribute("aria-sort", sortDir > 0 ? "ascending" : "descending");
      });
      if (pager) {
        pager.hidden = pages < 2;
        pageOf.textContent = "claims " + (shown.length ? page * PAGE + 1 : 0) + "–" + Math.min(shown.length, (page + 1) * PAGE) + " of " + shown.length + " (page " + (page + 1) + " of " + pages + ")";
        prev.disabled = page === 0;
        next.disabled = page >= pages - 1;
      }
    }

    function update(keepPage) {
      if (!keepPage) page = 0;
      select();
      draw();
      saveState();
    }

    heads.forEach(function (th) {
      var key = th.getAttribute("data-key");
      if (!key) return;
      th.tabIndex = 0;
      th.title = "sort by " + th.textContent.trim();
      function go() {
        if (sortKey === key) sortDir = -sortDir; else { sortKey = key; sortDir = 1; }
        sortType = th.getAttribute("data-type") || "str";
        update();
      }
      th.addEventListener("click", go);
      th.addEventListener("keydown", function (e) { if (e.key === "Enter" || e.key === " ") { e.preventDefault(); go(); } });
    });
    if (prev) prev.addEventListener("click", function () { page -= 1; draw(); saveState(); });
    if (next) next.addEventListener("click", function () { page += 1; draw(); saveState(); });

    /* The filters, the sort and the page live in the URL (?label=…&sort=f&dir=desc&page=2), so a
       view can be shared. */
    function saveState() {
      var params = new URLSearchParams();
      Object.keys(controls).forEach(function (k) {
        var c = controls[k];
        if (c && c.value !== c.getAttribute("data-default")) params.set(k, c.value);
      });
      if (sortKey !== "position" || sortDir !== 1) { params.set("sort", sortKey); params.set("dir", sortDir > 0 ? "asc" : "desc"); }
      if (page > 0) params.set("page", String(page + 1));
      var query = params.toString();
      try { history.replaceState(null, "", window.location.pathname + (query ? "?" + query : "") + window.location.hash); } catch (e) { /* some file:// setups refuse */ }
    }

    function loadState() {
      var params = new URLSearchParams(window.location.search);
      Object.keys(controls).forEach(function (k) {
        var c = controls[k];
        if (!c) return;
        c.setAttribute("data-default", c.value);
        if (params.has(k)) c.value = params.get(k);
      });
      var key = params.get("sort");
      var th = key && table.tHead.querySelector('th[data-key="' + key.replace(/[^a-z-]/g, "") + '"]');
      if (th) { sortKey = key; sortType = th.getAttribute("data-type") || "str"; sortDir = params.get("dir") === "desc" ? -1 : 1; }
      page = (parseInt(params.get("page"), 10) || 1) - 1;
    }

    Object.keys(controls).forEach(function (k) {
      var c = controls[k];
      if (c) c.addEventListener(k === "text" ? "input" : "change", function () { update(); });
    });
    loadState();
    select();
    draw();
  }

  /* ---------------------------------------------------------------- the table */

  var TABLE = null;

  function decodeTable(raw) {
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

  /* A script file beside the page (works from file://, where fetch does not). */
  function loadScript(src) {
    return new Promise(function (resolve, reject) {
      var script = document.createElement("script");
      script.src = src;
      script.onload = resolve;
      script.onerror = function () { reject(new Error("could not load " + src)); };
      document.head.appendChild(script);
    });
  }

  function loadTable() {
    if (TABLE) return Promise.resolve(TABLE);
    var embedded = document.getElementById("table-data");
    if (embedded) {
      TABLE = decodeTable(JSON.parse(embedded.textContent));
      return Promise.resolve(TABLE);
    }
    /* the static site's one shared copy of the table: static/table.js */
    if (body.getAttribute("data-mode") === "static") {
      return loadScript(root + "static/table.js").then(function () {
        TABLE = decodeTable(window.claimtraceTable);
        return TABLE;
      });
    }
    return fetch(root + "api/table.json").then(function (response) {
      if (!response.ok) throw new Error("the table is not available (" + response.status + ")");
      return response.json();
    }).then(function (raw) { TABLE = decodeTable(raw); return TABLE; });
  }

  /* The whole computation: logits = bias + (1/128) * sum_t g[token_t]. */
  function compute(table, text) {
    var words = text.split(/\s+/).filter(function (w) { return w.length > 0; });
    var ids = [table.cls], shown = [null];
    for (var i = 0; i < words.length; i++) {
      var id = table.index.has(words[i]) ? table.index.get(words[i]) : table.unk;
      ids.push(id); shown.push(words[i]);
    }
    ids.push(table.sep); shown.push(null);
    var cut = 0;
    if (ids.length > table.maxLen) {
      cut = ids.length - table.maxLen;
      ids = ids.slice(0, table.maxLen - 1).concat([table.sep]);
      shown = shown.slice(0, table.maxLen - 1).concat([null]);
    }
    var real = ids.length, pads = table.maxLen - real;
    var w = table.width, n = table.maxLen;
    var tokens = [], wordsTotal = new Array(w).fill(0), sums = new Array(w).fill(0);
    for (var t = 0; t < real; t++) {
      var row = ids[t] * w, share = new Array(w);
      for (var k = 0; k < w; k++) {
        share[k] = table.g[row + k] / n;
        sums[k] += table.g[row + k];
        wordsTotal[k] += share[k];
      }
      tokens.push({ position: t, id: ids[t], token: table.vocab[ids[t]], word: shown[t], unknown: ids[t] === table.unk, share: share });
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
             wordsTotal: wordsTotal, bias: table.bias, real: real, pads: pads, cut: cut,
             unknown: tokens.filter(function (x) { return x.unknown; }).length };
  }

  /* The editor's output is built once, then updated in place: rebuilding ~130 table rows on
     every keystroke would cost more than a frame. */
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
    c.text.textContent = signed(value, digits);
  }

  var PUSHES = 5; // tokens listed for and against the verdict

  function buildOutput(out, labels, withVerdict) {
    var view = {};
    view.verdict = el("span", { cls: "verdict" });
    view.right = el("span");
    view.changed = el("span", { cls: "changed" });
    view.counts = el("p", { cls: "muted" });
    var headA = el("tr", null, [el("th", { cls: "l", text: "label" }), el("th", { text: "bias" })]);
    view.realHead = el("th"); view.padHead = el("th");
    headA.appendChild(view.realHead); headA.appendChild(view.padHead); headA.appendChild(el("th", { text: "= logit" }));
    var bodyA = el("tbody");
    view.sumRows = labels.map(function (label) {
      var tr = el("tr", null, [el("th", { cls: "l", text: label })]);
      var row = { tr: tr, cells: [makeCell(tr), makeCell(tr), makeCell(tr), makeCell(tr, true)] };
      bodyA.appendChild(tr);
      return row;
    });
    // the margin over the runner-up, token by token: the few that push hardest each way
    view.marginCaption = el("caption");
    var bodyM = el("tbody");
    function pushRow(cls) {
      var tr = el("tr", cls ? { cls: cls } : null);
      var row = { tr: tr, name: el("th", { cls: "l" }) };
      tr.appendChild(row.name);
      row.cell = makeCell(tr);
      bodyM.appendChild(tr);
      return row;
    }
    view.marginBias = pushRow("bias");
    view.pushRows = [];
    for (var k = 0; k < 2 * PUSHES; k++) view.pushRows.push(pushRow(k === PUSHES ? "gap" : null));
    view.marginTokens = pushRow("gap");
    view.marginPad = pushRow("pad");
    view.marginTotal = pushRow("total");
    // the full per-token table: built and kept up to date only while it is open
    var headB = el("tr", null, [el("th", { cls: "l", text: "token" })]);
    view.labelHeads = labels.map(function (label) { var th = el("th", { text: label }); headB.appendChild(th); return th; });
    view.bodyB = el("tbody");
    view.full = el("details", { cls: "tokens-detail" }, [
      el("summary", { text: "Every token’s exact share, for all four labels" }),
      el("table", { cls: "chart tokens" }, [
        view.tokensCaption = el("caption"),
        el("thead", null, [headB]), view.bodyB])]);
    view.fullRows = null;
    out.textContent = "";
    /* the editor's verdict line; a static claim page's charts go without it (its verdict is
       section 9's, by protocol, as on the server's page) */
    if (withVerdict) {
      out.appendChild(el("p", { cls: "big" }, [view.verdict, " ", view.right, view.changed]));
      out.appendChild(view.counts);
    }
    view.sumCaption = el("caption");
    out.appendChild(el("table", { cls: "chart sum" }, [view.sumCaption, el("thead", null, [headA]), bodyA]));
    out.appendChild(el("table", { cls: "chart margin" }, [view.marginCaption, bodyM]));
    out.appendChild(view.full);
    return view;
  }

  function buildFullRows(view, labels, maxLen) {
    function tokenRow(cls, fixedName) {
      var name = el("th", { cls: "l" });
      var row = { pos: el("span", { cls: "at" }), name: el("span"), word: el("s") };
      if (fixedName) name.textContent = fixedName; else { name.appendChild(row.pos); name.appendChild(document.createTextNode(" ")); name.appendChild(row.name); name.appendChild(row.word); }
      row.label = name;
      row.tr = el("tr", cls ? { cls: cls } : null, [name]);
      row.cells = labels.map(function () { return makeCell(row.tr); });
      view.bodyB.appendChild(row.tr);
      return row;
    }
    var rows = { bias: tokenRow("bias", "bias"), tokens: [] };
    for (var t = 0; t < maxLen; t++) rows.tokens.push(tokenRow(null, null));
    rows.pad = tokenRow("pad", " ");
    return rows;
  }

  function renderFull(view, result) {
    if (!view.fullRows) view.fullRows = buildFullRows(view, TABLE.labels, TABLE.maxLen);
    var rows = view.fullRows;
    TABLE.labels.forEach(function (label, i) { view.labelHeads[i].className = label === result.verdict ? "win" : ""; });
    var scale = 0;
    result.tokens.forEach(function (t) { t.share.forEach(function (x) { scale = Math.max(scale, Math.abs(x)); }); });
    view.tokensCaption.textContent = "each token’s share: g[token] / " + TABLE.maxLen + " (a half-bar is " + scale.toFixed(4) +
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
    if (!view.fullMarked) { view.fullMarked = true; markScrollables(view.full); }
  }

  function tokenName(tok) { return (tok.unknown ? "<unk> " + tok.word : tok.token) + " @" + tok.position; }

  var VIEW = null, LAST = null;

  function render(out, result, reference, withVerdict) {
    var labels = TABLE.labels;
    if (!VIEW) {
      VIEW = buildOutput(out, labels, withVerdict !== false);
      VIEW.full.addEventListener("toggle", function () { if (VIEW.full.open && LAST) renderFull(VIEW, LAST); });
    }
    LAST = result;
    var v = VIEW;
    v.verdict.className = "verdict v-" + result.verdict;
    v.verdict.textContent = result.verdict;
    if (reference.label) {
      var right = result.verdict === reference.label;
      v.right.className = right ? "right" : "wrong";
      v.right.textContent = right ? "✓ right" : "✗ wrong (label " + reference.label + ")";
    } else { v.right.textContent = ""; }
    v.changed.textContent = reference.alone && result.verdict !== reference.alone.verdict
      ? " changed: the unedited input gives " + reference.alone.verdict : "";
    v.counts.textContent = result.real + " real tokens, " + result.pads + " [PAD]" +
      (result.unknown ? ", " + result.unknown + " unknown word" + (result.unknown === 1 ? "" : "s") + " (<unk>)" : "") +
      (result.cut ? "; " + result.cut + " word" + (result.cut === 1 ? "" : "s") + " cut off at " + TABLE.maxLen : "") + ".";
    v.realHead.textContent = result.real + " real tokens";
    v.padHead.textContent = "[PAD] × " + result.pads;

    var scaleA = 0;
    labels.forEach(function (_, i) {
      [result.bias[i], result.wordsTotal[i], result.padding.share[i], result.logits[i]].forEach(function (x) { scaleA = Math.max(scaleA, Math.abs(x)); });
    });
    v.sumCaption.textContent = "where each logit comes from (one scale: a half-bar is " + scaleA.toFixed(3) + ")";
    labels.forEach(function (label, i) {
      var row = v.sumRows[i];
      row.tr.className = label === result.verdict ? "win" : "";
      setCell(row.cells[0], result.bias[i], scaleA, 3);
      setCell(row.cells[1], result.wordsTotal[i], scaleA, 3);
      setCell(row.cells[2], result.padding.share[i], scaleA, 3);
      setCell(row.cells[3], result.logits[i], scaleA, 3);
    });

    // the margin: verdict's logit minus the runner-up's, split into bias, tokens and padding
    var win = labels.indexOf(result.verdict), second = -1;
    result.logits.forEach(function (x, i) { if (i !== win && (second < 0 || x > result.logits[second])) second = i; });
    v.marginCaption.textContent = "why " + result.verdict + " beats " + labels[second] + " (the runner-up) by " +
      (result.logits[win] - result.logits[second]).toFixed(4) + ": each part’s share of that margin (a half-bar is ";
    var pushes = result.tokens.map(function (tok) { return { tok: tok, m: tok.share[win] - tok.share[second] }; });
    pushes.sort(function (a, b) { return b.m - a.m; });
    var against = pushes.slice(Math.max(PUSHES, pushes.length - PUSHES)).reverse();
    var top = pushes.slice(0, PUSHES);
    var scaleM = 0;
    pushes.forEach(function (p) { scaleM = Math.max(scaleM, Math.abs(p.m)); });
    v.marginCaption.textContent += scaleM.toFixed(4) + ", the largest token’s push; a bar past it is drawn full, striped and marked off scale)";
    var biasM = result.bias[win] - result.bias[second], padM = result.padding.share[win] - result.padding.share[second];
    v.marginBias.name.textContent = "bias";
    setCell(v.marginBias.cell, biasM, scaleM, 4);
    for (var k = 0; k < 2 * PUSHES; k++) {
      var p = k < PUSHES ? top[k] : against[k - PUSHES];
      var row = v.pushRows[k];
      if (!p) { row.tr.hidden = true; continue; }
      row.tr.hidden = false;
      row.name.textContent = (k < PUSHES ? (p.m >= 0 ? "for: " : "least against: ") : (p.m < 0 ? "against: " : "least for: ")) + tokenName(p.tok);
      setCell(row.cell, p.m, scaleM, 4);
    }
    var tokensM = 0;
    pushes.forEach(function (p) { tokensM += p.m; });
    v.marginTokens.name.textContent = "all " + result.tokens.length + " real tokens together";
    setCell(v.marginTokens.cell, tokensM, scaleM, 4);
    v.marginPad.name.textContent = "[PAD] × " + result.padding.count;
    v.marginPad.tr.hidden = !result.padding.count;
    setCell(v.marginPad.cell, padM, scaleM, 4);
    v.marginTotal.name.textContent = "= margin";
    setCell(v.marginTotal.cell, result.logits[win] - result.logits[second], scaleM, 4);

    if (v.full.open) renderFull(v, result);
    if (!v.scrollsMarked) { v.scrollsMarked = true; markScrollables(out); }
  }

  /* What the editor's live region announces: one line, not the tables. */
  function oneLine(result, reference) {
    var line = "Claim alone: " + result.verdict;
    if (reference.label) line += result.verdict === reference.label ? ", right" : ", wrong (label " + reference.label + ")";
    if (reference.alone && result.verdict !== reference.alone.verdict) line += "; changed from " + reference.alone.verdict;
    return line + "; " + result.real + " real tokens, " + result.pads + " [PAD].";
  }

  function initEditor() {
    var input = document.getElementById("model-input");
    var out = document.getElementById("editor-out");
    var status = document.getElementById("editor-status");
    var summary = document.getElementById("editor-summary");
    var data = document.getElementById("trace-data");
    if (!input || !out || !data) return;
    var reference = JSON.parse(data.textContent);
    var original = input.value;
    var ready = false;

    function update() {
      if (!ready) return null;
      var t0 = performance.now();
      var result = compute(TABLE, input.value);
      render(out, result, reference);
      if (summary) summary.textContent = oneLine(result, reference);
      void out.offsetHeight; // include layout in the measured time
      var ms = performance.now() - t0;
      status.textContent = "recomputed in your browser in " + ms.toFixed(1) + " ms";
      result.ms = ms;
      return result;
    }

    window.claimtrace = window.claimtrace || {};
    window.claimtrace.recompute = function (text) {
      if (typeof text === "string") input.value = text;
      var r = update();
      return r && { verdict: r.verdict, logits: r.logits, real: r.real, pads: r.pads, unknown: r.unknown, ms: r.ms };
    };
    window.claimtrace.ready = function () { return ready; };
    /* the arithmetic alone, without touching the page (for benchmarks) */
    window.claimtrace.compute = function (text) { var r = compute(TABLE, text); return { verdict: r.verdict, logits: r.logits }; };

    input.addEventListener("input", update);
    document.getElementById("reset-input").addEventListener("click", function () { input.value = original; update(); });

    var wanted = new URLSearchParams(window.location.search).get("claim");
    var preload = Promise.resolve();
    if (body.getAttribute("data-mode") === "static" && wanted && wanted !== reference.claim_id && /^claim-\d+$/.test(wanted)) {
      /* the static site writes the editor data of claim-<n> into live/<floor(n / 100)>.js */
      var bucket = Math.floor(parseInt(wanted.slice(6), 10) / 100);
      preload = loadScript(root + "live/" + bucket + ".js").then(function () {
        var data = (window.claimtraceLive || {})[wanted];
        if (!data) throw new Error("no such claim");
        reference = data;
        input.value = original = data.text;
        status.textContent = "loaded " + wanted;
        showStaticClaim(data);
      }).catch(function () {
        status.textContent = wanted + " is not in this export; showing " + reference.claim_id;
      });
    }
    preload.then(loadTable).then(function () {
      ready = true;
      body.setAttribute("data-editor", "ready");
      update();
    }).catch(function (err) {
      status.textContent = "The table could not be loaded: " + err.message + ".";
      body.setAttribute("data-editor", "failed");
    });
  }

  /* A static claim page's verdict charts: drawn here, with the editor's code, from the shared table. */
  function initStaticCharts() {
    var out = document.getElementById("static-charts-out");
    var holder = out && out.closest("[data-claim]");
    var status = document.getElementById("static-charts-status");
    if (!out || !holder || document.getElementById("model-input")) return;
    /* the claim's editor data: live/<n>.js, loaded by the page before this script */
    var reference = (window.claimtraceLive || {})[holder.getAttribute("data-claim")];
    if (!reference) {
      status.textContent = "The charts could not be drawn: this claim's data (live/ folder) is missing.";
      body.setAttribute("data-charts", "failed");
      return;
    }
    loadTable().then(function () {
      var result = compute(TABLE, reference.text);
      var input = document.getElementById("static-model-input");
      if (input) writeModelInput(input, result);
      render(out, result, reference, false);
      VIEW.full.open = true; // every token's share, open as on the server's pages
      status.hidden = true;
      body.setAttribute("data-charts", "ready");
    }).catch(function (err) {
      status.textContent = "The charts could not be drawn: " + err.message + ".";
      body.setAttribute("data-charts", "failed");
    });
  }

  /* Section 6 of a static claim page: the model input's tokens, as the server's pages write them
     (templates/_trace.html, stage_input). */
  function writeModelInput(p, result) {
    result.tokens.forEach(function (tok) {
      var special = tok.id === TABLE.cls || tok.id === TABLE.sep;
      var span = el("span", { cls: "tok" + (special ? " special" : "") + (tok.unknown ? " unk" : "") });
      if (tok.unknown) {
        span.setAttribute("title", tok.word + " is not in the vocabulary");
        span.appendChild(document.createTextNode("<unk> "));
        span.appendChild(el("s", { text: tok.word }));
      } else {
        span.textContent = tok.token;
      }
      p.appendChild(span);
      p.appendChild(document.createTextNode(" "));
    });
    if (result.pads) p.appendChild(el("span", { cls: "tok special pad", text: "[PAD] × " + result.pads }));
  }

  /* The static live page holds one claim's whole trace; for another claim, point at its page. */
  function showStaticClaim(data) {
    var trace = document.getElementById("live-trace");
    var other = document.getElementById("live-other-claim");
    var claimText = document.getElementById("claim-text");
    if (trace) trace.hidden = true;
    if (claimText && data.claim_text) claimText.value = data.claim_text;
    document.querySelectorAll("[data-live-claim]").forEach(function (node) { node.textContent = data.claim_id; });
    if (other) {
      other.hidden = false;
      var link = other.querySelector("a");
      if (link) { link.href = root + "claim/" + data.claim_id + ".html"; link.textContent = data.claim_id + "’s walkthrough"; }
    }
  }

  /* ---------------------------------------------------------------- the claim form */

  /* The form is a GET, so the address bar is the share link and a reload traces again; a text
     too long for an address (the server takes 16 KB of headers) goes as a POST instead. While
     the box holds another text than the one traced, the results below are marked stale. */
  var MAX_ADDRESS = 8000;

  function initForm() {
    var form = document.querySelector(".claim-form");
    if (!form) return;
    var box = document.getElementById("claim-text");
    var note = document.getElementById("stale-note");
    var results = [document.getElementById("editor"), document.getElementById("live-trace")];
    form.addEventListener("submit", function () {
      if (box && encodeURIComponent(box.value).length > MAX_ADDRESS) form.method = "post";
      var button = form.querySelector("button");
      if (button) { button.disabled = true; button.textContent = "Tracing…"; }
    });
    if (!box || !note || box.disabled) return;
    function markStale() {
      var stale = box.value.trim() !== (box.getAttribute("data-traced") || "").trim();
      note.hidden = !stale;
      results.forEach(function (section) {
        if (!section) return;
        if (stale) section.setAttribute("data-stale", "true"); else section.removeAttribute("data-stale");
        if ("inert" in section) section.inert = stale;
      });
    }
    box.addEventListener("input", markStale);
    markStale();
  }

  /* ---------------------------------------------------------------- forms that filter in place */

  /* Enter in a filter box must not send the form (the page would reload). Here, not in an
     onsubmit attribute: the server's Content-Security-Policy allows no inline script. */
  function initInPlaceForms() {
    Array.prototype.forEach.call(document.querySelectorAll("form.filters"), function (form) {
      form.addEventListener("submit", function (event) { event.preventDefault(); });
    });
  }


  /* ---------------------------------------------------------------- your system beside the notebook's */

  /* A static claim page holds one "your system" box per exported run, hidden: ?run=<digest>
     shows that run's (the server renders only the chosen one). */
  function initRunBox() {
    var match = /[?&]run=([^&#]+)/.exec(window.location.search);
    if (!match) return;
    var key = decodeURIComponent(match[1]);
    Array.prototype.forEach.call(document.querySelectorAll(".run-box[hidden]"), function (box) {
      if (box.getAttribute("data-run") === key) box.hidden = false;
    });
  }

  /* The claim-by-claim table of a run: show the rows one choice of the filter keeps. */
  function initRunFilter() {
    var select = document.getElementById("run-filter");
    if (!select) return;
    var rows = document.querySelectorAll("table.run-claims tbody tr");
    var count = document.querySelector(".run-filter .filter-count");
    var keeps = {
      "all": function () { return true; },
      "run-right-notebook-wrong": function (r) { return r.dataset.runRight === "true" && r.dataset.notebookRight === "false"; },
      "notebook-right-run-wrong": function (r) { return r.dataset.runRight === "false" && r.dataset.notebookRight === "true"; },
      "both-wrong": function (r) { return r.dataset.runRight === "false" && r.dataset.notebookRight === "false"; },
      "differ": function (r) { return r.dataset.differ === "true"; }
    };
    function apply() {
      var keep = keeps[select.value] || keeps.all, shown = 0;
      Array.prototype.forEach.call(rows, function (row) {
        var on = keep(row);
        row.hidden = !on;
        if (on) shown += 1;
      });
      if (count) count.textContent = shown + (shown === 1 ? " claim" : " claims");
    }
    var wanted = /[?&]show=([^&#]+)/.exec(window.location.search);
    if (wanted && keeps[wanted[1]]) select.value = wanted[1];
    select.addEventListener("change", apply);
    apply();
  }

  /* Upload a predictions file: its bytes go to /api/compare, and its page opens. */
  function initRunUpload() {
    var form = document.querySelector("form.run-upload");
    if (!form) return;
    var status = document.querySelector(".upload-status");
    form.addEventListener("submit", function (event) {
      event.preventDefault();
      var file = form.querySelector("input[type=file]").files[0];
      if (!file) return;
      var name = form.querySelector("input[name=name]").value.trim();
      var url = form.getAttribute("action") + (name ? "?name=" + encodeURIComponent(name) : "");
      status.textContent = "Checking " + file.name + "…";
      fetch(url, { method: "POST", body: file, headers: { "Content-Type": "application/json" } })
        .then(function (response) { return response.json().then(function (body) { return [response.ok, body]; }); })
        .then(function (result) {
          if (!result[0]) { status.textContent = file.name + ": " + result[1].error; return; }
          window.location.href = document.body.dataset.root + result[1].url;
        })
        .catch(function () { status.textContent = "The server did not answer."; });
    });
  }

  /* Tables whose heads sort them (class "sortable", th[data-sort]: "num" or "str"): by a cell's
     data-v, else its text; a second click reverses. The scoreboard is one. */
  function initSortable() {
    Array.prototype.forEach.call(document.querySelectorAll("table.sortable"), function (table) {
      var heads = Array.prototype.slice.call(table.tHead.rows[0].cells);
      var body = table.tBodies[0];
      var original = Array.prototype.slice.call(body.rows);
      heads.forEach(function (th, column) {
        var type = th.getAttribute("data-sort");
        if (!type) return;
        th.tabIndex = 0;
        function go() {
          var dir = th.getAttribute("aria-sort") === "ascending" ? -1 : 1;
          var keyed = original.map(function (row, i) {
            var cell = row.cells[column];
            var v = cell.hasAttribute("data-v") ? cell.getAttribute("data-v") : cell.textContent.trim();
            return [type === "num" ? parseFloat(v) : v, i, row];
          });
          keyed.sort(function (a, b) { return a[0] < b[0] ? -dir : a[0] > b[0] ? dir : a[1] - b[1]; });
          keyed.forEach(function (k) { body.appendChild(k[2]); });
          heads.forEach(function (other) { other.removeAttribute("aria-sort"); });
          th.setAttribute("aria-sort", dir > 0 ? "ascending" : "descending");
        }
        th.addEventListener("click", go);
        th.addEventListener("keydown", function (e) { if (e.key === "Enter" || e.key === " ") { e.preventDefault(); go(); } });
      });
    });
  }

  /* A table wider than the screen scrolls inside its box (style.css): such a box is made
     reachable from the keyboard and shows a shadow at the edge it scrolls to. */
  function markScrollables(scope) {
    var boxes = (scope || document).querySelectorAll("table, .scroll");
    Array.prototype.forEach.call(boxes, function (box) {
      if (box.classList.contains("scroll") && box.querySelector("table.scrolls")) return;
      var scrolls = box.scrollWidth > box.clientWidth + 1 && getComputedStyle(box).overflowX !== "visible";
      box.classList.toggle("scrolls", scrolls);
      if (scrolls) {
        box.setAttribute("tabindex", "0");
        if (!box.hasAttribute("aria-label")) box.setAttribute("aria-label", "a table that scrolls sideways");
      } else if (box.getAttribute("aria-label") === "a table that scrolls sideways") {
        box.removeAttribute("tabindex");
        box.removeAttribute("aria-label");
      }
    });
  }

  var resizing = null;
  window.addEventListener("resize", function () {
    clearTimeout(resizing);
    resizing = setTimeout(function () { markScrollables(); }, 150);
  });

  expandShared();
  initExplore();
  initSortable();
  initEditor();
  initStaticCharts();
  initForm();
  initInPlaceForms();
  initRunBox();
  initRunFilter();
  initRunUpload();
  markScrollables();
})();
