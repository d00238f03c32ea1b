/* claimtrace's LLM run file and its scores (app-core.js lists the parts): the run file of
   docs/llm.md built from the calls, verified when imported, and scored as the evaluation layer
   scores it (claimtrace.evaluation.statistics): accuracy with its Wilson interval, macro-F1 with
   a seeded bootstrap over claims, paired against the notebook's classifier on the same claims
   (difference, McNemar's exact test, Cohen's h), citation validity, the evidence F of the cited
   ids, the course's HM, latency and tokens; one model's gold and retrieved runs paired; runs as
   CSV. */
(function (claimtrace) {
  "use strict";

  var llm = claimtrace.llm;
  var Z95 = 1.959963984540054;
  var ALPHA = 0.05;

  /* ---------------------------------------------------------------- statistics */

  var stats = (llm.stats = {});

  stats.wilson = function (k, n) {
    if (!n) return { estimate: NaN, lower: NaN, upper: NaN, successes: k, n: n };
    var p = k / n, z2 = Z95 * Z95, d = 1 + z2 / n;
    var centre = (p + z2 / (2 * n)) / d;
    var half = (Z95 * Math.sqrt(p * (1 - p) / n + z2 / (4 * n * n))) / d;
    return { estimate: p, lower: centre - half, upper: centre + half, successes: k, n: n };
  };

  /* Two-sided exact McNemar: twice P(X <= min(b, c)) for X ~ Bin(b + c, 1/2), at most 1. */
  stats.mcnemar = function (b, c) {
    var n = b + c;
    if (!n) return { b: b, c: c, p: 1 };
    var term = Math.pow(0.5, n), cdf = 0; // C(n, 0) / 2^n, then each next term from the last
    for (var k = 0; k <= Math.min(b, c); k++) {
      cdf += term;
      term = (term * (n - k)) / (k + 1);
    }
    return { b: b, c: c, p: Math.min(1, 2 * cdf) };
  };

  stats.cohensH = function (p1, p2) { return 2 * Math.asin(Math.sqrt(p1)) - 2 * Math.asin(Math.sqrt(p2)); };

  /* scikit-learn's macro-F1 (zero_division=0) over the labels present in gold or predictions;
     ``weights`` the times each claim is drawn (a bootstrap resample), 1 each when omitted.
     An unusable answer (null) is named UNUSABLE, a wrong label of its own (as
     claimtrace.evaluation.llm_score names it). */
  stats.macroF1 = function (gold, predicted, weights) {
    var tp = {}, inGold = {}, inPredicted = {};
    gold.forEach(function (g, i) {
      var w = weights ? weights[i] : 1, p = predicted[i] == null ? "UNUSABLE" : predicted[i];
      if (!w) return;
      inGold[g] = (inGold[g] || 0) + w;
      inPredicted[p] = (inPredicted[p] || 0) + w;
      if (p === g) tp[g] = (tp[g] || 0) + w;
    });
    var labels = Object.keys(inGold).concat(Object.keys(inPredicted).filter(function (l) { return !(l in inGold); }));
    if (!labels.length) return 0;
    var sum = labels.reduce(function (s, l) {
      return s + (2 * (tp[l] || 0)) / ((inGold[l] || 0) + (inPredicted[l] || 0));
    }, 0);
    return sum / labels.length;
  };

  /* numpy's quantile, linear interpolation, of numbers already sorted. */
  stats.quantile = function (sorted, q) {
    if (!sorted.length) return NaN;
    var position = (sorted.length - 1) * q, low = Math.floor(position), high = Math.ceil(position);
    return sorted[low] + (sorted[high] - sorted[low]) * (position - low);
  };

  /* A small seeded generator (mulberry32): the same resamples on every browser. */
  function generator(seed) {
    var state = seed >>> 0;
    return function () {
      state = (state + 0x6d2b79f5) >>> 0;
      var t = state;
      t = Math.imul(t ^ (t >>> 15), t | 1);
      t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
      return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
    };
  }

  /* The percentile-bootstrap interval over claims of ``statistic(weights)``. */
  stats.bootstrap = function (n, statistic, resamples, seed) {
    var random = generator(seed), values = [], weights = new Array(n);
    for (var r = 0; r < resamples; r++) {
      for (var i = 0; i < n; i++) weights[i] = 0;
      for (var j = 0; j < n; j++) weights[Math.floor(random() * n)] += 1;
      values.push(statistic(weights));
    }
    values.sort(function (a, b) { return a - b; });
    return { lower: stats.quantile(values, 0.025), upper: stats.quantile(values, 0.975), resamples: resamples, seed: seed };
  };

  function weightedMean(values) {
    return function (weights) {
      var sum = 0, count = 0;
      values.forEach(function (v, i) { sum += v * weights[i]; count += weights[i]; });
      return count ? sum / count : 0;
    };
  }

  /* The course's per-claim evidence F (claimtrace.evaluation.scorer.evidence_scores). */
  stats.evidenceF = function (predicted, gold) {
    if (!predicted.length) return 0;
    var correct = gold.filter(function (id) { return predicted.indexOf(id) !== -1; }).length;
    if (!correct) return 0;
    var recall = correct / gold.length, precision = correct / predicted.length;
    return (2 * precision * recall) / (precision + recall);
  };

  stats.verdict = function (p) { return p < ALPHA ? "more than chance" : "cannot be told apart"; };

  /* The course's headline: the harmonic mean 2FA / (F + A), 0 when both are 0. */
  stats.harmonic = function (f, a) { return f + a === 0 ? 0 : (2 * f * a) / (f + a); };

  /* The course's HM of a system's accuracy and mean evidence F over the same claims (``right``
     1/0 a claim, ``f`` its evidence F), with its percentile bootstrap interval. */
  stats.hm = function (right, f, boot) {
    var n = right.length, meanA = weightedMean(right), meanF = weightedMean(f), ones = right.map(function () { return 1; });
    var estimate = n ? stats.harmonic(meanF(ones), meanA(ones)) : NaN;
    return Object.assign({ estimate: estimate }, n ? stats.bootstrap(n, function (w) {
      return stats.harmonic(meanF(w), meanA(w));
    }, boot.resamples, boot.seed) : {});
  };

  /* The price table's row for a model id ({prefix, in, out}: dollars per million tokens), the
     longest prefix that matches, or null. */
  stats.price = function (protocol, model) {
    var best = null;
    protocol.prices.forEach(function (row) {
      if ((model || "").indexOf(row.prefix) === 0 && (!best || row.prefix.length > best.prefix.length)) best = row;
    });
    return best;
  };

  /* The estimated cost in dollars from the protocol's price table (the longest model id prefix
     that matches), or "unknown"; with the table's date. */
  stats.cost = function (protocol, model, tokensIn, tokensOut) {
    var best = stats.price(protocol, model);
    if (!best) return { usd: "unknown", prices_date: protocol.prices_date };
    return { usd: (tokensIn * best["in"] + tokensOut * best.out) / 1e6, prices_date: protocol.prices_date };
  };

  /* ---------------------------------------------------------------- the run file */

  /* A run's header (the reserved key's value), before its calls. */
  llm.header = function (data, settings, sample, condition) {
    return {
      schema: data.protocol.schema, prompt_version: data.protocol.prompt_version,
      provider: settings.provider, base_url: llm.baseUrl(settings, data.protocol), model: settings.model,
      condition: condition, split: data.split,
      sample: { n: sample.n, seed: sample.seed, stratified: sample.stratified, claim_ids: sample.claim_ids },
      temperature: data.protocol.temperature, failed: {}, started: new Date().toISOString(),
      finished: null, tool: data.tool
    };
  };

  /* A scored call's entry: the course's shape, and the call. */
  llm.entry = function (claim, parsed, answer) {
    return {
      claim_text: claim.text,
      claim_label: parsed.status === "ok" ? parsed.label : null,
      evidences: parsed.cited_ids,
      llm: { status: parsed.status, rationale: parsed.rationale, cited_ids: parsed.cited_ids,
             latency_ms: Math.round(answer.latency_ms * 10) / 10, tokens_in: answer.tokens_in || 0, tokens_out: answer.tokens_out || 0,
             raw: answer.text, error: parsed.error }
    };
  };

  /* An imported run checked against the page's claims: its sample recomputed from its seed, each
     answer parsed again from its raw text, its citations checked again. Resolves to
     {header, problems: [sentences], run}; a run that cannot be read at all rejects. */
  llm.verify = function (run, data) {
    var key = data.protocol.run_key;
    var header = run && run[key];
    if (!header || typeof header !== "object") return Promise.reject(new Error("not a claimtrace LLM run: no \"" + key + "\" entry"));
    if (header.schema !== data.protocol.schema) return Promise.reject(new Error("run schema " + header.schema + ", this page reads " + data.protocol.schema));
    if (header.split !== data.split) return Promise.reject(new Error("a run of " + header.split + "; this page holds " + data.split));
    var sample = header.sample || {};
    var problems = [];
    var byId = {};
    data.claims.forEach(function (claim) { byId[claim.id] = claim; });
    return llm.sample(data.claims, sample.n, sample.seed, !!sample.stratified, data.protocol.stratify_order).then(function (ids) {
      if (JSON.stringify(ids) !== JSON.stringify(sample.claim_ids)) {
        problems.push("its claims are not the sample its seed gives (" + sample.n + " claims, seed " + sample.seed + (sample.stratified ? ", stratified" : "") + ")");
      }
      var failed = header.failed || {};
      Object.keys(run).forEach(function (id) {
        if (id === key) return;
        var claim = byId[id], entry = run[id];
        if (!claim) { problems.push(id + " is not a labelled " + data.split + " claim"); return; }
        if ((sample.claim_ids || []).indexOf(id) === -1) problems.push(id + " is not in its sample");
        var again = llm.parseAnswer(entry.llm && entry.llm.raw, data.protocol.labels);
        var said = entry.llm || {};
        if (again.status !== said.status || again.label !== entry.claim_label ||
            JSON.stringify(again.cited_ids) !== JSON.stringify(said.cited_ids)) {
          problems.push(id + ": its answer, read again, gives " + again.status + " " + (again.label || "no label") + " citing [" + again.cited_ids.join(", ") + "], not what the file says");
        }
      });
      (sample.claim_ids || []).forEach(function (id) {
        if (!(id in run) && !(id in failed)) problems.push(id + " is in its sample but neither scored nor failed");
      });
      return { header: header, problems: problems, run: run };
    });
  };

  /* ---------------------------------------------------------------- the scores */

  /* Every figure of a run, from its file and the page's claims (a live run and an imported one
     are scored by this one function). */
  llm.score = function (run, data) {
    var key = data.protocol.run_key, header = run[key], condition = header.condition;
    var byId = {};
    data.claims.forEach(function (claim) { byId[claim.id] = claim; });
    var ids = header.sample.claim_ids.filter(function (id) { return id in run && byId[id]; });
    var n = ids.length;
    var gold = [], mine = [], notebook = [], supports = [], evidence = [], notebookEvidence = [];
    var cited = 0, citedValid = 0, latencies = [], tokensIn = 0, tokensOut = 0, unusable = 0, rows = [];
    ids.forEach(function (id) {
      var claim = byId[id], entry = run[id], call = entry.llm || {};
      var shown = claim[condition], said = call.cited_ids || [];
      gold.push(claim.label);
      mine.push(entry.claim_label);
      notebook.push(claim.notebook[condition]);
      supports.push("SUPPORTS");
      evidence.push(llm.stats.evidenceF(said, claim.gold));
      notebookEvidence.push(llm.stats.evidenceF(claim.retrieved, claim.gold));
      var valid = said.filter(function (pid) { return shown.indexOf(pid) !== -1; });
      cited += said.length;
      citedValid += valid.length;
      if (call.latency_ms != null) latencies.push(call.latency_ms);
      tokensIn += call.tokens_in || 0;
      tokensOut += call.tokens_out || 0;
      if (call.status !== "ok") unusable += 1;
      rows.push({ id: id, label: claim.label, llm: entry.claim_label, status: call.status, notebook: claim.notebook[condition],
                  cited: said, invalid: said.filter(function (pid) { return shown.indexOf(pid) === -1; }), rationale: call.rationale || "" });
    });
    var right = function (predicted) { return predicted.map(function (p, i) { return p === gold[i]; }); };
    var mineRight = right(mine), notebookRight = right(notebook), supportsRight = right(supports);
    var count = function (flags) { return flags.filter(Boolean).length; };
    var b = 0, c = 0;
    mineRight.forEach(function (r, i) { if (r && !notebookRight[i]) b += 1; if (!r && notebookRight[i]) c += 1; });
    var boot = data.protocol.bootstrap;
    var f1 = function (predicted) {
      return Object.assign({ estimate: llm.stats.macroF1(gold, predicted) },
        n ? llm.stats.bootstrap(n, function (w) { return llm.stats.macroF1(gold, predicted, w); }, boot.resamples, boot.seed) : {});
    };
    var meanF = function (values) {
      var estimate = n ? values.reduce(function (s, v) { return s + v; }, 0) / n : NaN;
      return Object.assign({ estimate: estimate }, n ? llm.stats.bootstrap(n, weightedMean(values), boot.resamples, boot.seed) : {});
    };
    var accuracy = llm.stats.wilson(count(mineRight), n), notebookAccuracy = llm.stats.wilson(count(notebookRight), n);
    var ones = function (flags) { return flags.map(function (r) { return r ? 1 : 0; }); };
    var sorted = latencies.slice().sort(function (x, y) { return x - y; });
    var test = llm.stats.mcnemar(b, c);
    return {
      header: header, condition: condition, n: n, failed: Object.keys(header.failed || {}).length, unusable: unusable,
      half_width: n ? data.protocol.width_at_half / Math.sqrt(n) : NaN,
      accuracy: accuracy, notebook_accuracy: notebookAccuracy, supports_accuracy: llm.stats.wilson(count(supportsRight), n),
      macro_f1: f1(mine), notebook_macro_f1: f1(notebook),
      paired: { difference: accuracy.estimate - notebookAccuracy.estimate, b: b, c: c, p: test.p,
                verdict: llm.stats.verdict(test.p), h: llm.stats.cohensH(accuracy.estimate, notebookAccuracy.estimate) },
      citations: Object.assign({ cited: cited, valid: citedValid }, llm.stats.wilson(citedValid, cited)),
      evidence_f: meanF(evidence), notebook_evidence_f: meanF(notebookEvidence),
      hm: llm.stats.hm(ones(mineRight), evidence, boot), notebook_hm: llm.stats.hm(ones(notebookRight), notebookEvidence, boot),
      latency: { median: llm.stats.quantile(sorted, 0.5), p90: llm.stats.quantile(sorted, 0.9), calls: sorted.length },
      tokens: { input: tokensIn, output: tokensOut },
      cost: llm.stats.cost(data.protocol, header.model || "", tokensIn, tokensOut),
      rows: rows
    };
  };

  /* ---------------------------------------------------------------- two conditions paired */

  /* One model asked about the same claims with the gold passages and with the retrieved ones
     ({retrieved: run, gold: run}): gold minus retrieved on the claims scored in both, as
     claimtrace.evaluation.llm_score.conditions_paired computes it (the evaluation layer's paired
     test): the differences in accuracy (McNemar's exact test, Cohen's h), evidence F and HM (its
     interval from the page's own bootstrap stream). */
  llm.pairConditions = function (byCondition, data) {
    var key = data.protocol.run_key, boot = data.protocol.bootstrap, byId = {};
    data.claims.forEach(function (claim) { byId[claim.id] = claim; });
    var retrieved = byCondition.retrieved, gold = byCondition.gold;
    var ids = retrieved[key].sample.claim_ids.filter(function (id) { return byId[id] && id in retrieved && id in gold; });
    var n = ids.length;
    function side(run) {
      var right = [], f = [];
      ids.forEach(function (id) {
        right.push(run[id].claim_label === byId[id].label ? 1 : 0);
        f.push(llm.stats.evidenceF(run[id].evidences || [], byId[id].gold));
      });
      var ones = right.map(function () { return 1; });
      return { right: right, f: f, accuracy: llm.stats.wilson(right.filter(Boolean).length, n),
               evidence_f: withInterval(weightedMean(f)(ones), weightedMean(f)), hm: llm.stats.hm(right, f, boot) };
    }
    function withInterval(estimate, statistic) {
      return Object.assign({ estimate: estimate }, n ? llm.stats.bootstrap(n, statistic, boot.resamples, boot.seed) : {});
    }
    var r = side(retrieved), g = side(gold), b = 0, c = 0;
    ids.forEach(function (id, i) { if (g.right[i] && !r.right[i]) b += 1; if (!g.right[i] && r.right[i]) c += 1; });
    var test = llm.stats.mcnemar(b, c);
    /* gold minus retrieved of a statistic of (right, f) over the same resampled claims */
    function gap(statistic) {
      return function (w) { return statistic(weightedMean(g.right)(w), weightedMean(g.f)(w)) - statistic(weightedMean(r.right)(w), weightedMean(r.f)(w)); };
    }
    return {
      n: n, retrieved: r, gold: g, b: b, c: c, p: test.p, verdict: llm.stats.verdict(test.p),
      h: llm.stats.cohensH(g.accuracy.estimate, r.accuracy.estimate),
      difference: {
        A: withInterval(g.accuracy.estimate - r.accuracy.estimate, gap(function (a) { return a; })),
        F: withInterval(g.evidence_f.estimate - r.evidence_f.estimate, gap(function (a, f) { return f; })),
        HM: withInterval(g.hm.estimate - r.hm.estimate, gap(function (a, f) { return llm.stats.harmonic(f, a); }))
      }
    };
  };

  /* ---------------------------------------------------------------- the run as CSV */

  /* A run's CSV rows (the protocol's csv_columns), as claimtrace.evaluation.llm.csv_rows gives
     them: in the sample's order, every claim scored and every failed call (a claim not asked has
     no row); the notebook's label on the run's passages; the cited ids joined by single spaces. */
  llm.csvRows = function (run, data) {
    var header = run[data.protocol.run_key], condition = header.condition, failed = header.failed || {}, byId = {};
    data.claims.forEach(function (claim) { byId[claim.id] = claim; });
    var rows = [];
    header.sample.claim_ids.forEach(function (id) {
      var claim = byId[id] || { label: "", notebook: {} }, entry = run[id];
      var gold = claim.label || "", notebook = claim.notebook[condition] || "";
      if (entry && id !== data.protocol.run_key) {
        var call = entry.llm || {}, said = entry.claim_label;
        rows.push([id, condition, call.status || "", gold, notebook, said || "",
                   said != null && said === claim.label ? "true" : "false", (entry.evidences || []).join(" "), call.rationale || ""]);
      } else if (id in failed) {
        rows.push([id, condition, "failed", gold, notebook, "", "", "", ""]);
      }
    });
    return rows;
  };

  /* RFC 4180, as Python's csv module writes it: CRLF line ends; a field holding a comma, a double
     quote or a line break quoted, its quotes doubled. */
  function csvField(value) {
    var text = String(value);
    return /[",\r\n]/.test(text) ? "\"" + text.replace(/"/g, "\"\"") + "\"" : text;
  }

  /* Runs as one CSV: each run's rows, the runs in the order given. */
  llm.csv = function (runs, data) {
    var rows = [data.protocol.csv_columns];
    runs.forEach(function (run) { rows = rows.concat(llm.csvRows(run, data)); });
    return rows.map(function (row) { return row.map(csvField).join(","); }).join("\r\n") + "\r\n";
  };
})(window.claimtrace);
