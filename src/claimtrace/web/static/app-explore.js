/* claimtrace's Explore (app-core.js lists the parts): the claims table, drawn from the page's
   data (#claims-data) a page of rows at a time: the filters and the sort run over every claim,
   the page shows `page` of them. And the tables whose heads sort them (the scoreboard). */
(function (claimtrace) {
  "use strict";

  var el = claimtrace.el;

  var SHORT = { SUPPORTS: "SUP", REFUTES: "REF", NOT_ENOUGH_INFO: "NEI", DISPUTED: "DIS" };

  /* The page's compact rows (web.render.claims_table) as one object per claim. */
  function claimRows(data) {
    var at = {};
    data.fields.forEach(function (name, i) { at[name] = i; });
    return data.rows.map(function (r) {
      var row = { position: r[at.position], id: r[at.id], text: r[at.text], lower: String(r[at.text]).toLowerCase() };
      row.label = r[at.label] === null ? "" : data.labels[r[at.label]];
      ["gold-alone", "gold-notebook", "retrieved-alone", "retrieved-notebook"].forEach(function (key) {
        row[key] = r[at[key]] === null ? "" : data.labels[r[at[key]]];
      });
      row.passed = r[at.passed] === null ? "" : r[at.passed];
      row.fallback = r[at.fallback] === null ? "" : (r[at.fallback] ? "yes" : "no");
      row.f = r[at.f] === null ? "" : r[at.f];
      /* any gold passage among the retrieved ones: "yes", "no", or "" (unlabelled, not retrieved) */
      row.found = at.found === undefined || r[at.found] === null || r[at.found] === undefined ? "" : (r[at.found] ? "yes" : "no");
      return row;
    });
  }

  function verdictCell(row, key, labelled) {
    var v = row[key];
    var cell = el("td", { cls: "l" });
    if (!v) { cell.textContent = "—"; } else {
      cell.appendChild(el("span", { cls: "mini v-" + v, title: v, text: SHORT[v] }));
      if (labelled) cell.appendChild(v === row.label ? el("span", { cls: "right", title: "right", text: "✓" }) : el("span", { cls: "wrong", title: "wrong", text: "✗" }));
    }
    return cell;
  }

  function claimRow(row, explore) {
    var tr = el("tr", { "data-id": row.id, "data-label": row.label, "data-f": String(row.f), "data-fallback": row.fallback, "data-found": row.found, "data-passed": String(row.passed) });
    tr.appendChild(el("td", { text: String(row.position + 1) }));
    /* a preview export writes some claim pages only: a link to another is disabled and marked,
       as site.py marks the links it writes itself */
    var link = explore.exported && !explore.exported.has(row.id)
      ? el("a", { "data-not-exported": "claim/" + row.id + ".html", "aria-disabled": "true", title: "not exported", text: row.id })
      : el("a", { href: claimtrace.root + "claim/" + row.id + ".html", text: row.id });
    tr.appendChild(el("td", { cls: "l" }, [link, el("span", { cls: "ctext", text: row.text })]));
    if (explore.labelled) tr.appendChild(el("td", { cls: "l" }, [el("span", { cls: "mini v-" + row.label, title: row.label, text: SHORT[row.label] || "" })]));
    explore.columns.forEach(function (key) { tr.appendChild(verdictCell(row, key, explore.labelled)); });
    tr.appendChild(el("td", { text: row.passed === "" ? "—" : String(row.passed) }));
    tr.appendChild(el("td", { text: row.fallback === "" ? "—" : (row.fallback === "yes" ? "yes" : "") }));
    if (explore.labelled) tr.appendChild(el("td", { text: row.f === "" ? "—" : row.f.toFixed(2) }));
    return tr;
  }

  /* ---------------------------------------------------------------- choosing the rows */

  function value(control) { return control ? control.value : ""; }

  /* What the filters ask for. */
  function filters(controls) {
    return {
      text: value(controls.text).trim().toLowerCase(),
      label: value(controls.label), verdict: value(controls.verdict), right: value(controls.right),
      fallback: value(controls.fallback), found: value(controls.found), run: value(controls.run),
      source: value(controls.source), protocol: value(controls.protocol)
    };
  }

  function verdictOf(row, filter) { return row[filter.source + "-" + filter.protocol] || ""; }

  /* The "your run" filter (run = digest:who): claims your run gets right and the notebook wrong,
     or the other way round. */
  function keepsForRun(explore, filter, row, verdict) {
    var wanted = filter.run.split(":"), mine = (explore.runRight[wanted[0]] || [])[row.position];
    if (mine === null || mine === undefined || !verdict) return false;
    var notebookRight = verdict === row.label;
    if (wanted[1] === "run" && !(mine && !notebookRight)) return false;
    if (wanted[1] === "notebook" && !(notebookRight && !mine)) return false;
    return true;
  }

  function keeps(explore, filter, row) {
    var verdict = verdictOf(row, filter);
    if (filter.text && row.lower.indexOf(filter.text) < 0 && row.id.indexOf(filter.text) < 0) return false;
    if (filter.label && row.label !== filter.label) return false;
    if (filter.verdict && verdict !== filter.verdict) return false;
    if (filter.right === "right" && verdict !== row.label) return false;
    if (filter.right === "wrong" && (verdict === row.label || !verdict)) return false;
    if (filter.fallback && row.fallback !== filter.fallback) return false;
    if (filter.found && row.found !== filter.found) return false;
    return !filter.run || keepsForRun(explore, filter, row, verdict);
  }

  function sortValue(explore, row) {
    var v = row[explore.sortKey];
    if (explore.sortType === "num") return v === "" ? -Infinity : Number(v);
    if (explore.sortType === "id") return parseInt(String(v).replace(/\D+/g, ""), 10) || 0;
    return String(v);
  }

  /* Rows sorted by the chosen column, ties kept in their order. */
  function sorted(explore, rows) {
    var keyed = rows.map(function (row, i) { return [sortValue(explore, row), i, row]; });
    keyed.sort(function (a, b) {
      if (a[0] < b[0]) return -explore.sortDir;
      if (a[0] > b[0]) return explore.sortDir;
      return a[1] - b[1];
    });
    return keyed.map(function (k) { return k[2]; });
  }

  function select(explore) {
    var filter = filters(explore.controls);
    explore.shown = sorted(explore, explore.all.filter(function (row) { return keeps(explore, filter, row); }));
    if (!explore.count) return;
    var correct = 0, judged = 0;
    explore.shown.forEach(function (row) {
      var verdict = verdictOf(row, filter);
      if (verdict && row.label) { judged += 1; if (verdict === row.label) correct += 1; }
    });
    explore.count.textContent = explore.shown.length + " of " + explore.all.length + " claims shown" +
      (judged ? "; " + filter.source + " evidence, " + filter.protocol + ": " + correct + "/" + judged + " right" : "");
  }

  /* ---------------------------------------------------------------- drawing the page of rows */

  function drawPager(explore, pages) {
    var size = explore.pageSize, shown = explore.shown.length, page = explore.page;
    explore.pager.hidden = pages < 2;
    explore.pageOf.textContent = "claims " + (shown ? page * size + 1 : 0) + "–" + Math.min(shown, (page + 1) * size) + " of " + shown + " (page " + (page + 1) + " of " + pages + ")";
    explore.prev.disabled = page === 0;
    explore.next.disabled = page >= pages - 1;
  }

  function draw(explore) {
    var size = explore.pageSize;
    var pages = Math.max(1, Math.ceil(explore.shown.length / size));
    explore.page = Math.min(Math.max(explore.page, 0), pages - 1);
    var fragment = document.createDocumentFragment();
    explore.shown.slice(explore.page * size, (explore.page + 1) * size).forEach(function (row) { fragment.appendChild(claimRow(row, explore)); });
    explore.tbody.textContent = "";
    explore.tbody.appendChild(fragment);
    if (explore.noMatch) explore.noMatch.hidden = explore.shown.length > 0;
    explore.heads.forEach(function (th) {
      th.removeAttribute("aria-sort");
      if (th.getAttribute("data-key") === explore.sortKey) th.setAttribute("aria-sort", explore.sortDir > 0 ? "ascending" : "descending");
    });
    if (explore.pager) drawPager(explore, pages);
  }

  /* ---------------------------------------------------------------- the view in the address */

  /* The filters, the sort and the page live in the URL (?label=…&sort=f&dir=desc&page=2), so a
     view can be shared. */
  function saveState(explore) {
    var params = new URLSearchParams();
    Object.keys(explore.controls).forEach(function (k) {
      var c = explore.controls[k];
      if (c && c.value !== c.getAttribute("data-default")) params.set(k, c.value);
    });
    if (explore.sortKey !== "position" || explore.sortDir !== 1) { params.set("sort", explore.sortKey); params.set("dir", explore.sortDir > 0 ? "asc" : "desc"); }
    if (explore.page > 0) params.set("page", String(explore.page + 1));
    var query = params.toString();
    try { history.replaceState(null, "", window.location.pathname + (query ? "?" + query : "") + window.location.hash); } catch (e) { /* some file:// setups refuse */ }
  }

  function loadState(explore) {
    var params = new URLSearchParams(window.location.search);
    Object.keys(explore.controls).forEach(function (k) {
      var c = explore.controls[k];
      if (!c) return;
      c.setAttribute("data-default", c.value);
      if (params.has(k)) c.value = params.get(k);
    });
    var key = params.get("sort");
    var th = key && explore.table.tHead.querySelector('th[data-key="' + key.replace(/[^a-z-]/g, "") + '"]');
    if (th) { explore.sortKey = key; explore.sortType = th.getAttribute("data-type") || "str"; explore.sortDir = params.get("dir") === "desc" ? -1 : 1; }
    explore.page = (parseInt(params.get("page"), 10) || 1) - 1;
  }

  /* ---------------------------------------------------------------- starting */

  function update(explore, keepPage) {
    if (!keepPage) explore.page = 0;
    select(explore);
    draw(explore);
    saveState(explore);
  }

  function turnPage(explore, by) {
    explore.page += by;
    draw(explore);
    saveState(explore);
  }

  /* A head sorts by its column; a second click (or Enter) reverses. */
  function sortOnClick(explore, th) {
    var key = th.getAttribute("data-key");
    if (!key) return;
    th.tabIndex = 0;
    th.title = "sort by " + th.textContent.trim();
    function go() {
      if (explore.sortKey === key) explore.sortDir = -explore.sortDir; else { explore.sortKey = key; explore.sortDir = 1; }
      explore.sortType = th.getAttribute("data-type") || "str";
      update(explore);
    }
    th.addEventListener("click", go);
    th.addEventListener("keydown", function (e) { if (e.key === "Enter" || e.key === " ") { e.preventDefault(); go(); } });
  }

  function controls() {
    var ids = { text: "f-text", label: "f-label", source: "f-source", protocol: "f-protocol", verdict: "f-verdict", right: "f-right", run: "f-run", fallback: "f-fallback", found: "f-found" };
    var found = {};
    Object.keys(ids).forEach(function (k) { found[k] = document.getElementById(ids[k]); });
    return found;
  }

  function newExplore(table, data) {
    var heads = Array.prototype.slice.call(table.tHead.rows[0].cells);
    var runRight = {}; // each compared run's right/wrong per claim, by its digest (the "your run" filter)
    (data.runs || []).forEach(function (r) { runRight[r.digest] = r.right; });
    return {
      table: table, tbody: table.tBodies[0], heads: heads, all: claimRows(data), pageSize: data.page,
      exported: table.hasAttribute("data-exported") ? new Set(table.getAttribute("data-exported").split(" ")) : null,
      labelled: heads.some(function (th) { return th.getAttribute("data-key") === "label"; }),
      columns: heads.map(function (th) { return th.getAttribute("data-key"); })
        .filter(function (key) { return /^(gold|retrieved)-/.test(key || ""); }),
      controls: controls(), runRight: runRight,
      count: document.getElementById("f-count"),
      pager: document.getElementById("pager"), pageOf: document.getElementById("page-of"),
      prev: document.getElementById("page-prev"), next: document.getElementById("page-next"),
      noMatch: document.getElementById("no-match"),
      sortKey: "position", sortType: "num", sortDir: 1, page: 0, shown: []
    };
  }

  function start() {
    var table = document.getElementById("claims-table");
    var source = document.getElementById("claims-data");
    if (!table || !source) return;
    var explore = claimtrace.state.explore = newExplore(table, JSON.parse(source.textContent));
    explore.heads.forEach(function (th) { sortOnClick(explore, th); });
    if (explore.prev) explore.prev.addEventListener("click", function () { turnPage(explore, -1); });
    if (explore.next) explore.next.addEventListener("click", function () { turnPage(explore, 1); });
    Object.keys(explore.controls).forEach(function (k) {
      var c = explore.controls[k];
      if (c) c.addEventListener(k === "text" ? "input" : "change", function () { update(explore); });
    });
    var reset = document.getElementById("filters-reset");
    if (reset) reset.addEventListener("click", function () { resetFilters(explore); });
    loadState(explore);
    select(explore);
    draw(explore);
  }

  /* Every filter back to the value the page came with (its data-default); the sort stays. */
  function resetFilters(explore) {
    Object.keys(explore.controls).forEach(function (k) {
      var c = explore.controls[k];
      if (c && c.hasAttribute("data-default")) c.value = c.getAttribute("data-default");
    });
    update(explore);
    if (explore.controls.text) explore.controls.text.focus();
  }

  /* ---------------------------------------------------------------- sortable tables */

  /* Tables whose heads sort them (class "sortable", th[data-sort]: "num" or "str"): by a cell's
     data-v, else its text; a second click reverses. The scoreboard is one. Ties keep the order
     the page came with. */
  function sortColumn(sortable, th, column) {
    var type = th.getAttribute("data-sort");
    var dir = th.getAttribute("aria-sort") === "ascending" ? -1 : 1;
    var keyed = sortable.original.map(function (row, i) {
      var cell = row.cells[column];
      var v = cell.hasAttribute("data-v") ? cell.getAttribute("data-v") : cell.textContent.trim();
      return [type === "num" ? parseFloat(v) : v, i, row];
    });
    keyed.sort(function (a, b) { return a[0] < b[0] ? -dir : a[0] > b[0] ? dir : a[1] - b[1]; });
    keyed.forEach(function (k) { sortable.body.appendChild(k[2]); });
    sortable.heads.forEach(function (other) { other.removeAttribute("aria-sort"); });
    th.setAttribute("aria-sort", dir > 0 ? "ascending" : "descending");
  }

  function startSortable() {
    Array.prototype.forEach.call(document.querySelectorAll("table.sortable"), function (table) {
      var body = table.tBodies[0];
      var sortable = {
        heads: Array.prototype.slice.call(table.tHead.rows[0].cells),
        body: body,
        original: Array.prototype.slice.call(body.rows)
      };
      sortable.heads.forEach(function (th, column) {
        if (!th.getAttribute("data-sort")) return;
        th.tabIndex = 0;
        function go() { sortColumn(sortable, th, column); }
        th.addEventListener("click", go);
        th.addEventListener("keydown", function (e) { if (e.key === "Enter" || e.key === " ") { e.preventDefault(); go(); } });
      });
    });
  }

  claimtrace.explore = { start: start, startSortable: startSortable };
})(window.claimtrace);
