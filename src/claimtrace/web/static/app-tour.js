/* The tour's pictures, larger in place (app-core.js lists the parts). Linked by the tour page
   alone, deferred: it runs after app.js, on the page as drawn.

   Each picture is a link to its file, which is what a browser without this script opens. With
   it, the link opens a modal <dialog>: the picture as large as the window allows, its step, its
   alt text and caption, buttons for the previous and next steps and one to close. Escape closes
   it (the dialog's own cancel) and the focus goes back to the link of the step last shown. The
   left and right arrow keys move between steps, in the dialog and on the page, except while a
   form field has the focus (the theme's select uses them). */
(function (claimtrace) {
  "use strict";

  var el = claimtrace.el;
  var FIELDS = /^(INPUT|SELECT|TEXTAREA)$/;

  /* The tour's steps, in page order: each with its link, picture, caption and place. */
  function readSteps() {
    var steps = [];
    Array.prototype.forEach.call(document.querySelectorAll(".tour-journey"), function (journey) {
      var title = journey.querySelector("h2").textContent;
      var links = journey.querySelectorAll("a.tour-zoom");
      Array.prototype.forEach.call(links, function (link, i) {
        var figure = link.closest("figure");
        steps.push({
          link: link,
          picture: link.querySelector("img"),
          caption: figure.querySelector(".tour-caption").textContent,
          place: title + ": step " + (i + 1) + " of " + links.length
        });
      });
    });
    return steps;
  }

  function makeDialog() {
    var title = el("h2", { id: "tour-lightbox-title", cls: "lightbox-title" });
    var close = el("button", { type: "button", cls: "lightbox-close", text: "Close" });
    var image = el("img", { cls: "lightbox-picture", alt: "" });
    var caption = el("p", { id: "tour-lightbox-caption", cls: "lightbox-caption" });
    var previous = el("button", { type: "button", cls: "lightbox-previous", text: "← Previous step" });
    var next = el("button", { type: "button", cls: "lightbox-next", text: "Next step →" });
    /* Everything inside one box: a click on the dialog itself is a click on its backdrop. */
    var dialog = el("dialog", { id: "tour-lightbox", cls: "lightbox", "aria-labelledby": title.id,
                                "aria-describedby": caption.id }, [el("div", { cls: "lightbox-body" }, [
      el("div", { cls: "lightbox-bar" }, [title, close]),
      el("div", { cls: "lightbox-frame" }, [image]),
      caption,
      el("p", { cls: "lightbox-nav" }, [previous, " ", next, " ",
        el("span", { cls: "muted", text: "The arrow keys move between steps; Escape closes." })])
    ])]);
    document.querySelector("main").appendChild(dialog);
    return { dialog: dialog, title: title, close: close, image: image, caption: caption, previous: previous, next: next };
  }

  function start() {
    var steps = readSteps();
    if (!steps.length || typeof HTMLDialogElement === "undefined") return;
    var box = makeDialog();
    var shown = 0;

    function show(index) {
      shown = Math.max(0, Math.min(steps.length - 1, index));
      var step = steps[shown];
      box.image.src = step.picture.currentSrc || step.picture.src;
      box.image.alt = step.picture.alt;
      box.title.textContent = step.place;
      box.caption.textContent = step.caption;
      box.previous.disabled = shown === 0;
      box.next.disabled = shown === steps.length - 1;
      box.dialog.setAttribute("data-step", String(shown));
    }

    function open(index) {
      show(index);
      if (!box.dialog.open) box.dialog.showModal();
      box.close.focus();
    }

    /* On the page: the step whose link has the focus, else the one at the top of the window. */
    function current(direction) {
      var focused = steps.findIndex(function (step) { return step.link === document.activeElement; });
      if (focused !== -1) return focused + direction;
      var below = steps.findIndex(function (step) { return step.link.getBoundingClientRect().top > 1; });
      if (below === -1) return steps.length - 1; // past the last step's top
      return direction > 0 ? below : below - 1;
    }

    function move(index) {
      var step = steps[Math.max(0, Math.min(steps.length - 1, index))];
      step.link.focus({ preventScroll: true });
      step.link.closest("li").scrollIntoView({ block: "start" });
    }

    steps.forEach(function (step, index) {
      step.link.setAttribute("aria-haspopup", "dialog");
      step.link.addEventListener("click", function (event) {
        if (event.ctrlKey || event.metaKey || event.shiftKey || event.button !== 0) return; // a new tab: the file
        event.preventDefault();
        open(index);
      });
    });
    box.close.addEventListener("click", function () { box.dialog.close(); });
    box.previous.addEventListener("click", function () { show(shown - 1); });
    box.next.addEventListener("click", function () { show(shown + 1); });
    /* A click on the backdrop (outside the dialog's box) closes it too. */
    box.dialog.addEventListener("click", function (event) {
      if (event.target === box.dialog) box.dialog.close();
    });
    box.dialog.addEventListener("close", function () {
      box.image.removeAttribute("src");
      steps[shown].link.focus();
    });

    document.addEventListener("keydown", function (event) {
      if (event.key !== "ArrowRight" && event.key !== "ArrowLeft") return;
      if (event.altKey || event.ctrlKey || event.metaKey || event.shiftKey || event.defaultPrevented) return;
      var target = event.target;
      if (target && (FIELDS.test(target.tagName) || target.isContentEditable)) return;
      var direction = event.key === "ArrowRight" ? 1 : -1;
      event.preventDefault();
      if (box.dialog.open) show(shown + direction);
      else move(current(direction));
    });
    document.body.setAttribute("data-tour", "ready");
  }

  start();
})(window.claimtrace);
