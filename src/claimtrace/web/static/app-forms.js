/* claimtrace's forms (app-core.js lists the parts): the live page's claim form, the forms that
   filter in place, and Compare's run filter and upload; and the "your system" box a static claim
   page shows for the run its address names. */
(function (claimtrace) {
  "use strict";

  /* ---------------------------------------------------------------- the claim form */

  /* The form is a GET, so the address bar is the share link and a reload traces again; a text
     too long for an address (the server takes 16 KB of headers) goes as a POST instead. While
     the box holds another text than the one traced, the results below are marked stale. */
  var MAX_ADDRESS = 8000;

  /* The rule chosen on the form against the one the results below were retrieved under (a
     course claim's results name none: any choice applies to a typed text only). */
  function ruleChanged(form) {
    var choice = form.querySelector(".rule-choice");
    var checked = form.querySelector("input[name=rule]:checked");
    var traced = choice ? choice.getAttribute("data-traced-rule") : "";
    return Boolean(traced && checked && checked.value !== traced);
  }

  function markStale(box, note, results) {
    var stale = box.value.trim() !== (box.getAttribute("data-traced") || "").trim() || ruleChanged(box.form);
    note.hidden = !stale;
    results.forEach(function (section) {
      if (!section) return;
      if (stale) section.setAttribute("data-stale", "true"); else section.removeAttribute("data-stale");
      if ("inert" in section) section.inert = stale;
    });
  }

  /* A trace under way: the form and the results it will replace say they are busy (aria-busy),
     and the status line says what is happening. */
  function markBusy(form, results) {
    form.setAttribute("aria-busy", "true");
    results.forEach(function (section) { if (section) section.setAttribute("aria-busy", "true"); });
    var status = document.getElementById("trace-status");
    if (status) { status.hidden = false; status.textContent = "Tracing the claim through the build…"; }
  }

  function startClaimForm() {
    var form = document.querySelector(".claim-form");
    if (!form) return;
    var box = document.getElementById("claim-text");
    var note = document.getElementById("stale-note");
    var results = [document.getElementById("editor"), document.getElementById("live-trace")];
    form.addEventListener("submit", function () {
      if (box && encodeURIComponent(box.value).length > MAX_ADDRESS) form.method = "post";
      var button = form.querySelector("button[type=submit]");
      if (button) { button.disabled = true; button.textContent = "Tracing…"; }
      markBusy(form, results);
    });
    /* An example claim is a link to its trace (?claim=): the same busy state while it loads. */
    Array.prototype.forEach.call(document.querySelectorAll("a.example"), function (link) {
      link.addEventListener("click", function () { markBusy(form, results); });
    });
    if (!box || !note || box.disabled) return;
    /* Ctrl+Enter (Cmd+Enter on a Mac) in the box traces the text, as the button does. */
    box.addEventListener("keydown", function (event) {
      if (event.key !== "Enter" || !(event.ctrlKey || event.metaKey)) return;
      event.preventDefault();
      if (form.requestSubmit) form.requestSubmit(); else form.submit();
    });
    box.addEventListener("input", function () { markStale(box, note, results); });
    Array.prototype.forEach.call(form.querySelectorAll("input[name=rule]"), function (radio) {
      radio.addEventListener("change", function () { markStale(box, note, results); });
    });
    markStale(box, note, results);
  }

  /* ---------------------------------------------------------------- forms that filter in place */

  /* Enter in a filter box must not send the form (the page would reload). Here, not in an
     onsubmit attribute: the server's Content-Security-Policy allows no inline script. */
  function startInPlaceForms() {
    Array.prototype.forEach.call(document.querySelectorAll("form.filters"), function (form) {
      form.addEventListener("submit", function (event) { event.preventDefault(); });
    });
  }

  /* ---------------------------------------------------------------- your system beside the notebook's */

  /* A static claim page holds one "your system" box per exported run, hidden: ?run=<digest>
     shows that run's (the server renders only the chosen one). */
  function startRunBox() {
    var match = /[?&]run=([^&#]+)/.exec(window.location.search);
    if (!match) return;
    var key = decodeURIComponent(match[1]);
    Array.prototype.forEach.call(document.querySelectorAll(".run-box[hidden]"), function (box) {
      if (box.getAttribute("data-run") === key) box.hidden = false;
    });
  }

  /* The claim-by-claim table of a run: which rows each choice of the filter keeps. */
  var RUN_FILTERS = {
    "all": function () { return true; },
    "run-right-notebook-wrong": function (r) { return r.dataset.runRight === "true" && r.dataset.notebookRight === "false"; },
    "notebook-right-run-wrong": function (r) { return r.dataset.runRight === "false" && r.dataset.notebookRight === "true"; },
    "both-wrong": function (r) { return r.dataset.runRight === "false" && r.dataset.notebookRight === "false"; },
    "differ": function (r) { return r.dataset.differ === "true"; }
  };

  function startRunFilter() {
    var select = document.getElementById("run-filter");
    if (!select) return;
    var rows = document.querySelectorAll("table.run-claims tbody tr");
    var count = document.querySelector(".run-filter .filter-count");
    function apply() {
      var keep = RUN_FILTERS[select.value] || RUN_FILTERS.all, shown = 0;
      Array.prototype.forEach.call(rows, function (row) {
        var on = keep(row);
        row.hidden = !on;
        if (on) shown += 1;
      });
      if (count) count.textContent = shown + (shown === 1 ? " claim" : " claims");
    }
    var wanted = /[?&]show=([^&#]+)/.exec(window.location.search);
    if (wanted && RUN_FILTERS[wanted[1]]) select.value = wanted[1];
    select.addEventListener("change", apply);
    apply();
  }

  /* Upload predictions files: each file's bytes go to /api/compare, one after another. One file
     opens its page; several are listed as they come back, each with its page's link or the
     server's one-line error, and the status line (a live region) counts them. */
  function postRun(form, file, name) {
    var url = form.getAttribute("action") + (name ? "?name=" + encodeURIComponent(name) : "");
    return fetch(url, { method: "POST", body: file, headers: { "Content-Type": "application/json" } })
      .then(function (response) {
        return response.json().then(function (body) { return { ok: response.ok, body: body }; },
          function () { return { ok: false, body: { error: "the server answered " + response.status } }; });
      })
      .catch(function () { return { ok: false, body: { error: "the server did not answer" } }; });
  }

  function listResult(list, file, result) {
    var item = document.createElement("li");
    item.className = result.ok ? "upload-ok" : "upload-refused";
    var name = document.createElement("code");
    name.textContent = file.name;
    item.appendChild(name);
    item.appendChild(document.createTextNode(": "));
    if (result.ok) {
      var link = document.createElement("a");
      link.href = claimtrace.root + result.body.url;
      link.textContent = result.body.name;
      item.appendChild(document.createTextNode("compared as "));
      item.appendChild(link);
      item.appendChild(document.createTextNode(" (" + result.body.split + ")"));
    } else {
      item.appendChild(document.createTextNode("refused: " + result.body.error));
    }
    list.appendChild(item);
  }

  function uploadAll(form, files, status, list) {
    var done = 0, kept = 0, button = form.querySelector("button");
    button.disabled = true;
    list.textContent = "";
    function next() {
      if (done === files.length) {
        button.disabled = false;
        status.textContent = kept + " of " + files.length + " files compared; reload this page to see them ranked.";
        return;
      }
      var file = files[done];
      status.textContent = "Checking " + file.name + " (" + (done + 1) + " of " + files.length + ")…";
      postRun(form, file, file.name.replace(/\.json$/i, "").slice(0, 80)).then(function (result) {
        listResult(list, file, result);
        done += 1;
        if (result.ok) kept += 1;
        next();
      });
    }
    next();
  }

  function startRunUpload() {
    var form = document.querySelector("form.run-upload");
    if (!form) return;
    var status = document.querySelector(".upload-status");
    var list = document.querySelector(".upload-results");
    form.addEventListener("submit", function (event) {
      event.preventDefault();
      var files = Array.prototype.slice.call(form.querySelector("input[type=file]").files);
      if (!files.length) return;
      if (files.length > 1 && list) { uploadAll(form, files, status, list); return; }
      var file = files[0];
      status.textContent = "Checking " + file.name + "…";
      postRun(form, file, form.querySelector("input[name=name]").value.trim()).then(function (result) {
        if (!result.ok) { status.textContent = file.name + ": " + result.body.error; return; }
        window.location.href = claimtrace.root + result.body.url;
      });
    });
  }

  claimtrace.forms = {
    startClaimForm: startClaimForm,
    startInPlaceForms: startInPlaceForms,
    startRunBox: startRunBox,
    startRunFilter: startRunFilter,
    startRunUpload: startRunUpload
  };
})(window.claimtrace);
