/* claimtrace's theme: light, dark, or the system's (prefers-color-scheme).

   Loaded in <head>, before the stylesheet applies to anything drawn, so a page never shows the
   other theme first: it sets <html data-theme="light|dark"> at once (no attribute: the system's,
   which style.css follows through color-scheme and light-dark()). The choice comes from the
   address (?theme=light|dark|system, then kept) or from what was kept in localStorage. Every
   colour of the site is a variable of style.css, so a page knows nothing of the theme.

   The header's control (hidden until this script shows it: without scripts it would do
   nothing) sets and keeps the choice. */
(function () {
  "use strict";

  var KEY = "claimtrace-theme";
  var CHOICES = ["system", "light", "dark"];
  var root = document.documentElement;

  function kept() {
    try { return window.localStorage.getItem(KEY); } catch (e) { return null; } // storage refused
  }

  function keep(choice) {
    try { window.localStorage.setItem(KEY, choice); } catch (e) { /* storage refused: this page only */ }
  }

  function apply(choice) {
    if (choice === "light" || choice === "dark") root.setAttribute("data-theme", choice);
    else root.removeAttribute("data-theme");
  }

  function asked() {
    var match = /[?&]theme=([a-z]+)/.exec(window.location.search);
    return match && CHOICES.indexOf(match[1]) >= 0 ? match[1] : null;
  }

  var choice = asked();
  var saved = kept();
  if (choice) keep(choice);
  else choice = CHOICES.indexOf(saved) >= 0 ? saved : "system";
  apply(choice);

  /* The address keeps saying what the page shows: a ?theme= the reader changed is rewritten. */
  function rewriteAddress(next) {
    if (!asked()) return;
    var search = window.location.search.replace(/([?&]theme=)[a-z]+/, "$1" + next);
    try { history.replaceState(history.state, "", window.location.pathname + search + window.location.hash); } catch (e) { /* some file:// setups refuse */ }
  }

  function wire() {
    var select = document.getElementById("theme-choice");
    if (!select) return;
    select.value = choice;
    select.closest("[hidden]") && select.closest("[hidden]").removeAttribute("hidden");
    select.addEventListener("change", function () {
      choice = CHOICES.indexOf(select.value) >= 0 ? select.value : "system";
      keep(choice);
      apply(choice);
      rewriteAddress(choice);
    });
  }

  /* The header of a static page is put back by app.js at the end of <body>, before this event. */
  document.addEventListener("DOMContentLoaded", wire);
})();
