/* claimtrace's LLM pages (app-core.js lists the parts): one claim asked, and the second opinion
   of a claim page or of the live page's typed claim, with the decision on a model's answer the audit log page (app-llm-log.js)
   offers too. The evaluation page's run, its results, export and import are app-llm-run.js's;
   the provider settings' dialog is app-llm-settings.js's. Every text goes into the page through
   textContent. */
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

  /* Ask the model about one claim (a typed one has no id and names its rule: the record says
     both): the call kept in the audit log (scrubbed of the key); resolves
     to {entry (the run file's), failed (an error), aborted (stopped in flight), audit (the log's
     record)}. ``signal`` (optional) aborts the call. */
  llm.ask = function (data, settings, claim, condition, where, signal) {
    var prompt = llm.prompt(data.protocol, claim, llm.shown(data, claim, condition));
    return llm.call(settings, data.protocol, prompt, signal).then(function (answer) {
      var parsed = answer.status === "answered" ? llm.parseAnswer(answer.text, data.protocol.labels) : null;
      var audit = llm.record({
        id: Date.now().toString(36) + Math.random().toString(36).slice(2, 8), time: new Date().toISOString(),
        where: where, claim_id: claim.id == null ? null : claim.id,
        claim_text: claim.text, rule: claim.rule || null, condition: condition, provider: settings.provider,
        base_url: llm.baseUrl(settings, data.protocol), model: settings.model, prompt_version: data.protocol.prompt_version,
        system: prompt.system, user: prompt.user, output: answer.text == null ? null : answer.text,
        status: parsed ? parsed.status : answer.status, label: parsed ? parsed.label : null, cited_ids: parsed ? parsed.cited_ids : [],
        rationale: parsed ? parsed.rationale : null,
        error: parsed ? parsed.error : answer.error, latency_ms: answer.latency_ms == null ? null : answer.latency_ms,
        tokens_in: answer.tokens_in == null ? null : answer.tokens_in, tokens_out: answer.tokens_out == null ? null : answer.tokens_out,
        attempts: answer.attempts, decision: null
      }, settings.key);
      if (answer.status === "aborted") return { aborted: true, audit: audit };
      if (!parsed) return { failed: answer.error, audit: audit };
      return { entry: llm.entry(claim, parsed, answer), audit: audit };
    });
  };

  /* A text downloaded as a file (a JSON file unless ``type`` says otherwise). */
  function download(name, text, type) {
    var link = el("a", { href: URL.createObjectURL(new Blob([text], { type: type || "application/json" })), download: name });
    document.body.appendChild(link);
    link.click();
    link.remove();
  }

  /* ---------------------------------------------------------------- a second opinion (a claim page, the live page) */

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
      out.appendChild(el("p", { text: claim.typed
        ? "Beside it, the typed claim’s verdict on the same passages (the notebook’s model on the claim alone: a typed claim has no batch): " +
          (notebook || "—") + ". A typed claim has no gold label."
        : "Beside it, the notebook’s verdict on the same passages (batches of 16): " + (notebook || "—") +
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
    var gold = form.querySelector("input[value=gold]"); // a typed claim's box has none
    if (gold && !data.claim.gold.length) gold.disabled = true;
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
      llm.ask(data, settings, data.claim, condition, claim.typed ? "typed claim" : "claim").then(function (got) {
        status.textContent = got.failed ? "The call failed." : "Answered by " + settings.model + ".";
        drawOpinion(answer, got, data, settings, condition, status);
      }).catch(function (err) { status.textContent = "The call failed: " + err.message; })
        .then(function () { ask.disabled = false; });
    });
  }

  /* startEvaluation is app-llm-run.js's (loaded after this file); the rest it and app-llm-log.js share. */
  claimtrace.llmPages = { startSecondOpinion: startSecondOpinion, startSettings: startSettings, decisionButtons: decisionButtons,
                          download: download, pageData: pageData, num: num, interval: interval, share: share };
})(window.claimtrace);
