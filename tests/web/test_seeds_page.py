"""The seeds page in Chromium, served and exported, at 1280 and 390 px, over a seed-spread file of
five seeds per model written here: every seed's dot, the checkpoint's diamond and each seeds'
band measured against its value on its panel's axis, every whisker against its interval, the
values the page's data's, the same words served and exported; axe in both themes at both widths."""

from __future__ import annotations

import pytest

from claimtrace.evaluation import seed_spread
from tests.support.seed_spread import WHOLE, write_seed_spread
from tests.web.conftest import ARTIFACTS
from tests.web.test_charts import check_whiskers

pytestmark = pytest.mark.browser

WIDTHS = (1280, 390)

MEASURE = """() => Array.from(document.querySelectorAll('svg.picture.seeds')).map(svg => {
  const box = svg.getBoundingClientRect();
  const d = k => parseFloat(svg.dataset[k]);
  const centre = el => { const r = el.getBoundingClientRect(); return r.left + r.width / 2; };
  return {
    panel: svg.dataset.panel, left: box.left, factor: box.width / svg.viewBox.baseVal.width,
    axis: { x0: d('x0'), xlen: d('xlen'), xmin: d('xmin'), xmax: d('xmax') },
    marks: Array.from(svg.querySelectorAll('circle.seed-dot, polygon.checkpoint-mark')).map(m => ({
      model: m.dataset.model, seed: m.dataset.seed ? +m.dataset.seed : null,
      value: parseFloat(m.dataset.value), x: centre(m) })),
    bands: Array.from(svg.querySelectorAll('rect.band')).map(b => {
      const r = b.getBoundingClientRect();
      return { min: parseFloat(b.dataset.min), max: parseFloat(b.dataset.max), left: r.left, width: r.width };
    }),
  };
})"""


@pytest.fixture(scope="module")
def whole(tmp_path_factory):
    """Five seeds of each model, the file the site reads while this module runs."""
    path = write_seed_spread(tmp_path_factory.mktemp("seeds") / "seed_spread.json", WHOLE)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(seed_spread, "SEED_SPREAD_PATH", path)
        yield path


@pytest.fixture(scope="module")
def addresses(whole, web_server, demo_site_data, tmp_path_factory) -> dict[str, str]:
    """The page served, and exported by the export's own code for one page (the whole export
    computes every split's Explore first: half a minute on its own)."""
    from claimtrace.web.pages import SEEDS
    from claimtrace.web.render import Renderer
    from claimtrace.web.site import _Export, _planned

    out = tmp_path_factory.mktemp("site")
    export = _Export(
        out, demo_site_data, Renderer(demo_site_data, mode="static"), _planned(demo_site_data, {"dev": []}, False)
    )
    export.copy_static()
    export.put_page(SEEDS, None)
    return {"served": f"{web_server}/seeds.html", "exported": (out / "seeds.html").as_uri()}


def _x(drawn: dict, value: float) -> float:
    a = drawn["axis"]
    return drawn["left"] + (a["x0"] + (value - a["xmin"]) / (a["xmax"] - a["xmin"]) * a["xlen"]) * drawn["factor"]


def _check_marks(charts: list[dict], data: dict, where: str) -> int:
    panels = {p["id"]: p for p in data["panels"]}
    checked = 0
    for drawn in charts:
        panel = panels[drawn["panel"]]
        assert (drawn["axis"]["xmin"], drawn["axis"]["xmax"]) == (panel["axis"]["min"], panel["axis"]["max"]), where
        expected = {}
        for model in panel["models"]:
            expected.update({(model["name"], s["seed"]): s["accuracy"] for s in model["seeds"]})
            expected[model["name"], None] = model["shipped"]["accuracy"]
        assert {(m["model"], m["seed"]): m["value"] for m in drawn["marks"]} == expected, where
        for mark in drawn["marks"]:
            what = f"{where}: {panel['id']} {mark['model']} seed {mark['seed']}"
            assert abs(mark["x"] - _x(drawn, mark["value"])) <= 1.0, what
            checked += 1
        spreads = sorted((m["spread"]["min"], m["spread"]["max"]) for m in panel["models"])
        assert sorted((b["min"], b["max"]) for b in drawn["bands"]) == spreads, where
        for band in drawn["bands"]:
            assert abs(band["left"] - _x(drawn, band["min"])) <= 1.0, f"{where}: {panel['id']} band"
            assert abs(band["left"] + band["width"] - _x(drawn, band["max"])) <= 1.0, f"{where}: {panel['id']} band"
    return checked


@pytest.mark.parametrize("width", WIDTHS)
def test_every_mark_is_drawn_at_its_value_served_and_exported(browser, addresses, demo_site_data, width):
    from claimtrace.web.views.seeds import seeds_page

    data = seeds_page(demo_site_data.build)
    context = browser.new_context(viewport={"width": width, "height": 900})
    page = context.new_page()
    problems = []
    page.on("pageerror", lambda error: problems.append(str(error)))
    words = {}
    try:
        for kind, url in addresses.items():
            where = f"{kind} seeds page at {width} px"
            page.goto(url, wait_until="load")
            assert _check_marks(page.evaluate(MEASURE), data, where) == 4 * (5 + 5 + 2), where
            assert check_whiskers(page, ".seeds-grid", where) == 4 * (5 + 5 + 2), where
            words[kind] = page.inner_text("main")
            ARTIFACTS.mkdir(exist_ok=True)
            page.screenshot(path=str(ARTIFACTS / f"seeds-{kind}-{width}.png"), full_page=True)
    finally:
        context.close()
    assert words["served"] == words["exported"]  # the server and the export say the same
    for panel in data["panels"]:
        # the verdict first, its figures and tests under it in small print
        assert panel["conclusion"].strip() in words["served"]
        assert panel["lead"].strip().strip(":") in words["served"]
    assert not problems, problems


@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize("width", WIDTHS)
def test_axe_finds_nothing_on_the_drawn_page(axe, addresses, width, scheme):
    found = axe.violations(addresses["served"], width, scheme)
    assert found == [], found
