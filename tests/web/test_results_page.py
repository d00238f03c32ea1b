"""The results page in Chromium, served and exported, at 1280 and 390 px: every drawn point of
every sweep chart measured against its value and its chart's axes, the values the build's, and
the readout under the pointer and under the arrow keys saying every curve's value there."""

from __future__ import annotations

import pytest

from claimtrace.web.views.results import readout, results
from tests.web.conftest import ARTIFACTS

pytestmark = pytest.mark.browser

WIDTHS = (1280, 390)

MEASURE_POINTS = """() => Array.from(document.querySelectorAll('svg.picture.sweep')).map(svg => {
  const box = svg.getBoundingClientRect();
  const factor = box.width / svg.viewBox.baseVal.width;
  const d = k => parseFloat(svg.dataset[k]);
  return {
    chart: svg.closest('.sweep-chart').dataset.chart,
    axes: { x0: d('x0'), xlen: d('xlen'), xmin: d('xmin'), xmax: d('xmax') },
    left: box.left, top: box.top, factor: factor,
    points: Array.from(svg.querySelectorAll('circle.pt')).map(c => {
      const r = c.getBoundingClientRect();
      const e = k => parseFloat(c.dataset[k]);
      return { series: c.dataset.series, x: e('x'), y: e('y'), y0: e('y0'), ylen: e('ylen'), ymax: e('ymax'),
               cx: r.left + r.width / 2, cy: r.top + r.height / 2 };
    }),
  };
})"""


@pytest.fixture(scope="module")
def addresses(web_server, demo_site_data, tmp_path_factory) -> dict[str, str]:
    from claimtrace.web.site import write_site

    out = tmp_path_factory.mktemp("site")
    write_site(None, out, site_data=demo_site_data, splits=("dev",), only=("claim-871",))
    return {"served": f"{web_server}/results.html", "exported": (out / "results.html").as_uri()}


def _check_points(charts: list[dict], data: dict, where: str) -> int:
    by_id = {c["id"]: c for c in data["charts"]}
    checked = 0
    for drawn in charts:
        chart, a = by_id[drawn["chart"]], drawn["axes"]
        assert a["xmin"] == chart["points"][0]["value"] and a["xmax"] == chart["points"][-1]["value"]
        expected = {(key, p["value"]): p[key] for p in chart["points"] for key, _ in data["series"]}
        assert len(drawn["points"]) == len(expected), f"{where}: {chart['id']}"
        for point in drawn["points"]:
            what = f"{where}: {chart['id']} {point['series']} at {point['x']}"
            assert point["y"] == expected[(point["series"], point["x"])], what  # the build's value
            ux = a["x0"] + (point["x"] - a["xmin"]) / (a["xmax"] - a["xmin"]) * a["xlen"]
            assert 0 <= point["y"] <= point["ymax"], what  # on its panel's axis, 0 to its stated top
            uy = point["y0"] + (1 - point["y"] / point["ymax"]) * point["ylen"]
            assert abs(point["cx"] - (drawn["left"] + ux * drawn["factor"])) <= 1.0, what
            assert abs(point["cy"] - (drawn["top"] + uy * drawn["factor"])) <= 1.0, what
            checked += 1
    return checked


#: Every point of the training logs' panels, with its panel's axes (web/training_chart.py).
MEASURE_TRAINING = """() => Array.from(document.querySelectorAll('svg.picture.training')).map(svg => {
  const box = svg.getBoundingClientRect();
  const factor = box.width / svg.viewBox.baseVal.width;
  const d = k => parseFloat(svg.dataset[k]);
  return {
    model: svg.closest('.training-figure').id, panel: svg.dataset.panel, left: box.left, top: box.top, factor: factor,
    axes: { x0: d('x0'), xlen: d('xlen'), xmin: d('xmin'), xmax: d('xmax'), y0: d('y0'), ylen: d('ylen'),
            ymin: d('ymin'), ymax: d('ymax') },
    points: Array.from(svg.querySelectorAll('circle.pt')).map(c => {
      const r = c.getBoundingClientRect();
      return { series: c.dataset.series, x: parseFloat(c.dataset.x), y: parseFloat(c.dataset.y),
               cx: r.left + r.width / 2, cy: r.top + r.height / 2 };
    }),
  };
})"""


def _training_points(data: dict) -> int:
    """How many points the logs draw: each figure printed or logged, of every epoch."""
    figures = [key for key, _ in data["training"]["figures"]]
    return sum(
        (e[key] is not None) + (e["notebook"][key] is not None)
        for m in data["training"]["models"]
        for e in m["epochs"]
        for key in figures
    )


def _check_training(panels: list[dict], data: dict, where: str) -> int:
    """Every training point at its epoch and value on its panel's axes, the value the log's."""
    models = {f"training-{m['model']}": m for m in data["training"]["models"]}
    checked = 0
    for drawn in panels:
        model, a = models[drawn["model"]], drawn["axes"]
        logged = {
            (f"{source}, {key.split('_')[0]}", e["epoch"], key.split("_")[1]): value
            for e in model["epochs"]
            for key in (k for k, _ in data["training"]["figures"])
            for source, value in (("this checkpoint", e[key]), ("notebook’s printed log", e["notebook"][key]))
        }
        for point in drawn["points"]:
            what = f"{where}: {drawn['model']} {drawn['panel']} {point['series']} epoch {point['x']}"
            assert point["y"] == logged[(point["series"], point["x"], drawn["panel"])], what
            assert a["ymin"] <= point["y"] <= a["ymax"], what
            ux = a["x0"] + (point["x"] - a["xmin"]) / (a["xmax"] - a["xmin"]) * a["xlen"]
            uy = a["y0"] + (a["ymax"] - point["y"]) / (a["ymax"] - a["ymin"]) * a["ylen"]
            assert abs(point["cx"] - (drawn["left"] + ux * drawn["factor"])) <= 1.0, what
            assert abs(point["cy"] - (drawn["top"] + uy * drawn["factor"])) <= 1.0, what
            checked += 1
    return checked


def _check_readouts(page, data: dict, where: str) -> None:
    """Under the pointer at three settings of each chart, and with the keyboard, the readout says
    every curve's value at that setting."""
    for chart in data["charts"]:
        box = page.locator(f'.sweep-chart[data-chart="{chart["id"]}"]')
        box.scroll_into_view_if_needed()
        svg = box.locator("svg")
        frame = svg.bounding_box()
        axes = svg.evaluate("s => ({x0: +s.dataset.x0, xlen: +s.dataset.xlen, w: s.viewBox.baseVal.width})")
        factor = frame["width"] / axes["w"]
        said = page.locator(f"#readout-{chart['id']}")
        last = len(chart["points"]) - 1
        for i in (0, last // 3, last):
            x = frame["x"] + (axes["x0"] + axes["xlen"] * i / last) * factor
            page.mouse.move(x, frame["y"] + 60 * factor, steps=3)
            assert said.text_content() == readout(chart, i), f"{where}: {chart['id']} point {i}"
        box.focus()
        page.keyboard.press("Home")
        assert said.text_content() == readout(chart, 0), f"{where}: {chart['id']} Home"
        page.keyboard.press("ArrowRight")
        assert said.text_content() == readout(chart, 1), f"{where}: {chart['id']} ArrowRight"
        assert said.get_attribute("aria-live") == "polite"


@pytest.mark.parametrize("width", WIDTHS)
def test_sweep_points_are_drawn_at_their_values_and_read_out(page_at, addresses, demo_site_data, width):
    data = results(demo_site_data)
    page = page_at(width)
    words = {}
    for kind, url in addresses.items():
        where = f"{kind} results at {width} px"
        page.goto(url, wait_until="load")
        words[kind] = page.inner_text("main")  # before any readout moves
        checked = _check_points(page.evaluate(MEASURE_POINTS), data, where)
        assert checked == len(data["series"]) * data["points"], where
        assert _check_training(page.evaluate(MEASURE_TRAINING), data, where) == _training_points(data), where
        _check_readouts(page, data, where)
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / f"results-{kind}-{width}.png"), full_page=True)
    assert words["served"] == words["exported"]  # the server and the export say the same
    assert not page.problems, page.problems
