"""What the pages draw, measured in Chromium: every bar of every chart (the logit sources, the
margin, each token's share; server pages, the live editor and the static export) at 1280 and
390 px, against the value printed beside it and the scale its chart states.

A bar is a ``.bar`` box whose middle is zero; ``data-value`` and ``data-scale`` are what it
stands for. Its fill must be ``min(|value| / scale, 1)`` of half the box (within 1 px), start at
zero on the value's side, and be marked clipped and "off scale" exactly when ``|value| > scale``.
"""

from __future__ import annotations

import re

import pytest

from tests.web.conftest import ARTIFACTS

pytestmark = pytest.mark.browser

CLAIMS = ("claim-752", "claim-871", "claim-2574")
WIDTHS = (1280, 390)

MEASURE = """() => Array.from(document.querySelectorAll('.bar')).filter(b => b.offsetParent !== null).map(b => {
  const box = b.getBoundingClientRect();
  const fillNode = b.querySelector('.fill');
  const fill = fillNode ? fillNode.getBoundingClientRect() : null;
  const cell = b.closest('td');
  const off = cell.querySelector('.off');
  const table = b.closest('table');
  return {
    value: b.dataset.value === undefined ? null : parseFloat(b.dataset.value),
    scale: b.dataset.scale === undefined ? null : parseFloat(b.dataset.scale),
    left: box.left, width: box.width,
    fillLeft: fill && fill.left, fillRight: fill && fill.right, fillWidth: fill ? fill.width : 0,
    clipped: !!fillNode && fillNode.classList.contains('clipped'),
    off: !!off && off.offsetParent !== null,
    shown: cell.querySelector('.v').textContent,
    chart: table.className,
    caption: table.caption ? table.caption.textContent : '',
  };
})"""

#: "a half-bar is 0.123" in a chart's caption: the scale it states.
STATED = re.compile(r"a half-bar is ([0-9.]+)")


def check_bars(bars: list[dict], where: str) -> int:
    """Every bar against its value and its chart's stated scale; the number of bars checked."""
    assert bars, f"{where}: no bar drawn"
    for bar in bars:
        what = f"{where}: {bar['chart']} bar {bar['value']} (shown {bar['shown']}, scale {bar['scale']})"
        assert bar["value"] is not None and bar["scale"], what
        value, scale, half = bar["value"], bar["scale"], bar["width"] / 2
        # the number beside the bar is its value
        shown = bar["shown"].strip()
        digits = len(shown.split(".")[1]) if "." in shown else 0
        assert abs(float(shown) - value) <= 0.5 * 10**-digits + 1e-12, what
        # the chart states its scale, and the bar is drawn on it
        stated = STATED.search(bar["caption"])
        assert stated, f"{what}: the caption states no scale: {bar['caption']!r}"
        places = len(stated.group(1).split(".")[1])
        assert abs(float(stated.group(1)) - scale) <= 0.5 * 10**-places + 1e-12, what
        expected = min(abs(value) / scale, 1.0) * half
        assert abs(bar["fillWidth"] - expected) <= 1.0, f"{what}: {bar['fillWidth']:.2f} px, expected {expected:.2f}"
        zero = bar["left"] + half
        if expected >= 0.5:  # a fill of less than half a pixel has no side to measure
            if value > 0:
                assert abs(bar["fillLeft"] - zero) <= 1.0, (
                    f"{what}: starts at {bar['fillLeft']:.1f}, zero at {zero:.1f}"
                )
            else:
                assert abs(bar["fillRight"] - zero) <= 1.0, (
                    f"{what}: ends at {bar['fillRight']:.1f}, zero at {zero:.1f}"
                )
        over = abs(value) > scale
        assert bar["clipped"] == over and bar["off"] == over, f"{what}: clipped {bar['clipped']}, marked {bar['off']}"
    return len(bars)


MEASURE_WHISKERS = """(selector) => Array.from(document.querySelectorAll(selector + ' g.whisker')).filter(g => {
  const svg = g.ownerSVGElement; return svg && svg.getBoundingClientRect().width > 0;
}).map(g => {
  const svg = g.ownerSVGElement;
  const box = svg.getBoundingClientRect();
  const span = g.querySelector('line.span').getBoundingClientRect();
  const d = k => parseFloat(g.dataset[k]);
  return {
    estimate: d('estimate'), lower: d('lower'), upper: d('upper'), min: d('min'), max: d('max'),
    x0: d('x0'), length: d('length'), factor: box.width / svg.viewBox.baseVal.width,
    svgLeft: box.left, left: span.left, width: span.width, name: g.querySelector('title').textContent,
  };
})"""


def check_whiskers(page, selector: str, where: str) -> int:
    """Every interval whisker under ``selector`` against its bounds: its line starts at the
    lower bound and is as long as the interval on its panel's axis (within 1 px), the bounds
    hold the estimate, and its title says the same figures. The number checked."""
    whiskers = page.evaluate(MEASURE_WHISKERS, selector)
    assert whiskers, f"{where}: no whisker drawn under {selector}"
    for w in whiskers:
        what = f"{where}: {w['name']}"
        assert w["lower"] <= w["estimate"] + 1e-12 and w["estimate"] <= w["upper"] + 1e-12, what
        per_unit = w["length"] / (w["max"] - w["min"]) * w["factor"]  # px per unit of the figure
        expected_left = (
            w["svgLeft"] + (w["x0"] + (w["lower"] - w["min"]) * w["length"] / (w["max"] - w["min"])) * w["factor"]
        )
        expected_width = (w["upper"] - w["lower"]) * per_unit
        assert abs(w["left"] - expected_left) <= 1.0, f"{what}: starts at {w['left']:.1f}, expected {expected_left:.1f}"
        assert abs(w["width"] - expected_width) <= 1.0, f"{what}: {w['width']:.1f} px, expected {expected_width:.1f}"
        assert f"{w['lower']:.4f} to {w['upper']:.4f}" in w["name"], what
    return len(whiskers)


def check_sums(page, where: str) -> None:
    """The logit-sources chart adds up: bias + real tokens + [PAD]s = logit, row by row."""
    rows = page.eval_on_selector_all(
        "table.chart.sum tbody tr",
        "rows => rows.map(r => Array.from(r.querySelectorAll('.bar')).map(b => parseFloat(b.dataset.value)))",
    )
    assert len(rows) == 4, where
    for bias, words, pads, logit in rows:
        assert abs(bias + words + pads - logit) < 1e-6, where


def _open_details(page) -> None:
    page.evaluate("document.querySelectorAll('details.tokens-detail').forEach(d => { d.open = true; })")
    page.wait_for_function(
        "document.querySelectorAll('details.tokens-detail table.chart.tokens .bar[data-value]').length > 0"
    )


def _shot(page, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.locator("table.chart.margin").first.scroll_into_view_if_needed()
    page.screenshot(path=str(ARTIFACTS / f"bars-{name}.png"))


@pytest.mark.parametrize("width", WIDTHS)
def test_every_bar_on_claim_pages_is_drawn_to_scale(page_at, web_server, width):
    page = page_at(width)
    for claim_id in CLAIMS:
        page.goto(f"{web_server}/claim/{claim_id}.html", wait_until="load")
        where = f"{claim_id} at {width} px"
        assert page.locator("table.chart").count() == 3, where
        assert check_bars(page.evaluate(MEASURE), where) > 40
        check_sums(page, where)
        _shot(page, f"{claim_id}-{width}")
    assert not page.problems, page.problems


@pytest.mark.parametrize("width", WIDTHS)
def test_every_bar_of_the_live_editor_is_drawn_to_scale(page_at, web_server, width):
    page = page_at(width)
    page.goto(f"{web_server}/live.html", wait_until="load")
    page.wait_for_selector("body[data-editor=ready]", timeout=30_000)
    _open_details(page)
    where = f"live editor at {width} px"
    check_bars(page.evaluate(MEASURE), where)
    # an edited input, redrawn in place: a short one (a few large shares) and a long one
    for text in ("warm warm cold ice", "zzzunknown " + "climat chang " * 70):
        page.evaluate("text => window.claimtrace.recompute(text)", text)
        check_bars(page.evaluate(MEASURE), f"{where}, edited")
    _shot(page, f"live-{width}")
    assert not page.problems, page.problems


@pytest.mark.parametrize("width", WIDTHS)
def test_every_bar_of_the_static_export_is_drawn_to_scale(page_at, demo_site_data, tmp_path_factory, width):
    from claimtrace.web.site import write_site

    out = tmp_path_factory.mktemp("site")
    write_site(None, out, site_data=demo_site_data, splits=("dev",), only=CLAIMS)
    page = page_at(width)
    for claim_id in CLAIMS:
        page.goto((out / "claim" / f"{claim_id}.html").as_uri(), wait_until="load")
        page.wait_for_selector("body[data-charts=ready]", timeout=30_000)
        where = f"static {claim_id} at {width} px"
        assert page.locator("table.chart").count() == 3, where
        check_bars(page.evaluate(MEASURE), where)
        check_sums(page, where)
    page.goto((out / "live.html").as_uri() + "?claim=claim-871", wait_until="load")
    page.wait_for_selector("body[data-editor=ready]", timeout=30_000)
    _open_details(page)
    check_bars(page.evaluate(MEASURE), f"static live at {width} px")
    assert not page.problems, page.problems


SECTIONS = [
    "header.top",
    ".claim-head",
    *(f"section#{stage}" for stage in ("preprocess", "tags", "vectors", "filter", "retrieved", "input")),
    "section#model",
    "section#quirk",
    "section#verdict",
    "section#fixes",
    "footer",
]


def test_server_and_static_claim_pages_say_the_same_things(page_at, web_server, demo_site_data, tmp_path_factory):
    """The served page and the exported page of a claim, section by section, the verdict's
    charts (drawn by the server's templates on one, by app.js on the other) included."""
    from claimtrace.web.site import write_site

    out = tmp_path_factory.mktemp("site")
    write_site(None, out, site_data=demo_site_data, splits=("dev",), only=CLAIMS)
    page = page_at(1280)

    def texts() -> dict[str, str]:
        return {selector: page.locator(selector).first.inner_text() for selector in SECTIONS}

    for claim_id in CLAIMS:
        page.goto(f"{web_server}/claim/{claim_id}.html", wait_until="load")
        served = texts()
        page.goto((out / "claim" / f"{claim_id}.html").as_uri(), wait_until="load")
        page.wait_for_selector("body[data-charts=ready]", timeout=30_000)
        exported = texts()
        for selector in SECTIONS:
            assert exported[selector] == served[selector], f"{claim_id} {selector}"
        assert page.locator("table.chart").count() == 3
    assert not page.problems, page.problems


#: Explore's weight limits: HTML bytes and elements of a split's page, served and exported.
MAX_EXPLORE_BYTES, MAX_EXPLORE_ELEMENTS = 300_000, 4_000


def test_explore_train_is_light_served_and_exported(page_at, web_server, demo_site_data, tmp_path_factory):
    """/explore/train.html (1,228 claims): under 300 KB of HTML and 4,000 elements, with the
    filters, the sort, the pages and the URL state working over every claim."""
    from claimtrace.web.site import write_site

    out = tmp_path_factory.mktemp("site")
    write_site(None, out, site_data=demo_site_data, splits=("train",), limit=1)
    fallbacks = sum(r["fallback"] for r in demo_site_data.build.retrieval("train").values())
    page = page_at(1280)
    for url in (f"{web_server}/explore/train.html", (out / "explore" / "train.html").as_uri()):
        response = page.goto(url, wait_until="load")
        assert len(response.body()) < MAX_EXPLORE_BYTES, f"{url}: {len(response.body()):,} bytes"
        elements = page.evaluate("document.getElementsByTagName('*').length")
        assert elements < MAX_EXPLORE_ELEMENTS, f"{url}: {elements:,} elements"
        assert page.locator("#f-count").inner_text().startswith("1228 of 1228")
        page.select_option("#f-fallback", "yes")
        assert page.locator("#f-count").inner_text().startswith(f"{fallbacks} of 1228")
        page.click("#claims-table thead th[data-key=f]")
        page.click("#claims-table thead th[data-key=f]")  # descending
        page.click("#page-next")
        rows = page.locator("#claims-table tbody tr")
        second_page = [r.get_attribute("data-id") for r in rows.all()]
        assert len(second_page) == min(100, fallbacks - 100)
        assert all(r.get_attribute("data-fallback") == "yes" for r in rows.all())
        f_values = [float(r.get_attribute("data-f")) for r in rows.all()]
        assert f_values == sorted(f_values, reverse=True)
        assert "fallback=yes" in page.url and "sort=f" in page.url and "dir=desc" in page.url and "page=2" in page.url
        page.goto(page.url, wait_until="load")  # the shared link gives the same view
        assert [r.get_attribute("data-id") for r in page.locator("#claims-table tbody tr").all()] == second_page
        assert page.evaluate("document.getElementsByTagName('*').length") < MAX_EXPLORE_ELEMENTS
    assert not page.problems, page.problems


def test_the_scoreboard_sorts_by_any_column(page_at, web_server, demo_site_data):
    """Explore's scoreboard: one column per choice; a head sorts the rows (a second click
    reverses); its chart has a bar per row and metric."""
    board = demo_site_data.explore("dev")["scoreboard"]["rows"]
    page = page_at(1280)
    page.goto(f"{web_server}/explore/dev.html", wait_until="load")
    table = page.locator("#scoreboard-table")
    heads = [h.inner_text() for h in table.locator("thead th").all()]
    assert heads[:3] == ["retrieval", "model", "protocol"]
    hm = heads.index("HM") + 1
    for direction in ("ascending", "descending"):
        table.locator("thead th", has_text="HM").click()
        assert table.locator("thead th", has_text="HM").get_attribute("aria-sort") == direction
        values = [float(v) for v in table.locator(f"tbody tr td:nth-child({hm})").all_inner_texts()]
        assert values == sorted(values, reverse=direction == "descending") and len(values) == len(board)
    table.locator("thead th", has_text="retrieval").click()
    names = table.locator("tbody tr th").all_inner_texts()
    assert names == sorted(names)
    baselines = demo_site_data.explore("dev")["scoreboard"]["baselines"]  # drawn below the rows
    assert page.locator("svg.picture.scores rect").count() == 3 * (len(board) + len(baselines))
    page.locator("#scoreboard").scroll_into_view_if_needed()
    assert not page.problems, page.problems


# --- Explore's intervals -----------------------------------------------------------------------------

#: Every scoreboard bar: its drawn width against its width attribute (the value on the panel's scale).
MEASURE_SCORE_BARS = """() => Array.from(document.querySelectorAll('svg.picture.scores rect')).map(r => {
  const svg = r.ownerSVGElement;
  return { drawn: r.getBoundingClientRect().width, width: r.width.baseVal.value,
           factor: svg.getBoundingClientRect().width / svg.viewBox.baseVal.width,
           name: r.querySelector('title').textContent, cls: r.getAttribute('class') };
})"""


def _explore_dev_pages(web_server, demo_site_data, tmp_path_factory) -> dict[str, str]:
    from claimtrace.web.site import write_site

    out = tmp_path_factory.mktemp("site")
    write_site(None, out, site_data=demo_site_data, splits=("dev",), only=("claim-871",))
    return {"served": f"{web_server}/explore/dev.html", "exported": (out / "explore" / "dev.html").as_uri()}


@pytest.mark.parametrize("width", WIDTHS)
def test_explores_whiskers_and_bars_are_drawn_to_scale(page_at, web_server, demo_site_data, tmp_path_factory, width):
    """Explore's dev page, served and exported, at 1280 and 390 px: every whisker of the
    scoreboard chart (its rows and its baselines) and of the accuracy chart measured against its
    bounds, and every scoreboard bar as long as its value on its panel's scale."""
    board = demo_site_data.explore("dev")["scoreboard"]
    page = page_at(width)
    for kind, url in _explore_dev_pages(web_server, demo_site_data, tmp_path_factory).items():
        page.goto(url, wait_until="load")
        where = f"{kind} Explore dev at {width} px"
        shown = len(board["rows"]) + len(board["baselines"])
        assert check_whiskers(page, "#scoreboard", where) == 3 * shown
        assert check_whiskers(page, "#accuracy .accuracy-picture", where) == 6  # 4 accuracies, always SUPPORTS, the gap
        bars = page.evaluate(MEASURE_SCORE_BARS)
        assert len(bars) == 3 * shown, where
        for bar in bars:
            assert abs(bar["drawn"] - bar["width"] * bar["factor"]) <= 1.0, f"{where}: {bar['name']} {bar}"
        assert sum("bar-base" in bar["cls"] for bar in bars) == 3 * len(board["baselines"]), where
        ARTIFACTS.mkdir(exist_ok=True)
        page.locator("#scoreboard").screenshot(path=str(ARTIFACTS / f"explore-scoreboard-{kind}-{width}.png"))
    assert not page.problems, page.problems


def test_explores_interval_sections_say_the_same_words_served_and_exported(
    page_at, web_server, demo_site_data, tmp_path_factory
):
    """The accuracy section and the scoreboard, with their intervals and tests, in the same words
    on the served page and the exported one; the scoreboard still sorts, its baselines staying
    below the rows."""
    page = page_at(1280)
    texts = {}
    for kind, url in _explore_dev_pages(web_server, demo_site_data, tmp_path_factory).items():
        page.goto(url, wait_until="load")
        texts[kind] = {selector: page.locator(selector).inner_text() for selector in ("#accuracy", "#scoreboard")}
        assert (
            "more than chance" in texts[kind]["#scoreboard"]
            and "10,000 resamples, seed 2024" in texts[kind]["#accuracy"]
        )
        table = page.locator("#scoreboard-table")
        table.locator("thead th", has_text="HM").click()
        table.locator("thead th", has_text="HM").click()  # descending
        first = table.locator("tbody tr").first.get_attribute("data-row")
        assert first == max(demo_site_data.explore("dev")["scoreboard"]["rows"], key=lambda r: r["HM"])["name"]
        assert table.locator("tfoot tr.baseline").count() == 3
    assert texts["exported"] == texts["served"]
    assert not page.problems, page.problems
