/* claimtrace's LLM pages (app-core.js lists the parts): the evaluation page (a run, its results,
   export and import) and a claim page's second opinion, with the decision on a model's answer
   the audit log page (app-llm-log.js) offers too. The provider settings' dialog is
   app-llm-settings.js's. Every text goes into the page through textContent. */
(function (claimtrace) {
  "use strict";

  var llm = claimtrace.llm;
  var el = claimtrace.el;

  function num(x, digits) { return x == null || isNaN(x) ? "—" : x.toFixed(digits == null ? 3 : digits); }
  function interval(i) { return num(i.estimate) + " [" + num(i.lower) + ", " + num(i.upper) + "]"; }
  function share(i) { return i.successes + "/" + i.n + " = " + interval(i); }

  function pageData(id) {
    var script = document.getElementById(id);
    return script ? JSON.parse(script.textContent) : null;
  }

  /* ---------------------------------------------------------------- the provider, on the evaluation page */

  /* What the page says of the provider follows the settings, whichever button opened the dialog. */
  function startSettings(onChange) {
    var status = document.getElementById("llm-provider-status");
    var open = document.getElementById("llm-open-settings");
    if (!open) return;
    function show() { if (status) status.textContent = claimtrace.llmSettings.describe(llm.settings()); onChange(); }
    open.addEventListener("click", function () { claimtrace.llmSettings.open(open); });
    document.addEventListener(claimtrace.llmSettings.CHANGED, show);
    var forget = document.getElementById("llm-forget");
    if (forget) forget.addEventListener("click", claimtrace.llmSettings.forget);
    show();
  }

  /* ---------------------------------------------------------------- one claim asked */

  /* Ask the model about one claim: the call kept in the audit log (scrubbed of the key); resolves
     to {entry (the run file's), failed (an error) , audit (the log's record)}. */
  llm.ask = function (data, settings, claim, condition, where) {
    var prompt = llm.prompt(data.protocol, claim, llm.shown(data, claim, condition));
    return llm.call(settings, data.protocol, prompt).then(function (answer) {
      var parsed = answer.status === "answered" ? llm.parseAnswer(answer.text, data.protocol.labels) : null;
      var audit = llm.record({
        id: Date.now().toString(36) + Math.random().toString(36).slice(2, 8), time: new Date().toISOString(),
        where: where, claim_id: claim.id, condition: condition, provider: settings.provider,
        base_url: llm.baseUrl(settings, data.protocol), model: settings.model, prompt_version: data.protocol.prompt_version,
        system: prompt.system, user: prompt.user, output: answer.text == null ? null : answer.text,
        status: parsed ? parsed.status : "failed", label: parsed ? parsed.label : null, cited_ids: parsed ? parsed.cited_ids : [],
        rationale: parsed ? parsed.rationale : null,
        error: parsed ? parsed.error : answer.error, latency_ms: answer.latency_ms == null ? null : answer.latency_ms,
        tokens_in: answer.tokens_in == null ? null : answer.tokens_in, tokens_out: answer.tokens_out == null ? null : answer.tokens_out,
        attempts: answer.attempts, decision: null
      }, settings.key);
      if (!parsed) return { failed: answer.error, audit: audit };
      return { entry: llm.entry(claim, parsed, answer), audit: audit };
    });
  };

  /* ---------------------------------------------------------------- the evaluation page */

  function row(cells, header) {
    return el("tr", null, cells.map(function (cell, i) {
      return el(i === 0 && header ? "th" : "td", i === 0 && header ? { scope: "row", cls: "l" } : null, [cell]);
    }));
  }

  function resultsTable(caption, head, rows, cls) {
    var table = el("table", { cls: cls || "num llm-table" }, [el("caption", { text: caption }),
      el("thead", null, [el("tr", null, head.map(function (h, i) { return el("th", { scope: "col", cls: i ? "" : "l", text: h }); }))]),
      el("tbody", null, rows.map(function (cells) { return row(cells, true); }))]);
    return el("div", { cls: "scroll", role: "region", "aria-label": caption, tabindex: "0" }, [table]);
  }

  function drawResults(data, run) {
    var s = llm.score(run, data), h = s.header, box = document.getElementById("llm-results");
    box.textContent = "";
    var width = "±" + num(s.half_width, 2);
    box.appendChild(el("p", { cls: "llm-summary", text:
      h.model + " (" + h.provider + ", prompt " + h.prompt_version + ") on " + s.n + " " + h.split + " claims" +
      (h.sample.stratified ? " (stratified" : " (") + ", seed " + h.sample.seed + "), " + h.condition + " passages: " +
      s.unusable + " unusable (scored as wrong), " + s.failed + " failed (left out)." }));
    box.appendChild(el("p", { cls: "llm-width", text: "How wide: at " + s.n + " claims a 95% interval on an accuracy near one half reaches about " +
      width + " either side (" + data.protocol.width_at_half + "/√" + s.n + "); read every figure below with its interval." }));
    box.appendChild(resultsTable("accuracy and macro-F1 on the same " + s.n + " claims, with 95% intervals (" + width + " at this N)",
      ["system", "accuracy (Wilson)", "macro-F1 (bootstrap)", "evidence F (bootstrap)"], [
        [h.model, share(s.accuracy), interval(s.macro_f1), interval(s.evidence_f)],
        ["the notebook’s classifier", share(s.notebook_accuracy), interval(s.notebook_macro_f1), interval(s.notebook_evidence_f)],
        ["always SUPPORTS", share(s.supports_accuracy), "—", "—"]
      ]));
    var pr = s.paired;
    box.appendChild(el("p", { cls: "llm-paired", text: "Paired on the same claims: " + h.model + " minus the notebook’s classifier, accuracy " +
      claimtrace.signed(pr.difference, 3) + "; right where the classifier was wrong on " + pr.b + ", wrong where it was right on " + pr.c +
      "; McNemar’s exact p = " + num(pr.p, 4) + ": " + pr.verdict + "; Cohen’s h = " + num(pr.h, 2) + " (interval width at this N: " + width + ")." }));
    box.appendChild(el("p", { cls: "llm-citations", text: "Citations: " + s.citations.valid + " of " + s.citations.cited +
      " cited ids were among the passages shown, " + (s.citations.cited ? interval(s.citations) : "none cited") +
      ". Latency median " + num(s.latency.median, 0) + " ms, 90th percentile " + num(s.latency.p90, 0) + " ms over " + s.latency.calls +
      " calls; tokens " + s.tokens.input + " in, " + s.tokens.output + " out; estimated cost " +
      (s.cost.usd === "unknown" ? "unknown (no price for this model id)" : "$" + s.cost.usd.toFixed(4)) +
      " (prices of " + s.cost.prices_date + ")." }));
    var linkRoot = claimtrace.root;
    box.appendChild(resultsTable("each claim: the gold label, the notebook’s and the model’s", ["claim", "gold", "notebook", "model", "cited (not shown)"],
      s.rows.map(function (r) {
        return [el("a", { href: linkRoot + "claim/" + r.id + ".html", text: r.id }), r.label, r.notebook,
                r.status === "ok" ? r.llm : "unusable", r.cited.join(" ") + (r.invalid.length ? " (" + r.invalid.join(" ") + ")" : "")];
      }), "llm-claims"));
    document.getElementById("results").hidden = false;
    claimtrace.markScrollables(box);
  }

  function download(name, text, type) {
    var link = el("a", { href: URL.createObjectURL(new Blob([text], { type: type || "application/json" })), download: name });
    document.body.appendChild(link);
    link.click();
    link.remove();
  }

  function startEvaluation() {
    var data = pageData("llm-data");
    if (!data || !document.getElementById("llm-run-form")) return;
    data.passages = pageData("llm-passages");
    var state = (claimtrace.state.llm = { run: null, stop: false, data: data });
    var form = document.getElementById("llm-run-form"), progress = document.getElementById("llm-progress");
    var start = document.getElementById("llm-start"), stop = document.getElementById("llm-stop");
    var exportButton = document.getElementById("llm-export"), imported = document.getElementById("llm-import-status");
    startSettings(function () { start.disabled = !llm.settings(); });
    stop.addEventListener("click", function () { state.stop = true; });
    form.addEventListener("submit", function (event) {
      event.preventDefault();
      var settings = llm.settings();
      if (!settings) { progress.textContent = "Set a provider first."; return; }
      var n = parseInt(form.elements.n.value, 10), seed = parseInt(form.elements.seed.value, 10);
      var stratified = form.elements.stratified.checked, condition = form.elements.condition.value;
      var byId = {};
      data.claims.forEach(function (claim) { byId[claim.id] = claim; });
      state.stop = false;
      start.disabled = true;
      progress.textContent = "Drawing the sample…";
      stop.disabled = false;
      llm.sample(data.claims, n, seed, stratified, data.protocol.stratify_order).then(function (ids) {
        var run = {};
        run[data.protocol.run_key] = llm.header(data, settings, { n: n, seed: seed, stratified: stratified, claim_ids: ids }, condition);
        var entries = {}, failed = run[data.protocol.run_key].failed;
        var next = function (i) {
          if (i >= ids.length || state.stop) return Promise.resolve();
          progress.textContent = "Asking " + (i + 1) + " of " + ids.length + ": " + ids[i] + "…";
          return llm.ask(data, settings, byId[ids[i]], condition, "evaluation").then(function (got) {
            if (got.entry) entries[ids[i]] = got.entry; else failed[ids[i]] = got.failed;
            return next(i + 1);
          });
        };
        return next(0).then(function () {
          ids.forEach(function (id) { if (entries[id]) run[id] = entries[id]; }); // the sample's order
          run[data.protocol.run_key].finished = new Date().toISOString();
          state.run = run;
          progress.textContent = (state.stop ? "Stopped: " : "Done: ") + Object.keys(entries).length + " scored, " + Object.keys(failed).length + " failed.";
          exportButton.disabled = false;
          drawResults(data, run);
        });
      }).catch(function (err) { progress.textContent = "The run stopped: " + err.message; })
        .then(function () { start.disabled = !llm.settings(); stop.disabled = true; });
    });
    exportButton.addEventListener("click", function () {
      if (!state.run) return;
      var h = state.run[data.protocol.run_key];
      download("llm-run-" + h.model.replace(/[^\w.-]+/g, "_") + "-" + h.condition + "-" + h.sample.n + ".json", JSON.stringify(state.run, null, 1));
    });
    document.getElementById("llm-import").addEventListener("change", function (event) {
      var file = event.target.files[0];
      if (!file) return;
      event.target.value = ""; // the same file chosen again is read again
      file.text().then(function (text) { return llm.verify(JSON.parse(text), data); }).then(function (checked) {
        state.run = checked.run;
        exportButton.disabled = false;
        imported.textContent = file.name + ": " + (checked.problems.length ? "does not match what it claims: " + checked.problems.join("; ") + "."
          : "verified: its sample is its seed’s and every answer reads as it says.");
        imported.setAttribute("data-verified", checked.problems.length ? "false" : "true");
        imported.setAttribute("data-file", file.name);
        drawResults(data, checked.run);
      }).catch(function (err) {
        imported.textContent = file.name + ": cannot be read as a run: " + err.message;
        imported.setAttribute("data-verified", "false");
      });
    });
  }

  /* ---------------------------------------------------------------- a claim page's second opinion */

  /* Accept, edit (another label) or reject a model's answer: the decision kept with its call.
     prefix names the controls (prefix-accept...); after(decision) is told of each decision. */
  function decisionButtons(audit, said, labels, status, prefix, after) {
    var box = el("div", { cls: "decision" });
    var choose = el("select", { id: prefix + "-label", "aria-label": "your label" }, labels.map(function (label) {
      var option = el("option", { value: label, text: label });
      if (label === said) option.selected = true;
      return option;
    }));
    function decide(decision, label) {
      llm.decide(audit.id, decision, label);
      status.textContent = "Your decision, " + decision + (label ? " (" + label + ")" : "") + ", is kept with the call in this browser’s audit log.";
      box.setAttribute("data-decision", decision);
      if (after) after(decision);
    }
    var accept = el("button", { type: "button", cls: "llm-button", id: prefix + "-accept", text: "Accept" });
    var edit = el("button", { type: "button", cls: "llm-button", id: prefix + "-edit", text: "Keep my label" });
    var reject = el("button", { type: "button", cls: "llm-button", id: prefix + "-reject", text: "Reject" });
    accept.addEventListener("click", function () { decide("accepted", said); });
    edit.addEventListener("click", function () { decide("edited", choose.value); });
    reject.addEventListener("click", function () { decide("rejected", null); });
    [accept, " or ", choose, edit, " or ", reject].forEach(function (node) {
      box.appendChild(typeof node === "string" ? document.createTextNode(node) : node);
    });
    return box;
  }

  function drawOpinion(box, got, data, settings, condition, status) {
    var claim = data.claim, out = el("div", { cls: "opinion" });
    var notebook = claim.notebook[condition];
    if (got.failed) {
      out.appendChild(el("p", { text: "The call failed: " + got.failed + " (kept in the audit log)." }));
    } else {
      var call = got.entry.llm;
      var said = got.entry.claim_label;
      out.appendChild(el("p", { cls: "generated", text: "Generated by " + settings.model + ": " +
        (said || "an unusable answer (" + call.error + ")") +
        (call.cited_ids.length ? ", citing " + call.cited_ids.join(", ") : "") + "." }));
      if (call.rationale) out.appendChild(el("p", { cls: "rationale", text: "Its reason: " + call.rationale }));
      out.appendChild(el("p", { text: "Beside it, the notebook’s verdict on the same passages (batches of 16): " + (notebook || "—") +
        (claim.label ? "; the gold label: " + claim.label : "") + "." }));
      out.appendChild(decisionButtons(got.audit, said, data.protocol.labels, status, "second-opinion"));
    }
    box.textContent = "";
    box.appendChild(out);
  }

  /* The passages section 5 shows, by id (the retrieved ones in order; the gold ones it missed
     beside them; a passage the build lacks shows no text and is left out): the second opinion
     asks about exactly what the page shows. */
  var NO_TEXT = "(text not in this build)"; // what a passage cell shows without a text (_trace.html)

  function shownPassages() {
    var shown = { texts: {}, retrieved: [] };
    var cells = document.querySelectorAll("#retrieved ol.evidence > li, #missed-gold tr[data-id] > td:first-child");
    Array.prototype.forEach.call(cells, function (cell) {
      var pid = cell.querySelector(".pid"), text = cell.querySelector(".ptext");
      if (!pid || !text || text.textContent === NO_TEXT) return;
      shown.texts[pid.textContent] = text.textContent;
      if (cell.tagName === "LI") shown.retrieved.push(pid.textContent);
    });
    return shown;
  }

  /* An exported claim page's claim, from the editor data it loads for its charts (live/<n>.js). */
  function exportedClaim() {
    var id = document.querySelector(".static-charts").getAttribute("data-claim");
    var live = window.claimtraceLive[id];
    return { id: id, text: live.claim_text, label: live.label, gold: live.opinion[0],
             notebook: { retrieved: live.opinion[1], gold: live.opinion[2] } };
  }

  function startSecondOpinion() {
    var form = document.getElementById("second-opinion-form");
    if (!form) return;
    var shown = shownPassages(), claim = pageData("second-opinion-data") || exportedClaim();
    claim.retrieved = shown.retrieved;
    claim.gold = claim.gold.filter(function (id) { return id in shown.texts; }); // the claim's order
    var data = { claim: claim, passages: shown.texts, protocol: pageData("llm-protocol") };
    if (!data.claim.gold.length) form.querySelector("input[value=gold]").disabled = true;
    var status = document.getElementById("second-opinion-status"), answer = document.getElementById("second-opinion-answer");
    var ask = document.getElementById("second-opinion-ask");
    var settings;
    function show() {
      settings = llm.settings();
      status.textContent = settings ? "Your model: " + settings.model + " (" + settings.provider + ")."
        : "No provider set: set one with “LLM settings” at the top of the page first.";
      ask.disabled = !settings;
    }
    document.addEventListener(claimtrace.llmSettings.CHANGED, show);
    show();
    form.addEventListener("submit", function (event) {
      event.preventDefault();
      settings = llm.settings();
      if (!settings) return;
      var condition = form.elements.condition.value;
      ask.disabled = true;
      status.textContent = "Asking " + settings.model + "…";
      llm.ask(data, settings, data.claim, condition, "claim").then(function (got) {
        status.textContent = got.failed ? "The call failed." : "Answered by " + settings.model + ".";
        drawOpinion(answer, got, data, settings, condition, status);
      }).catch(function (err) { status.textContent = "The call failed: " + err.message; })
        .then(function () { ask.disabled = false; });
    });
  }

  claimtrace.llmPages = { startEvaluation: startEvaluation, startSecondOpinion: startSecondOpinion,
                          drawResults: drawResults, decisionButtons: decisionButtons, download: download };
})(window.claimtrace);
