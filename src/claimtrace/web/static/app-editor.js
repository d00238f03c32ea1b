/* claimtrace's live editor (app-core.js lists the parts): the model input of a claim, edited in
   the page and its verdict recomputed from the table on every keystroke, with no server call;
   and a static claim page's verdict charts and model input, drawn with the same code. */
(function (claimtrace) {
  "use strict";

  var el = claimtrace.el;

  /* What the editor's live region announces: one line, not the tables. */
  function oneLine(result, reference) {
    var line = "Claim alone: " + result.verdict;
    if (reference.label) line += result.verdict === reference.label ? ", right" : ", wrong (label " + reference.label + ")";
    if (reference.alone && result.verdict !== reference.alone.verdict) line += "; changed from " + reference.alone.verdict;
    return line + "; " + result.real + " real tokens, " + result.pads + " [PAD].";
  }

  /* The verdict of the box's text, drawn and announced, with the time it took. */
  function update(editor) {
    if (!editor.ready) return null;
    var t0 = performance.now();
    var result = claimtrace.table.computeText(claimtrace.state.table, editor.input.value);
    claimtrace.charts.draw(editor.out, result, editor.reference);
    if (editor.summary) editor.summary.textContent = oneLine(result, editor.reference);
    void editor.out.offsetHeight; // include layout in the measured time
    var ms = performance.now() - t0;
    editor.status.textContent = "recomputed in your browser in " + ms.toFixed(1) + " ms";
    result.ms = ms;
    return result;
  }

  /* What tests and benchmarks call in the page. */
  function addHooks(editor) {
    claimtrace.recompute = function (text) {
      if (typeof text === "string") editor.input.value = text;
      var r = update(editor);
      return r && { verdict: r.verdict, logits: r.logits, real: r.real, pads: r.pads, unknown: r.unknown, ms: r.ms };
    };
    claimtrace.ready = function () { return editor.ready; };
    /* the arithmetic alone, without touching the page */
    claimtrace.compute = function (text) {
      var r = claimtrace.table.computeText(claimtrace.state.table, text);
      return { verdict: r.verdict, logits: r.logits };
    };
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
      if (link) { link.href = claimtrace.root + "claim/" + data.claim_id + ".html"; link.textContent = data.claim_id + "’s walkthrough"; }
    }
  }

  /* The static live page edits the claim its address names (?claim=claim-<n>), if another than
     its own: the static site writes the editor data of claim-<n> into live/<floor(n / 100)>.js. */
  function loadAskedClaim(editor) {
    var wanted = new URLSearchParams(window.location.search).get("claim");
    var reference = editor.reference;
    if (claimtrace.body.getAttribute("data-mode") !== "static" || !wanted || wanted === reference.claim_id || !/^claim-\d+$/.test(wanted)) {
      return Promise.resolve();
    }
    var bucket = Math.floor(parseInt(wanted.slice(6), 10) / 100);
    return claimtrace.loadScript(claimtrace.root + "live/" + bucket + ".js").then(function () {
      var data = (window.claimtraceLive || {})[wanted];
      if (!data) throw new Error("no such claim");
      editor.reference = data;
      editor.input.value = editor.original = data.text;
      editor.status.textContent = "loaded " + wanted;
      showStaticClaim(data);
    }).catch(function () {
      editor.status.textContent = wanted + " is not in this export; showing " + reference.claim_id;
    });
  }

  function start() {
    var input = document.getElementById("model-input");
    var out = document.getElementById("editor-out");
    var data = document.getElementById("trace-data");
    if (!input || !out || !data) return;
    var editor = claimtrace.state.editor = {
      input: input, out: out, ready: false,
      status: document.getElementById("editor-status"),
      summary: document.getElementById("editor-summary"),
      reference: JSON.parse(data.textContent), // the claim being edited: its label, its unedited verdict
      original: input.value // what Reset puts back
    };
    addHooks(editor);
    input.addEventListener("input", function () { update(editor); });
    document.getElementById("reset-input").addEventListener("click", function () { input.value = editor.original; update(editor); });
    loadAskedClaim(editor).then(claimtrace.table.load).then(function () {
      editor.ready = true;
      claimtrace.body.setAttribute("data-editor", "ready");
      update(editor);
    }).catch(function (err) {
      editor.status.textContent = "The table could not be loaded: " + err.message + ".";
      claimtrace.body.setAttribute("data-editor", "failed");
    });
  }

  /* ---------------------------------------------------------------- a static claim page */

  /* Section 6 of a static claim page: the model input's tokens, as the server's pages write them
     (templates/_trace.html, stage_input). */
  function writeModelInput(p, result) {
    var table = claimtrace.state.table;
    result.tokens.forEach(function (tok) {
      var special = tok.id === table.cls || tok.id === table.sep;
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

  /* A static claim page's verdict charts: drawn here, with the editor's code, from the shared table. */
  function startStaticCharts() {
    var out = document.getElementById("static-charts-out");
    var holder = out && out.closest("[data-claim]");
    var status = document.getElementById("static-charts-status");
    if (!out || !holder || document.getElementById("model-input")) return;
    /* the claim's editor data: live/<n>.js, loaded by the page before the scripts */
    var reference = (window.claimtraceLive || {})[holder.getAttribute("data-claim")];
    if (!reference) {
      status.textContent = "The charts could not be drawn: this claim's data (live/ folder) is missing.";
      claimtrace.body.setAttribute("data-charts", "failed");
      return;
    }
    claimtrace.table.load().then(function (table) {
      var result = claimtrace.table.computeText(table, reference.text);
      var input = document.getElementById("static-model-input");
      if (input) writeModelInput(input, result);
      claimtrace.charts.draw(out, result, reference, false);
      claimtrace.state.charts.full.open = true; // every token's share, open as on the server's pages
      status.hidden = true;
      claimtrace.body.setAttribute("data-charts", "ready");
    }).catch(function (err) {
      status.textContent = "The charts could not be drawn: " + err.message + ".";
      claimtrace.body.setAttribute("data-charts", "failed");
    });
  }

  claimtrace.editor = { start: start, startStaticCharts: startStaticCharts };
})(window.claimtrace);
