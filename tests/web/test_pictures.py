"""claimtrace.web.pictures: the pictures on the explore page, drawn from the data."""

from __future__ import annotations

import re

import pytest

from claimtrace import constants as C


def test_explore_pictures_are_drawn_from_the_data(web_client):
    """Dev's Explore: the training curves, a heat map per confusion matrix that names the verdicts
    never predicted, and the scoreboard as a chart whose bars are its rows' values to scale; the
    scoreboard comes before the claims and the page's head links to it."""
    from claimtrace.web.pictures import SCORE_BAR, never_predicted

    x = web_client.get("/explore/dev.json").json()
    page = web_client.get("/explore/dev.html").text
    assert page.index('id="scoreboard"') < page.index('id="claims"') and 'href="#scoreboard"' in page
    assert 'id="training-pictures"' in page and page.count('<svg class="picture curve"') == 2
    maps = page.count('<svg class="picture heat"')
    assert maps == 4
    for source in ("gold", "retrieved"):
        for protocol in C.PROTOCOLS:
            never = never_predicted(x["accuracy"][source][protocol]["confusion"])
            if never:
                assert f"Never predicted: {', '.join(never)}" in page
    assert "never predicted" in page.lower()
    chart = page[page.index('<svg class="picture scores"') :]
    chart = chart[: chart.index("</svg>")]
    rows = x["scoreboard"]["rows"]
    widths = [float(w) for w in re.findall(r'<rect x="[\d.]+" y="[\d.]+" width="([\d.]+)"', chart)]
    assert len(widths) == 3 * len(rows)
    for k, metric in enumerate(("HM", "F", "A")):
        drawn = widths[k * len(rows) : (k + 1) * len(rows)]
        scale = max([r[metric] for r in rows] + [x["scoreboard"]["anchor"][metric]])
        for width, row in zip(drawn, rows):
            assert width == pytest.approx(row[metric] / scale * SCORE_BAR, abs=0.06)
