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

  function markStale(box, note, results) {
    var stale = box.value.trim() !== (box.getAttribute("data-traced") || "").trim();
    note.hidden = !stale;
    results.forEach(function (section) {
      if (!section) return;
      if (stale) section.setAttribute("data-stale", "true"); else section.removeAttribute("data-stale");
      if ("inert" in section) section.inert = stale;
    });
  }

  function startClaimForm() {
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
    box.addEventListener("input", function () { markStale(box, note, results); });
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

  /* Upload a predictions file: its bytes go to /api/compare, and its page opens. */
  function startRunUpload() {
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
          window.location.href = claimtrace.root + result[1].url;
        })
        .catch(function () { status.textContent = "The server did not answer."; });
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
