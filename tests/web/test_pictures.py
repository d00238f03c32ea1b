"""claimtrace.web.pictures: the pictures on the explore page, drawn from the data."""

from __future__ import annotations

import re

import pytest

from claimtrace.constants import PROTOCOLS


def test_explore_pictures_are_drawn_from_the_data(web_client):
    """Dev's Explore: the training curves, a heat map per confusion matrix that names the verdicts
    never predicted, and the scoreboard as a chart whose bars are its rows' and baselines' values to scale; the
    claims come first (the page's point), the scoreboard after them, and the page's head links to it."""
    from claimtrace.web.pictures import SCORE_BAR, never_predicted

    x = web_client.get("/explore/dev.json").json()
    page = web_client.get("/explore/dev.html").text
    assert page.index('id="claims"') < page.index('id="scoreboard"') and 'href="#scoreboard"' in page
    assert 'id="training-pictures"' in page and page.count('<svg class="picture curve"') == 2
    maps = page.count('<svg class="picture heat"')
    assert maps == 4
    for source in ("gold", "retrieved"):
        for protocol in PROTOCOLS:
            never = never_predicted(x["accuracy"][source][protocol]["confusion"])
            if never:
                assert f"Never predicted: {', '.join(never)}" in page
    assert "never predicted" in page.lower()
    chart = page[page.index('<svg class="picture scores"') :]
    chart = chart[: chart.index("</svg>")]
    rows = x["scoreboard"]["rows"] + x["scoreboard"]["baselines"]  # the baselines drawn below the rows
    widths = [float(w) for w in re.findall(r'<rect x="[\d.]+" y="[\d.]+" width="([\d.]+)"', chart)]
    assert len(widths) == 3 * len(rows)
    for k, metric in enumerate(("HM", "F", "A")):
        drawn = widths[k * len(rows) : (k + 1) * len(rows)]
        uppers = [r["intervals"][metric]["upper"] for r in rows]
        scale = max([r[metric] for r in rows] + uppers + [x["scoreboard"]["anchor"][metric]])
        for width, row in zip(drawn, rows):
            assert width == pytest.approx(row[metric] / scale * SCORE_BAR, abs=0.06)
    # every row's interval as a whisker on its panel's axis, from 0 to the panel's scale
    spans = re.findall(r'data-lower="([^"]+)" data-upper="([^"]+)" data-min="0.0" data-max="([^"]+)"', chart)
    assert len(spans) == 3 * len(rows)
    for k, metric in enumerate(("HM", "F", "A")):
        for (lower, upper, _), row in zip(spans[k * len(rows) : (k + 1) * len(rows)], rows):
            assert (float(lower), float(upper)) == (
                row["intervals"][metric]["lower"],
                row["intervals"][metric]["upper"],
            )


def test_a_whisker_is_its_interval_on_its_axis():
    """A whisker's line runs from the lower to the upper bound on the axis it states."""
    from claimtrace.web.pictures import whisker

    drawn = whisker({"estimate": 0.383, "lower": 0.31, "upper": 0.462}, (0.0, 0.5), 100.0, 200.0, 50.0, "A")
    x1, x2 = (float(v) for v in re.search(r'class="span" x1="([\d.]+)" x2="([\d.]+)"', drawn).groups())
    assert x1 == pytest.approx(100 + 0.31 / 0.5 * 200, abs=0.005)
    assert x2 == pytest.approx(100 + 0.462 / 0.5 * 200, abs=0.005)
    assert 'data-min="0.0" data-max="0.5"' in drawn and "0.3100 to 0.4620" in drawn


def test_an_interval_chart_puts_differences_about_zero():
    """Figures are drawn from 0; differences (a bound below 0) on an axis symmetric about a marked 0."""
    from claimtrace.web.pictures import interval_chart

    figures = [{"name": "run", "kind": "run", "A": {"estimate": 0.44, "lower": 0.37, "upper": 0.52}}]
    chart = str(interval_chart(figures, ["A"], "accuracy"))
    assert 'data-min="0.0" data-max="0.6"' in chart and 'class="zero"' not in chart
    gaps = [{"name": "run minus notebook", "kind": "run", "A": {"estimate": -0.058, "lower": -0.143, "upper": 0.026}}]
    chart = str(interval_chart(gaps, ["A"], "difference"))
    assert 'data-min="-0.15" data-max="0.15"' in chart and 'class="zero"' in chart
    assert "run minus notebook: A -0.058 (-0.143 to 0.026)" in chart
