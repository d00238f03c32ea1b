/* claimtrace's audit log page (app-core.js lists the parts): every call this browser made to the
   visitor's LLM (app-llm.js keeps them), counted by feature, model, outcome and decision; a
   filter by feature and outcome; a call opened to review it in full and to take or change the
   decision on its answer (app-llm-page.js's buttons, as on a claim page); the log exported as
   JSON or CSV; and cleared only once the visitor confirms. The page's data (web/views/llm.py)
   names the fields, the features and the labels. Every text goes in through textContent. */
(function (claimtrace) {
  "use strict";

  var llm = claimtrace.llm;
  var el = claimtrace.el;

  function plural(n, word) { return n + " " + word + (n === 1 ? "" : "s"); }

  function featureName(data, where) { return data.where[where] || where || "unknown"; }

  function modelName(entry) { return entry.provider + " · " + entry.model; }

  var DECISIONS = { accepted: "accepted", edited: "edited (another label)", rejected: "rejected", none: "no decision yet" };
  var OUTCOMES = { ok: "ok (scored)", unusable: "unusable (scored as wrong)", failed: "failed (left out)" };

  /* [[key, count]] in the order given first, then any other key in the order met. */
  function countBy(log, keyOf, order) {
    var counts = {}, keys = (order || []).slice();
    log.forEach(function (entry) {
      var key = keyOf(entry);
      if (keys.indexOf(key) === -1) keys.push(key);
      counts[key] = (counts[key] || 0) + 1;
    });
    return keys.filter(function (key) { return counts[key]; }).map(function (key) { return [key, counts[key]]; });
  }

  /* ---------------------------------------------------------------- the counts */

  function countTable(caption, group, rows, nameOf) {
    return el("table", { cls: "num ai-counts", "data-group": group }, [el("caption", { text: caption }),
      el("thead", null, [el("tr", null, [el("th", { scope: "col", cls: "l", text: group }), el("th", { scope: "col", text: "calls" })])]),
      el("tbody", null, rows.map(function (row) {
        return el("tr", null, [el("th", { scope: "row", cls: "l", text: nameOf(row[0]) }),
          el("td", { "data-count": group + ":" + row[0], text: String(row[1]) })]);
      }))]);
  }

  function drawSummary(box, log, data) {
    box.textContent = "";
    if (!log.length) { box.appendChild(el("p", { text: "No call is kept in this browser yet." })); return; }
    var answered = log.filter(function (entry) { return entry.status !== "failed"; });
    var decided = answered.filter(function (entry) { return entry.decision; });
    box.appendChild(el("p", { cls: "ai-total", text: "The whole log, whatever the filter below: " + plural(log.length, "call") + ", " +
      (log.length - answered.length) + " failed; " + plural(decided.length, "decision") + " taken on " + plural(answered.length, "answer") + "." }));
    box.appendChild(el("div", { cls: "ai-count-tables" }, [
      countTable("by feature", "feature", countBy(log, function (e) { return e.where; }, Object.keys(data.where)),
        function (key) { return featureName(data, key); }),
      countTable("by provider and model", "model", countBy(log, modelName), function (key) { return key; }),
      countTable("by outcome", "outcome", countBy(log, function (e) { return e.status; }, Object.keys(OUTCOMES)),
        function (key) { return OUTCOMES[key] || key; }),
      countTable("by decision", "decision", countBy(log, function (e) { return e.decision || "none"; }, Object.keys(DECISIONS)),
        function (key) { return DECISIONS[key] || key; })
    ]));
  }

  /* ---------------------------------------------------------------- one call, reviewed */

  /* What was asked about, in a call's line: a course claim's id, or a typed claim's text cut short. */
  function askedAbout(entry) {
    if (entry.claim_id || entry.claim_text == null) return entry.claim_id || "";
    var text = String(entry.claim_text);
    return "“" + (text.length > 40 ? text.slice(0, 39) + "…" : text) + "”";
  }

  function headline(entry, data) {
    return (entry.time || "").slice(0, 19).replace("T", " ") + " · " + featureName(data, entry.where) + " · " + entry.model +
      " · " + askedAbout(entry) + " · " + entry.status + (entry.label ? " " + entry.label : "") +
      " · decision: " + (entry.decision ? entry.decision + (entry.decided_label ? " (" + entry.decided_label + ")" : "") : "none");
  }

  /* The passages the prompt showed, id -> text, read off the user prompt's "[id] text" lines. */
  function shownPassages(user) {
    var shown = {}, last = null, lines = String(user || "").split("\n\nPassages:\n").slice(1).join("\n").split("\n");
    lines.forEach(function (line) {
      var match = /^\[([^\]]+)\] ?(.*)$/.exec(line);
      if (match) { last = match[1]; shown[last] = match[2]; } else if (last !== null) shown[last] += "\n" + line;
    });
    return shown;
  }

  function citedList(entry) {
    var ids = entry.cited_ids || [];
    if (!ids.length) return el("p", { text: "None cited." });
    var shown = shownPassages(entry.user);
    return el("ol", { cls: "ai-cited" }, ids.map(function (id) {
      var known = Object.prototype.hasOwnProperty.call(shown, id);
      return el("li", null, [el("span", { cls: "pid", text: id }), " ",
        el("span", { cls: known ? "ptext" : "not-shown", text: known ? shown[id] : "(not among the passages shown)" })]);
    }));
  }

  function rationaleOf(entry, data) {
    if (typeof entry.rationale === "string") return entry.rationale;
    return entry.output == null ? "" : llm.parseAnswer(entry.output, data.labels).rationale; // a record from before it was kept
  }

  /* The claim a call asked about: a course claim's page, or a typed claim's text, linked to the
     live page that traces it again under the same rule (a record without an id or a text: "—"). */
  function subject(entry) {
    var root = claimtrace.root;
    if (entry.claim_id) return ["claim ", el("a", { href: root + "claim/" + entry.claim_id + ".html", text: entry.claim_id })];
    if (entry.claim_text == null) return ["claim —"];
    var rule = entry.rule || "notebook";
    var href = root + "live.html?text=" + encodeURIComponent(entry.claim_text) + (rule === "notebook" ? "" : "&rule=" + encodeURIComponent(rule));
    return ["typed text “", el("a", { href: href, text: entry.claim_text }), "” under the " + rule + " rule"];
  }

  function facts(entry, data) {
    var rows = [
      ["Feature", [featureName(data, entry.where) + ", "].concat(subject(entry), [", " + entry.condition + " passages"])],
      ["Model", [entry.model + " (" + entry.provider + (entry.base_url ? " at " + entry.base_url : "") + "), prompt " + entry.prompt_version]],
      ["Call", [entry.time + " · " + (entry.latency_ms == null ? "—" : entry.latency_ms + " ms") + " · tokens " +
        (entry.tokens_in == null ? "—" : entry.tokens_in) + " in, " + (entry.tokens_out == null ? "—" : entry.tokens_out) + " out · " +
        plural(entry.attempts || 0, "attempt")]],
      ["Outcome", [(OUTCOMES[entry.status] || entry.status) + (entry.error ? ": " + entry.error : "")]],
      ["Label read", [entry.label || "none"]],
      ["Its reason", [rationaleOf(entry, data) || "(none given)"]]
    ];
    return el("dl", { cls: "rows ai-facts" }, rows.reduce(function (out, row) {
      return out.concat([el("dt", { text: row[0] }), el("dd", row[0] === "Its reason" ? { cls: "reason" } : null, row[1])]);
    }, []));
  }

  function saidDecision(entry) {
    return entry.decision ? "Your decision: " + entry.decision + (entry.decided_label ? " (" + entry.decided_label + ")" : "") + "." : "No decision yet.";
  }

  function review(entry, data, afterDecision) {
    var status = el("p", { cls: "ai-decision", role: "status", text: saidDecision(entry) });
    var parts = [facts(entry, data),
      el("h3", { text: "The passages it cited" }), citedList(entry),
      el("h3", { text: "The prompt sent" }),
      el("pre", { cls: "prompt ai-system", text: "system: " + entry.system }),
      el("pre", { cls: "prompt ai-user", text: "user: " + entry.user }),
      el("h3", { text: "The answer" }),
      el("pre", { cls: "prompt ai-output", text: entry.output == null ? "(no answer: " + entry.error + ")" : entry.output }),
      el("h3", { text: "Your decision" }), status];
    if (entry.status !== "failed") {
      parts.push(claimtrace.llmPages.decisionButtons(entry, entry.label, data.labels, status, "call-" + entry.id, afterDecision));
    }
    return el("div", { cls: "ai-review" }, parts);
  }

  /* ---------------------------------------------------------------- the list and its filter */

  function drawCalls(box, log, data, filter, redraw) {
    box.textContent = "";
    log.slice().reverse().filter(function (entry) {
      return (!filter.where || entry.where === filter.where) && (!filter.status || entry.status === filter.status);
    }).forEach(function (entry) {
      var summary = el("summary", { text: headline(entry, data) });
      var call = el("details", { cls: "ai-call", "data-id": entry.id, "data-where": entry.where, "data-status": entry.status }, [summary]);
      /* Drawn when first opened: 500 calls' prompts are a lot of text for a list. */
      call.addEventListener("toggle", function () {
        if (!call.open || call.querySelector(".ai-review")) return;
        call.appendChild(review(entry, data, function () {
          var now = llm.audit().filter(function (e) { return e.id === entry.id; })[0] || entry;
          summary.textContent = headline(now, data);
          redraw();
        }));
      });
      box.appendChild(call);
    });
    return box.children.length;
  }

  /* The filter's features: the page's, then any other a kept call names. */
  function whereOptions(select, log, data) {
    var have = Array.prototype.map.call(select.options, function (option) { return option.value; });
    Object.keys(data.where).concat(log.map(function (entry) { return entry.where; })).forEach(function (where) {
      if (have.indexOf(where) !== -1) return;
      have.push(where);
      select.appendChild(el("option", { value: where, text: featureName(data, where) }));
    });
  }

  /* ---------------------------------------------------------------- export and clearing */

  /* One CSV field (RFC 4180): quoted when it holds a comma, a quote, a line break or edge spaces. */
  function csvField(value) {
    if (value == null) return "";
    var text = Array.isArray(value) ? value.join(" ") : typeof value === "object" ? JSON.stringify(value) : String(value);
    return /[",\r\n]|^\s|\s$/.test(text) ? "\"" + text.replace(/"/g, "\"\"") + "\"" : text;
  }

  /* The log as CSV: a header of the fields, one row per call, CRLF line ends, and a byte order
     mark so that a spreadsheet reads it as UTF-8. */
  llm.auditCsv = function (log, fields) {
    var rows = [fields].concat(log.map(function (entry) { return fields.map(function (f) { return entry[f]; }); }));
    return "\ufeff" + rows.map(function (row) { return row.map(csvField).join(","); }).join("\r\n") + "\r\n";
  };

  function startClear(draw, count) {
    var button = document.getElementById("ai-log-clear"), dialog = document.getElementById("ai-log-confirm");
    var confirm = document.getElementById("ai-log-confirm-clear");
    button.addEventListener("click", function () {
      var n = llm.audit().length;
      if (!n) { count.textContent = "The log is already empty."; return; }
      document.getElementById("ai-log-confirm-text").textContent = "All " + plural(n, "call") +
        " kept in this browser’s log will be deleted, with your decisions; export the log first to keep a copy. This cannot be undone.";
      confirm.textContent = "Delete " + plural(n, "call");
      confirm.setAttribute("data-count", String(n));
      dialog.returnValue = "";
      dialog.showModal();
    });
    dialog.addEventListener("close", function () {
      var n = Number(confirm.getAttribute("data-count"));
      if (dialog.returnValue === "clear") {
        llm.clearAudit();
        draw();
        count.textContent = plural(n, "call") + " deleted: the log is empty.";
      }
      button.focus();
    });
  }

  function start() {
    var box = document.getElementById("ai-log"), script = document.getElementById("ai-log-data");
    if (!box || !script) return;
    var data = JSON.parse(script.textContent);
    var count = document.getElementById("ai-log-count"), shown = document.getElementById("ai-log-shown");
    var summary = document.getElementById("ai-log-summary"), filter = document.getElementById("ai-log-filter");
    function redrawSummary() { drawSummary(summary, llm.audit(), data); }
    function draw() {
      var log = llm.audit(), chosen = { where: filter.elements.where.value, status: filter.elements.status.value };
      count.textContent = plural(log.length, "call") + " kept in this browser.";
      drawSummary(summary, log, data);
      whereOptions(filter.elements.where, log, data);
      var n = drawCalls(box, log, data, chosen, redrawSummary);
      shown.textContent = "Showing " + n + " of " + plural(log.length, "call") +
        (chosen.where ? ", " + featureName(data, chosen.where) : "") + (chosen.status ? ", " + chosen.status : "") + ".";
    }
    filter.addEventListener("change", draw);
    filter.addEventListener("submit", function (event) { event.preventDefault(); });
    document.getElementById("ai-log-export").addEventListener("click", function () {
      claimtrace.llmPages.download("claimtrace-ai-log.json", JSON.stringify(llm.audit(), null, 1));
    });
    document.getElementById("ai-log-csv").addEventListener("click", function () {
      claimtrace.llmPages.download("claimtrace-ai-log.csv", llm.auditCsv(llm.audit(), data.fields), "text/csv;charset=utf-8");
    });
    startClear(draw, count);
    draw();
  }

  claimtrace.llmLog = { start: start };
})(window.claimtrace);
