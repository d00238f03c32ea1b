/* The results page's sweep charts (web/pictures.sweep_chart draws them; the data is the page's
   own #sweep-data): under the pointer, or at the setting chosen with the arrow keys while a chart
   has the focus, a cursor marks the setting and every curve's value there is read out in words
   (the chart's aria-live paragraph). No request is made: the static export works the same. */
(function () {
  "use strict";

  var NAMES = { cosine: "cosine threshold", overlap: "overlap threshold", top_n: "top-n", score: "score threshold" };

  function fixed(value, digits) { return Number(value).toFixed(digits); }

  function withInterval(p, key) {
    return fixed(p[key], 4) + " (95% " + fixed(p[key + "_lower"], 4) + " to " + fixed(p[key + "_upper"], 4) + ")";
  }

  /* The same words as web/views/results.readout. */
  function readout(chart, i) {
    var p = chart.points[i];
    var value = chart.parameter === "top_n" ? String(Math.round(p.value)) : fixed(p.value, 2);
    return chart.rule + " rule, " + NAMES[chart.parameter] + " " + value + ": F " + withInterval(p, "F") +
      ", precision " + withInterval(p, "P") + ", recall " + withInterval(p, "R") + ", A " + fixed(p.A, 4) + " (95% " + fixed(p.A_lower, 4) + " to " + fixed(p.A_upper, 4) + "), HM " +
      fixed(p.HM, 4) + ", fallback share " + fixed(100 * p.fallback, 1) + "% (" + p.fallbacks + " of " +
      chart.claims + ")";
  }

  function attach(box, chart) {
    var svg = box.querySelector("svg");
    var cursor = svg.querySelector(".cursor");
    var said = document.getElementById("readout-" + chart.id);
    var x0 = parseFloat(svg.dataset.x0), xlen = parseFloat(svg.dataset.xlen);
    var min = parseFloat(svg.dataset.xmin), max = parseFloat(svg.dataset.xmax);
    var current = chart.start;

    function xOf(value) { return x0 + (value - min) / (max - min) * xlen; }

    function show(i) {
      current = i;
      var x = xOf(chart.points[i].value).toFixed(2);
      cursor.setAttribute("x1", x);
      cursor.setAttribute("x2", x);
      box.classList.add("reading");
      var text = readout(chart, i);
      if (said.textContent !== text) said.textContent = text;
    }

    function nearest(event) {
      var box = svg.getBoundingClientRect();
      var user = (event.clientX - box.left) / box.width * svg.viewBox.baseVal.width;
      var best = 0;
      chart.points.forEach(function (p, i) {
        if (Math.abs(xOf(p.value) - user) < Math.abs(xOf(chart.points[best].value) - user)) best = i;
      });
      return best;
    }

    svg.addEventListener("pointermove", function (event) { show(nearest(event)); });
    svg.addEventListener("pointerdown", function (event) { show(nearest(event)); });
    box.addEventListener("focus", function () { show(current); });
    box.addEventListener("keydown", function (event) {
      var last = chart.points.length - 1;
      var moves = { ArrowLeft: current - 1, ArrowDown: current - 1, ArrowRight: current + 1, ArrowUp: current + 1,
        Home: 0, End: last };
      if (!(event.key in moves)) return;
      event.preventDefault();
      show(Math.max(0, Math.min(last, moves[event.key])));
    });
  }

  function start() {
    var data = document.getElementById("sweep-data");
    if (!data) return;
    var charts = {};
    JSON.parse(data.textContent).charts.forEach(function (chart) { charts[chart.id] = chart; });
    Array.prototype.forEach.call(document.querySelectorAll(".sweep-chart"), function (box) {
      attach(box, charts[box.getAttribute("data-chart")]);
    });
  }

  start();
})();
