/* claimtrace's LLM evaluation page, its run (app-core.js lists the parts): what a run will ask and
   about what it may cost, shown before it starts; its calls made a few at a time, kept in the
   sample's order whatever order they end in; the stop that aborts the calls in flight; one
   condition or both, paired; the results, the export (JSON, CSV) and the import. Every text goes
   into the page through textContent. */
(function (claimtrace) {
  "use strict";

  var llm = claimtrace.llm;
  var el = claimtrace.el;
  var pages = claimtrace.llmPages;
  var num = pages.num, interval = pages.interval, share = pages.share;

  /* About four characters a token: a rough rule for English text, said so beside the estimate
     (each provider counts its own tokens). */
  var CHARS_PER_TOKEN = 4;
  var PASSAGES = { retrieved: "retrieved passages", gold: "gold passages" };

  function byIdOf(data) {
    var byId = {};
    data.claims.forEach(function (claim) { byId[claim.id] = claim; });
    return byId;
  }

  function grouped(n) { return n.toLocaleString("en-US"); }

  /* ---------------------------------------------------------------- the choices and the estimate */

  /* The run form's choices: the sample, the conditions (both: each claim asked under each), the
     calls at a time (kept within the page's bounds) and the visitor's prices. */
  function choices(form, data) {
    var condition = form.elements.condition.value, limits = data.defaults;
    var concurrency = parseInt(form.elements.concurrency.value, 10);
    return {
      n: parseInt(form.elements.n.value, 10), seed: parseInt(form.elements.seed.value, 10),
      stratified: form.elements.stratified.checked,
      conditions: condition === "both" ? data.protocol.conditions.slice() : [condition],
      concurrency: isNaN(concurrency) ? limits.concurrency : Math.min(limits.concurrency_max, Math.max(1, concurrency)),
      prices: { "in": parseFloat(form.elements.price_in.value), out: parseFloat(form.elements.price_out.value) }
    };
  }

  function codePoints(text) { return text.length - (text.match(/[\uD800-\uDBFF][\uDC00-\uDFFF]/g) || []).length; }

  /* What a run of these claims under these conditions sends: its calls, the characters of their
     prompts (system and user, in code points), the input tokens they make at CHARS_PER_TOKEN, and
     the most output tokens the protocol lets them answer with. */
  llm.estimate = function (data, ids, conditions) {
    var byId = byIdOf(data), chars = 0;
    ids.forEach(function (id) {
      conditions.forEach(function (condition) {
        var prompt = llm.prompt(data.protocol, byId[id], llm.shown(data, byId[id], condition));
        chars += codePoints(prompt.system) + codePoints(prompt.user);
      });
    });
    var calls = ids.length * conditions.length;
    return { calls: calls, claims: ids.length, conditions: conditions.length, chars: chars,
             tokens_in: Math.ceil(chars / CHARS_PER_TOKEN), tokens_out: calls * data.protocol.max_tokens };
  };

  /* Dollars per million tokens: the visitor's (both given), else the price table's for the model
     id, else none. */
  function pricing(prices, data, settings) {
    if (prices["in"] >= 0 && prices.out >= 0) return { "in": prices["in"], out: prices.out, source: "your prices" };
    var row = settings ? llm.stats.price(data.protocol, settings.model) : null;
    return row ? { "in": row["in"], out: row.out, source: "the price table’s for " + row.prefix + " (" + data.protocol.prices_date + ")" } : null;
  }

  function estimateText(e, chosen, price) {
    var calls = grouped(e.calls) + " calls (" + e.claims + " claims × " + e.conditions + (e.conditions > 1 ? " conditions" : " condition") +
      "), " + chosen.concurrency + " at a time. ";
    var tokens = "Input about " + grouped(e.tokens_in) + " tokens (the prompts’ " + grouped(e.chars) + " characters ÷ " + CHARS_PER_TOKEN +
      ": an estimate, the provider counts its own); output at most " + grouped(e.tokens_out) + " tokens (" + (e.calls ? e.tokens_out / e.calls : 0) + " a call). ";
    if (!price) return calls + tokens + "Cost: no price set (give the prices per million tokens above).";
    var usd = (e.tokens_in * price["in"] + e.tokens_out * price.out) / 1e6;
    return calls + tokens + "Cost: at most about $" + usd.toFixed(4) + " at " + price.source + " ($" + price["in"] + " in, $" + price.out +
      " out per million tokens).";
  }

  /* The estimate of the form's run, drawn again whenever a choice changes (the newest wins). */
  function showEstimate(state, form, box) {
    var data = state.data, chosen = choices(form, data), ticket = (state.estimates += 1);
    if (isNaN(chosen.n) || chosen.n < 1 || isNaN(chosen.seed)) {
      box.textContent = "Give N and the seed to see what a run would ask.";
      box.removeAttribute("data-calls");
      return;
    }
    llm.sample(data.claims, chosen.n, chosen.seed, chosen.stratified, data.protocol.stratify_order).then(function (ids) {
      if (ticket !== state.estimates) return; // a newer choice was made meanwhile
      var e = llm.estimate(data, ids, chosen.conditions);
      box.textContent = estimateText(e, chosen, pricing(chosen.prices, data, llm.settings()));
      box.setAttribute("data-calls", e.calls);
      box.setAttribute("data-chars", e.chars);
      box.setAttribute("data-tokens-in", e.tokens_in);
    });
  }

  /* ---------------------------------------------------------------- the calls */

  /* The tasks, claim by claim in the sample's order, each claim under each condition. */
  function tasksOf(ids, conditions) {
    var tasks = [];
    ids.forEach(function (id) { conditions.forEach(function (condition) { tasks.push({ id: id, condition: condition }); }); });
    return tasks;
  }

  /* ``concurrency`` workers, each taking the next task when its call ends; none is taken once
     ``signal`` has fired. Resolves when every worker has stopped. */
  function pool(tasks, concurrency, signal, ask, ended) {
    var next = 0;
    function worker() {
      if (signal.aborted || next >= tasks.length) return Promise.resolve();
      var task = tasks[next];
      next += 1;
      return ask(task).then(function (got) { ended(task, got); }, function (err) {
        ended(task, { failed: "the page could not make the call: " + (err && err.message || err) });
      }).then(worker);
    }
    var workers = [];
    for (var w = 0; w < Math.min(concurrency, tasks.length); w++) workers.push(worker());
    return Promise.all(workers);
  }

  function progressText(tally, total, chosen, stopping) {
    var counts = tally.scored + " scored, " + tally.failed + " failed";
    if (stopping) return "Stopping: aborting the calls in flight (" + counts + " so far)…";
    return "Asking: " + tally.ended + " of " + total + " calls ended, " + chosen.concurrency + " at a time (" + counts + ")…";
  }

  function endText(tally, total, stopped) {
    var counts = tally.scored + " scored, " + tally.failed + " failed";
    if (!stopped) return "Done: " + total + " calls, " + counts + ".";
    return "Stopped: " + counts + ", " + tally.aborted + " aborted in flight, " + (total - tally.ended) + " not asked.";
  }

  /* The run files, one per condition: the claim entries in the sample's order, the reserved key
     last (as claimtrace llm writes them). */
  function assemble(data, headers, entries, ids) {
    var key = data.protocol.run_key, finished = new Date().toISOString();
    return Object.keys(headers).map(function (condition) {
      var run = {};
      ids.forEach(function (id) { if (entries[condition][id]) run[id] = entries[condition][id]; });
      headers[condition].finished = finished;
      run[key] = headers[condition];
      return run;
    });
  }

  /* A run of the form's choices: resolves to {runs, tally, total, stopped}. */
  function runCalls(state, chosen, settings, progress) {
    var data = state.data, byId = byIdOf(data);
    var controller = (state.controller = new AbortController());
    return llm.sample(data.claims, chosen.n, chosen.seed, chosen.stratified, data.protocol.stratify_order).then(function (ids) {
      var sample = { n: chosen.n, seed: chosen.seed, stratified: chosen.stratified, claim_ids: ids };
      var headers = {}, entries = {};
      chosen.conditions.forEach(function (condition) {
        headers[condition] = llm.header(data, settings, sample, condition);
        entries[condition] = {};
      });
      var tasks = tasksOf(ids, chosen.conditions), tally = { scored: 0, failed: 0, aborted: 0, ended: 0 };
      progress.textContent = progressText(tally, tasks.length, chosen, false);
      return pool(tasks, chosen.concurrency, controller.signal, function (task) {
        return llm.ask(data, settings, byId[task.id], task.condition, "evaluation", controller.signal);
      }, function (task, got) {
        tally.ended += 1;
        if (got.entry) { entries[task.condition][task.id] = got.entry; tally.scored += 1; }
        else if (got.aborted) tally.aborted += 1;
        else { headers[task.condition].failed[task.id] = got.failed; tally.failed += 1; }
        progress.textContent = progressText(tally, tasks.length, chosen, controller.signal.aborted);
      }).then(function () {
        return { runs: assemble(data, headers, entries, ids), tally: tally, total: tasks.length, stopped: controller.signal.aborted };
      });
    });
  }

  /* ---------------------------------------------------------------- the results */

  function row(cells) {
    return el("tr", null, cells.map(function (cell, i) {
      return el(i === 0 ? "th" : "td", i === 0 ? { scope: "row", cls: "l" } : null, [cell]);
    }));
  }

  function resultsTable(caption, head, rows, cls) {
    var table = el("table", { cls: cls || "num llm-table" }, [el("caption", { text: caption }),
      el("thead", null, [el("tr", null, head.map(function (h, i) { return el("th", { scope: "col", cls: i ? "" : "l", text: h }); }))]),
      el("tbody", null, rows.map(row))]);
    return el("div", { cls: "scroll", role: "region", "aria-label": caption, tabindex: "0" }, [table]);
  }

  function claimRows(s) {
    return s.rows.map(function (r) {
      return [el("a", { href: claimtrace.root + "claim/" + r.id + ".html", text: r.id }), r.label, r.notebook,
              r.status === "ok" ? r.llm : "unusable", r.cited.join(" ") + (r.invalid.length ? " (" + r.invalid.join(" ") + ")" : ""),
              el("span", { cls: "rationale", text: r.rationale || "—" })];
    });
  }

  /* One run's figures: the sample, the interval width, the scores beside the notebook's classifier
     and always SUPPORTS, the pairing with the classifier, the citations and costs, each claim. */
  function drawRun(box, data, run, chosen) {
    var s = llm.score(run, data), h = s.header, where = PASSAGES[h.condition];
    var width = "±" + num(s.half_width, 2);
    box.appendChild(el("p", { cls: "llm-summary", text:
      h.model + " (" + h.provider + ", prompt " + h.prompt_version + ") on " + s.n + " " + h.split + " claims" +
      (h.sample.stratified ? " (stratified" : " (") + ", seed " + h.sample.seed + "), " + h.condition + " passages: " +
      s.unusable + " unusable (scored as wrong), " + s.failed + " failed (left out)." }));
    box.appendChild(el("p", { cls: "llm-width", text: "How wide: at " + s.n + " claims a 95% interval on an accuracy near one half reaches about " +
      width + " either side (" + data.protocol.width_at_half + "/√" + s.n + "); read every figure below with its interval." }));
    box.appendChild(resultsTable("accuracy, macro-F1, evidence F and HM on the same " + s.n + " claims, " + where + ", with 95% intervals (" + width + " at this N)",
      ["system", "accuracy (Wilson)", "macro-F1 (bootstrap)", "evidence F (bootstrap)", "HM (bootstrap)"], [
        [h.model, share(s.accuracy), interval(s.macro_f1), interval(s.evidence_f), interval(s.hm)],
        ["the notebook’s classifier", share(s.notebook_accuracy), interval(s.notebook_macro_f1), interval(s.notebook_evidence_f), interval(s.notebook_hm)],
        ["always SUPPORTS", share(s.supports_accuracy), "—", "—", "—"]
      ]));
    var pr = s.paired;
    box.appendChild(el("p", { cls: "llm-paired", text: "Paired on the same claims: " + h.model + " minus the notebook’s classifier, accuracy " +
      claimtrace.signed(pr.difference, 3) + "; right where the classifier was wrong on " + pr.b + ", wrong where it was right on " + pr.c +
      "; McNemar’s exact p = " + num(pr.p, 4) + ": " + pr.verdict + "; Cohen’s h = " + num(pr.h, 2) + " (interval width at this N: " + width + ")." }));
    var price = pricing(chosen.prices, data, null); // the visitor's prices only: the table's is shown already
    box.appendChild(el("p", { cls: "llm-citations", text: "Citations: " + s.citations.valid + " of " + s.citations.cited +
      " cited ids were among the passages shown, " + (s.citations.cited ? interval(s.citations) : "none cited") +
      ". HM is the course’s harmonic mean of accuracy and evidence F. Latency median " + num(s.latency.median, 0) + " ms, 90th percentile " +
      num(s.latency.p90, 0) + " ms over " + s.latency.calls + " calls; tokens " + s.tokens.input + " in, " + s.tokens.output + " out; estimated cost " +
      (s.cost.usd === "unknown" ? "unknown (no price for this model id)" : "$" + s.cost.usd.toFixed(4)) + " (prices of " + s.cost.prices_date + ")" +
      (price ? "; at your prices $" + ((s.tokens.input * price["in"] + s.tokens.output * price.out) / 1e6).toFixed(4) : "") + "." }));
    box.appendChild(resultsTable("each claim, " + where + ": the gold label, the notebook’s, the model’s and its reason",
      ["claim", "gold", "notebook", "model", "cited (not shown)", "rationale"], claimRows(s), "llm-claims"));
  }

  /* Both conditions on the same claims: each one's accuracy, evidence F and HM, and gold minus
     retrieved paired claim by claim (llm.pairConditions). */
  function drawPaired(box, data, byCondition) {
    var pr = llm.pairConditions(byCondition, data), model = byCondition.gold[data.protocol.run_key].model;
    box.appendChild(el("h3", { text: "Both conditions, paired claim by claim" }));
    if (!pr.n) {
      box.appendChild(el("p", { cls: "llm-conditions", text: "No claim was scored under both conditions: nothing to pair." }));
      return;
    }
    box.appendChild(resultsTable(model + " under each condition on the " + pr.n + " claims scored under both, with 95% intervals",
      ["passages shown", "accuracy (Wilson)", "evidence F (bootstrap)", "HM (bootstrap)"], ["retrieved", "gold"].map(function (condition) {
        var side = pr[condition];
        return [condition, share(side.accuracy), interval(side.evidence_f), interval(side.hm)];
      })));
    var d = pr.difference;
    var gap = function (x) { return claimtrace.signed(x.estimate, 3) + " [" + claimtrace.signed(x.lower, 3) + ", " + claimtrace.signed(x.upper, 3) + "]"; };
    box.appendChild(el("p", { cls: "llm-conditions", text: "Paired on the same " + pr.n + " claims: " + model +
      " with the gold passages minus with the retrieved ones, accuracy " + gap(d.A) + "; right with gold where wrong with retrieved on " +
      pr.b + ", the reverse on " + pr.c + "; McNemar’s exact p = " + num(pr.p, 4) + ": " + pr.verdict + "; Cohen’s h = " + num(pr.h, 2) +
      "; evidence F " + gap(d.F) + "; HM " + gap(d.HM) + " (intervals: the paired bootstrap over claims)." }));
  }

  /* The results of one run, or of a condition pair (the pairing first, then each condition). */
  function drawResults(data, runs, chosen) {
    var box = document.getElementById("llm-results"), key = data.protocol.run_key;
    box.textContent = "";
    if (runs.length === 2) {
      var byCondition = {};
      runs.forEach(function (run) { byCondition[run[key].condition] = run; });
      drawPaired(box, data, byCondition);
    }
    runs.forEach(function (run) {
      var part = runs.length === 2 ? el("section", { cls: "llm-condition", "aria-label": "with the " + PASSAGES[run[key].condition] }) : box;
      if (part !== box) {
        part.appendChild(el("h3", { text: "With the " + PASSAGES[run[key].condition] }));
        box.appendChild(part);
      }
      drawRun(part, data, run, chosen);
    });
    document.getElementById("results").hidden = false;
    claimtrace.markScrollables(box);
  }

  /* ---------------------------------------------------------------- export and import */

  function fileStem(run, data) {
    var h = run[data.protocol.run_key];
    return "llm-run-" + h.model.replace(/[^\w.-]+/g, "_") + "-" + h.condition + "-" + h.sample.n;
  }

  /* The export buttons for these runs: a JSON file per condition, one CSV of them all. */
  function offerExport(ui, runs, data) {
    var key = data.protocol.run_key, paired = runs.length === 2;
    ui.exportJson.disabled = ui.exportCsv.disabled = !runs.length;
    ui.exportJson.textContent = paired ? "Export the " + runs[0][key].condition + " run (JSON)" : "Export the run (JSON)";
    ui.exportSecond.hidden = ui.exportSecond.disabled = !paired;
    if (paired) ui.exportSecond.textContent = "Export the " + runs[1][key].condition + " run (JSON)";
  }

  /* Runs read together: one run, or one model's retrieved and gold runs of one sample (in that
     order); anything else is refused. */
  function pairable(runs, data) {
    var key = data.protocol.run_key;
    if (runs.length === 1) return runs;
    var ordered = data.protocol.conditions.map(function (condition) {
      return runs.filter(function (run) { return run[key].condition === condition; })[0];
    });
    var a = ordered[0] && ordered[0][key], b = ordered[1] && ordered[1][key];
    if (runs.length !== 2 || !a || !b || a.model !== b.model || a.split !== b.split ||
        JSON.stringify(a.sample.claim_ids) !== JSON.stringify(b.sample.claim_ids)) {
      throw new Error("two runs are read together only when they are one model’s retrieved and gold runs of one sample");
    }
    return ordered;
  }

  function startImport(state, ui, redraw) {
    document.getElementById("llm-import").addEventListener("change", function (event) {
      var files = Array.prototype.slice.call(event.target.files), data = state.data;
      if (!files.length) return;
      event.target.value = ""; // the same files chosen again are read again
      var names = files.map(function (file) { return file.name; });
      Promise.all(files.map(function (file) {
        return file.text().then(function (text) { return llm.verify(JSON.parse(text), data); });
      })).then(function (checked) {
        var runs = pairable(checked.map(function (c) { return c.run; }), data);
        var problems = [].concat.apply([], checked.map(function (c) { return c.problems; }));
        state.runs = runs;
        state.run = runs[0];
        offerExport(ui, runs, data);
        ui.imported.textContent = names.join(", ") + ": " + (problems.length ? "does not match what it claims: " + problems.join("; ") + "."
          : "verified: its sample is its seed’s and every answer reads as it says.");
        ui.imported.setAttribute("data-verified", problems.length ? "false" : "true");
        ui.imported.setAttribute("data-file", names.join(" "));
        redraw(runs);
      }).catch(function (err) {
        ui.imported.textContent = names.join(", ") + ": cannot be read as a run: " + err.message;
        ui.imported.setAttribute("data-verified", "false");
        ui.imported.setAttribute("data-file", names.join(" "));
      });
    });
  }

  function startExport(state, ui) {
    var data = state.data;
    ui.exportJson.addEventListener("click", function () {
      if (state.runs.length) pages.download(fileStem(state.runs[0], data) + ".json", JSON.stringify(state.runs[0], null, 1));
    });
    ui.exportSecond.addEventListener("click", function () {
      if (state.runs.length > 1) pages.download(fileStem(state.runs[1], data) + ".json", JSON.stringify(state.runs[1], null, 1));
    });
    ui.exportCsv.addEventListener("click", function () {
      if (!state.runs.length) return;
      var stem = state.runs.length > 1 ? fileStem(state.runs[0], data).replace(/-retrieved-/, "-both-") : fileStem(state.runs[0], data);
      pages.download(stem + ".csv", llm.csv(state.runs, data), "text/csv");
    });
  }

  /* ---------------------------------------------------------------- the page */

  function startEvaluation() {
    var data = pages.pageData("llm-data"), form = document.getElementById("llm-run-form");
    if (!data || !form) return;
    data.passages = pages.pageData("llm-passages");
    var state = (claimtrace.state.llm = { run: null, runs: [], data: data, controller: null, estimates: 0 });
    var ui = { progress: document.getElementById("llm-progress"), start: document.getElementById("llm-start"),
               stop: document.getElementById("llm-stop"), estimate: document.getElementById("llm-estimate"),
               exportJson: document.getElementById("llm-export"), exportSecond: document.getElementById("llm-export-paired"),
               exportCsv: document.getElementById("llm-export-csv"), imported: document.getElementById("llm-import-status") };
    var estimate = function () { showEstimate(state, form, ui.estimate); };
    var redraw = function (runs) { drawResults(data, runs, choices(form, data)); };
    pages.startSettings(function () { ui.start.disabled = !llm.settings() || !!state.controller; estimate(); });
    form.addEventListener("input", estimate);
    form.addEventListener("change", estimate);
    ui.stop.addEventListener("click", function () {
      if (!state.controller) return;
      state.controller.abort();
      ui.stop.disabled = true;
    });
    form.addEventListener("submit", function (event) {
      event.preventDefault();
      var settings = llm.settings();
      if (!settings) { ui.progress.textContent = "Set a provider first."; return; }
      var chosen = choices(form, data);
      ui.start.disabled = true;
      ui.stop.disabled = false;
      ui.progress.textContent = "Drawing the sample…";
      ["data-scored", "data-failed", "data-aborted", "data-unasked"].forEach(function (name) { ui.progress.removeAttribute(name); });
      runCalls(state, chosen, settings, ui.progress).then(function (done) {
        state.runs = done.runs;
        state.run = done.runs[0];
        ui.progress.textContent = endText(done.tally, done.total, done.stopped);
        ui.progress.setAttribute("data-scored", done.tally.scored);
        ui.progress.setAttribute("data-failed", done.tally.failed);
        ui.progress.setAttribute("data-aborted", done.tally.aborted);
        ui.progress.setAttribute("data-unasked", done.total - done.tally.ended);
        offerExport(ui, done.runs, data);
        redraw(done.runs);
      }).catch(function (err) { ui.progress.textContent = "The run stopped: " + err.message; })
        .then(function () {
          state.controller = null;
          ui.start.disabled = !llm.settings();
          ui.stop.disabled = true;
        });
    });
    startExport(state, ui);
    startImport(state, ui, redraw);
  }

  pages.startEvaluation = startEvaluation;
  pages.drawResults = drawResults;
})(window.claimtrace);
