/* claimtrace's scripts: the Explore table's filters and sorting, the live model-input editor, the
   verdict's charts and the forms. No dependencies, nothing loaded from the internet. Every text
   goes into the page through textContent, never innerHTML.

   They come in parts, classic scripts that share one object, window.claimtrace: a browser runs
   no ES module from file://, where the static export is opened. Every page loads them in order:

     app-core.js     this object: the state the parts share, and the helpers they all use
     app-table.js    the classifier's table, and the verdict of a claim alone computed from it
     app-charts.js   the verdict's charts: where each logit comes from, the margin, each token
     app-editor.js   the live model-input editor, and a static claim page's charts
     app-explore.js  Explore's claims table, and the tables whose heads sort them
     app-forms.js    the claim form, the forms that filter in place, and a run's upload and box
     app-tour.js     the tour's pictures opened larger in a dialog, its steps moved with the arrow keys
                     (linked by the tour page alone, deferred: it runs after app.js)
     app-llm-settings.js  the LLM provider settings and key, and their dialog (the header's button)
     app-llm.js      the LLM harness: the audit log, the sample, the prompt, the providers, the answer
     app-llm-score.js  an LLM run's file, its check on import, and its scores
     app-llm-page.js one claim asked, and a claim page's second opinion
     app-llm-log.js  the audit log page: its counts, filter, review, CSV and clearing
     app-llm-run.js  the evaluation page: a run's estimate, its calls, stop, results, export, import
     app.js          the start: the static export's shared parts put back, then each part started

   Each part adds its own entry to the object (claimtrace.table, claimtrace.charts, ...). */
(function () {
  "use strict";

  var body = document.body;

  var claimtrace = (window.claimtrace = {
    body: body,
    root: body.getAttribute("data-root") || "",
    /* Everything a part keeps between calls lives here, not in a part's own variables. */
    state: {
      table: null, // the classifier's table, decoded once (app-table.js)
      charts: null, // the verdict's charts, built once and then updated in place (app-charts.js)
      drawn: null, // the result the charts show
      editor: null, // the live editor's elements, its claim and whether its table is loaded
      explore: null, // Explore's claims, filters, sort and page (app-explore.js)
      llm: null, // the evaluation page's data and its run (app-llm-page.js)
      scripts: {}, // the scripts loaded after the page, by address: each asked for once (loadScript)
      resizing: null // the timer that waits for the window to stop resizing (app.js)
    }
  });

  claimtrace.el = function (tag, attrs, children) {
    var node = document.createElement(tag);
    if (attrs) {
      for (var key in attrs) {
        if (key === "text") node.textContent = attrs[key];
        else if (key === "cls") node.className = attrs[key];
        else node.setAttribute(key, attrs[key]);
      }
    }
    (children || []).forEach(function (child) {
      node.appendChild(typeof child === "string" ? document.createTextNode(child) : child);
    });
    return node;
  };

  claimtrace.signed = function (x, digits) {
    return (x >= 0 ? "+" : "") + x.toFixed(digits);
  };

  /* A script file beside the page (works from file://, where fetch does not), loaded once
     however many parts ask for it. */
  claimtrace.loadScript = function (src) {
    var loading = claimtrace.state.scripts;
    if (!loading[src]) loading[src] = new Promise(function (resolve, reject) {
      var script = document.createElement("script");
      script.src = src;
      script.onload = resolve;
      script.onerror = function () {
        delete loading[src]; // asked again next time
        reject(new Error("could not load " + src));
      };
      document.head.appendChild(script);
    });
    return loading[src];
  };

  /* A table wider than the screen scrolls inside its box (style.css): such a box is made
     reachable from the keyboard and shows a shadow at the edge it scrolls to. */
  claimtrace.markScrollables = function (scope) {
    var boxes = (scope || document).querySelectorAll("table, .scroll");
    Array.prototype.forEach.call(boxes, function (box) {
      if (box.classList.contains("scroll") && box.querySelector("table.scrolls")) return;
      var scrolls = box.scrollWidth > box.clientWidth + 1 && getComputedStyle(box).overflowX !== "visible";
      box.classList.toggle("scrolls", scrolls);
      if (scrolls) {
        box.setAttribute("tabindex", "0");
        if (!box.hasAttribute("aria-label")) box.setAttribute("aria-label", "a table that scrolls sideways");
      } else if (box.getAttribute("aria-label") === "a table that scrolls sideways") {
        box.removeAttribute("tabindex");
        box.removeAttribute("aria-label");
      }
    });
  };
})();
