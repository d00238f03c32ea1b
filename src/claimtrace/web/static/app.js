/* claimtrace's start (app-core.js lists the parts): the last script of every page, after the
   parts and, on a static claim page, after its split's shared parts (static/shared-<split>.js,
   which web/site.py puts just before this script). */
(function (claimtrace) {
  "use strict";

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

  /* A box's need to scroll changes with the window's width: looked at again once resizing stops. */
  window.addEventListener("resize", function () {
    clearTimeout(claimtrace.state.resizing);
    claimtrace.state.resizing = setTimeout(function () { claimtrace.markScrollables(); }, 150);
  });

  /* Scripts named by an element's data-scripts (addresses from the site's root), in order. */
  function loadNamed(element) {
    return element.getAttribute("data-scripts").split(" ").reduce(function (loaded, src) {
      return loaded.then(function () { return claimtrace.loadScript(claimtrace.root + src); });
    }, Promise.resolve());
  }

  /* The LLM scripts: linked by the evaluation and audit log pages; a claim page, or the live
     page on a typed claim, loads them only for its second opinion, from the addresses its box
     names. */
  function startLlm() {
    if (claimtrace.llmPages) {
      claimtrace.llmPages.startEvaluation();
      claimtrace.llmLog.start();
      return;
    }
    var box = document.getElementById("second-opinion");
    if (!box) return;
    loadNamed(box).then(function () {
      claimtrace.llmPages.startSecondOpinion();
      box.setAttribute("data-ready", "true");
    }, function (err) {
      document.getElementById("second-opinion-status").textContent = "The second opinion cannot start: " + err.message;
    });
  }

  /* A page answered "being built" (503) or "being computed" (202) names its status and how often
     to ask: the same address is asked again that often; while the answer is the same, its message
     takes the new one's place (a progress bar moves on), and once it is another the page reloads
     (no refresh on a timer, which would take the page from under its reader). */
  function reloadWhenReady() {
    var waiting = document.querySelector("[data-reload-while]");
    if (!waiting || !window.fetch || !window.DOMParser) return;
    var status = Number(waiting.getAttribute("data-reload-while"));
    var every = 1000 * Number(waiting.getAttribute("data-every") || 5);
    function ask() {
      fetch(window.location.href, { cache: "no-store" }).then(function (answer) {
        if (answer.status !== status) { window.location.reload(); return null; }
        return answer.text().then(function (html) {
          var fresh = new DOMParser().parseFromString(html, "text/html").querySelector("[data-reload-while]");
          if (fresh) waiting.innerHTML = fresh.innerHTML;
          setTimeout(ask, every);
        });
      }).catch(function () { setTimeout(ask, every); });
    }
    setTimeout(ask, every);
  }

  /* The header's navigation, folded behind its menu button on a narrow screen (style.css): the
     button says whether it is open (aria-expanded) and what it opens (aria-controls); Escape
     closes it and gives the button the focus back. Without this script the links stay shown. */
  function startMenu() {
    var header = document.querySelector("header.top");
    var button = header && header.querySelector(".menu-button");
    if (!button) return;
    function show(open) {
      header.classList.toggle("open", open);
      button.setAttribute("aria-expanded", open ? "true" : "false");
    }
    header.setAttribute("data-menu", "");
    button.hidden = false;
    button.addEventListener("click", function () { show(button.getAttribute("aria-expanded") !== "true"); });
    header.addEventListener("keydown", function (event) {
      if (event.key === "Escape" && button.getAttribute("aria-expanded") === "true") {
        show(false);
        button.focus();
      }
    });
  }

  /* The header's "LLM settings" button (hidden without this script): the settings' dialog, its
     code loaded the first time the button is used, on a page that has not linked it. */
  function startLlmSettings() {
    var button = document.getElementById("llm-settings-button");
    if (!button) return;
    button.hidden = false;
    button.addEventListener("click", function () {
      var ready = claimtrace.llmSettings ? Promise.resolve() : loadNamed(button);
      ready.then(function () { claimtrace.llmSettings.open(button); }, function (err) {
        button.setAttribute("title", "The settings cannot open: " + err.message);
      });
    });
  }

  expandShared();
  startMenu();
  startLlmSettings();
  reloadWhenReady();
  claimtrace.explore.start();
  claimtrace.explore.startSortable();
  claimtrace.editor.start();
  claimtrace.editor.startStaticCharts();
  claimtrace.forms.startClaimForm();
  claimtrace.forms.startInPlaceForms();
  claimtrace.forms.startRunBox();
  claimtrace.forms.startRunFilter();
  claimtrace.forms.startRunUpload();
  startLlm();
  claimtrace.markScrollables();
})(window.claimtrace);
