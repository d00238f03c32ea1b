/* claimtrace's LLM harness (app-core.js lists the parts): the protocol docs/llm.md states, run in
   the browser with the visitor's own provider. The sample, the prompt, the providers' wire
   formats, the answer's validation, the audit log; no page is touched here (app-llm-page.js
   draws). The protocol's constants come from the page's data (web/views/llm.py), never typed
   here. The settings and the key are app-llm-settings.js's, loaded before this file. */
(function (claimtrace) {
  "use strict";

  var AUDIT_SLOT = "claimtrace.llm.audit";
  /* The audit log keeps the latest calls only (localStorage holds about 5 MB). */
  var AUDIT_MAX = 500;
  var llm = claimtrace.llm;
  llm.AUDIT_SLOT = AUDIT_SLOT;

  /* ---------------------------------------------------------------- the audit log */

  llm.audit = function () { return llm.readJSON(window.localStorage, AUDIT_SLOT) || []; };

  /* One call kept: its record scrubbed of the key, whatever field a provider echoed it in. */
  llm.record = function (entry, key) {
    var log = llm.audit();
    var text = llm.scrub(JSON.stringify(entry), key);
    log.push(JSON.parse(text));
    window.localStorage.setItem(AUDIT_SLOT, JSON.stringify(log.slice(-AUDIT_MAX)));
    return log[log.length - 1];
  };

  llm.decide = function (id, decision, label) {
    var log = llm.audit();
    log.forEach(function (entry) {
      if (entry.id === id) { entry.decision = decision; entry.decided_label = label || null; }
    });
    window.localStorage.setItem(AUDIT_SLOT, JSON.stringify(log));
  };

  llm.clearAudit = function () { window.localStorage.removeItem(AUDIT_SLOT); };

  /* ---------------------------------------------------------------- the sample */

  function hex(buffer) {
    return Array.prototype.map.call(new Uint8Array(buffer), function (b) {
      return (b < 16 ? "0" : "") + b.toString(16);
    }).join("");
  }

  function sha256(text) {
    return window.crypto.subtle.digest("SHA-256", new TextEncoder().encode(text)).then(hex);
  }

  /* The pool's ids in the protocol's order: ascending hex of sha256("<seed>:<id>"). */
  llm.order = function (ids, seed) {
    return Promise.all(ids.map(function (id) { return sha256(String(seed) + ":" + id); })).then(function (hashes) {
      var pairs = ids.map(function (id, i) { return [hashes[i], id]; });
      pairs.sort(function (a, b) { return a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0; });
      return pairs.map(function (pair) { return pair[1]; });
    });
  };

  /* How many claims each label gives a stratified sample of n (docs/llm.md, "Sample"). Whole
     numbers throughout: a label's remainder is (n * count) mod total, which orders the labels
     exactly as their fractional parts do. */
  llm.quotas = function (n, counts, labels) {
    var order = labels.filter(function (label) { return counts[label]; });
    var total = order.reduce(function (sum, label) { return sum + (counts[label] || 0); }, 0);
    var quota = {}, given = 0;
    order.forEach(function (label) {
      quota[label] = Math.floor((n * (counts[label] || 0)) / total);
      given += quota[label];
    });
    var byRemainder = order.slice().sort(function (a, b) {
      var ra = (n * (counts[a] || 0)) % total, rb = (n * (counts[b] || 0)) % total;
      return rb - ra || order.indexOf(a) - order.indexOf(b);
    });
    for (var i = 0; i < n - given; i++) quota[byRemainder[i]] += 1;
    if (n >= 4) {
      order.forEach(function (label) {
        if (quota[label] !== 0) return; // a label with claims left at none takes one from the richest
        var largest = order.reduce(function (best, other) { return quota[other] > quota[best] ? other : best; }, order[0]);
        quota[largest] -= 1;
        quota[label] += 1;
      });
    }
    return quota;
  };

  /* The sample's claim ids, in the hash order: the first n, or each label's first quota. */
  llm.sample = function (claims, n, seed, stratified, order) {
    var labelOf = {};
    claims.forEach(function (claim) { labelOf[claim.id] = claim.label; });
    return llm.order(claims.map(function (claim) { return claim.id; }), seed).then(function (ordered) {
      n = Math.min(n, ordered.length);
      if (!stratified) return ordered.slice(0, n);
      var counts = {};
      claims.forEach(function (claim) { counts[claim.label] = (counts[claim.label] || 0) + 1; });
      var quota = llm.quotas(n, counts, order), taken = {};
      return ordered.filter(function (id) {
        var label = labelOf[id];
        taken[label] = (taken[label] || 0) + 1;
        return taken[label] <= quota[label];
      });
    });
  };

  /* ---------------------------------------------------------------- the prompt and the providers */

  /* The passages shown for a claim under a condition: [{id, text}] in the build's order. */
  llm.shown = function (data, claim, condition) {
    return claim[condition].map(function (id) { return { id: id, text: data.passages[id] || "" }; });
  };

  llm.prompt = function (protocol, claim, passages) {
    var lines = passages.map(function (p) { return "[" + p.id + "] " + p.text; });
    return { system: protocol.system_prompt, user: "Claim: " + claim.text + "\n\nPassages:\n" + lines.join("\n") };
  };

  /* The provider's base URL: the one given, else the provider's own (the protocol's). */
  llm.baseUrl = function (settings, protocol) {
    var own = { anthropic: protocol.anthropic_url, openai: protocol.openai_url }[settings.provider];
    return (settings.base_url || own || "").replace(/\/+$/, "");
  };

  /* The request's address and fetch options, in the provider's wire format. */
  llm.request = function (settings, protocol, prompt) {
    var base = llm.baseUrl(settings, protocol);
    var headers = { "content-type": "application/json" };
    if (settings.provider === "anthropic") {
      headers["anthropic-version"] = protocol.anthropic_version;
      headers["anthropic-dangerous-direct-browser-access"] = "true";
      if (settings.key) headers["x-api-key"] = settings.key;
      return { url: base + "/v1/messages", init: { method: "POST", headers: headers, body: JSON.stringify({
        model: settings.model, system: prompt.system, messages: [{ role: "user", content: prompt.user }],
        max_tokens: protocol.max_tokens, temperature: protocol.temperature }) } };
    }
    if (settings.key) headers.authorization = "Bearer " + settings.key;
    return { url: base + "/chat/completions", init: { method: "POST", headers: headers, body: JSON.stringify({
      model: settings.model,
      messages: [{ role: "system", content: prompt.system }, { role: "user", content: prompt.user }],
      temperature: protocol.temperature, max_tokens: protocol.max_tokens, stream: false }) } };
  };

  /* {text, tokens_in, tokens_out} of a provider's answer body. */
  llm.readAnswer = function (provider, body) {
    var usage = (body && body.usage) || {};
    if (provider === "anthropic") {
      var text = ((body && body.content) || []).filter(function (part) { return part && part.type === "text"; })
        .map(function (part) { return part.text; }).join("");
      return { text: text, tokens_in: usage.input_tokens == null ? null : usage.input_tokens,
               tokens_out: usage.output_tokens == null ? null : usage.output_tokens };
    }
    var choice = body && body.choices && body.choices[0];
    return { text: (choice && choice.message && choice.message.content) || "",
             tokens_in: usage.prompt_tokens == null ? null : usage.prompt_tokens,
             tokens_out: usage.completion_tokens == null ? null : usage.completion_tokens };
  };

  /* A wait between retries, cut short when the run is stopped. */
  function wait(seconds, signal) {
    return new Promise(function (resolve) {
      var timer = setTimeout(resolve, seconds * 1000);
      if (signal) signal.addEventListener("abort", function () { clearTimeout(timer); resolve(); }, { once: true });
    });
  }

  function retryable(status) { return status === 429 || status >= 500; }

  /* One call with the protocol's retries (429, 5xx and network errors; Retry-After honoured;
     capped). {status: "answered", text, tokens_in, tokens_out, latency_ms, attempts} or
     {status: "failed", error, attempts}; with an AbortSignal (optional) that fires, the request in
     flight is aborted and no other is sent: {status: "aborted", error, attempts}. */
  llm.call = function (settings, protocol, prompt, signal) {
    var request = llm.request(settings, protocol, prompt);
    var init = Object.assign({}, request.init, signal ? { signal: signal } : {});
    var attempt = 0;
    function aborted() { return { status: "aborted", error: "stopped before the answer came", attempts: attempt }; }
    function again(error, after) {
      if (attempt > protocol.retries) return { status: "failed", error: error, attempts: attempt };
      var delay = Math.min(protocol.backoff_cap, after != null ? after : protocol.backoff_base * Math.pow(2, attempt - 1));
      return wait(delay, signal).then(next);
    }
    function next() {
      if (signal && signal.aborted) return Promise.resolve(aborted());
      attempt += 1;
      var started = performance.now();
      return fetch(request.url, init).then(function (response) {
        var latency = Math.round(performance.now() - started);
        if (!response.ok) {
          var error = "HTTP " + response.status;
          if (!retryable(response.status)) return { status: "failed", error: error, attempts: attempt };
          var after = parseFloat(response.headers.get("retry-after"));
          return again(error, isNaN(after) ? null : after);
        }
        return response.json().then(function (body) {
          var answer = llm.readAnswer(settings.provider, body);
          return { status: "answered", text: answer.text, tokens_in: answer.tokens_in,
                   tokens_out: answer.tokens_out, latency_ms: latency, attempts: attempt };
        }, function () {
          if (signal && signal.aborted) return aborted();
          return { status: "answered", text: "", tokens_in: null, tokens_out: null, latency_ms: latency, attempts: attempt };
        });
      }, function (err) {
        if (signal && signal.aborted) return aborted();
        return again("network: " + (err && err.message || err), null);
      });
    }
    return next();
  };

  /* ---------------------------------------------------------------- the answer */

  /* The first JSON object of a text (a fenced ```json block first), or null. */
  function firstObject(text) {
    var fenced = /```(?:json)?\s*([\s\S]*?)```/i.exec(text);
    var candidates = fenced ? [fenced[1], text] : [text];
    for (var c = 0; c < candidates.length; c++) {
      var s = candidates[c];
      for (var start = s.indexOf("{"); start !== -1; start = s.indexOf("{", start + 1)) {
        var depth = 0, inString = false, escaped = false;
        for (var i = start; i < s.length; i++) {
          var ch = s[i];
          if (inString) {
            if (escaped) escaped = false; else if (ch === "\\") escaped = true; else if (ch === "\"") inString = false;
          } else if (ch === "\"") inString = true;
          else if (ch === "{") depth += 1;
          else if (ch === "}" && --depth === 0) {
            try {
              var value = JSON.parse(s.slice(start, i + 1));
              if (value && typeof value === "object" && !Array.isArray(value)) return value;
            } catch (e) { /* not JSON: try the next brace */ }
            break;
          }
        }
      }
    }
    return null;
  }

  /* {status: "ok"|"unusable", label, cited_ids, rationale, error}. */
  llm.parseAnswer = function (text, labels) {
    var value = firstObject(text || "");
    if (!value) return { status: "unusable", label: null, cited_ids: [], rationale: "", error: "no JSON object in the answer" };
    var ids = value.evidence_ids;
    var rationale = typeof value.rationale === "string" ? value.rationale : "";
    if (labels.indexOf(value.label) === -1) {
      return { status: "unusable", label: null, cited_ids: [], rationale: rationale, error: "label " + JSON.stringify(value.label) + " is not one of the four" };
    }
    if (!Array.isArray(ids) || !ids.every(function (id) { return typeof id === "string"; })) {
      return { status: "unusable", label: null, cited_ids: [], rationale: rationale, error: "evidence_ids is not a list of strings" };
    }
    return { status: "ok", label: value.label, cited_ids: ids, rationale: rationale, error: null };
  };
})(window.claimtrace);
