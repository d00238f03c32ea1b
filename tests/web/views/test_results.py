"""The results page's data (web/views/results.py): the build's sweep arranged as charts, read and
never recomputed, each chart starting at the notebook's setting, and the sentences that name the
notebook's setting, the best one and the test between them."""

from __future__ import annotations

from claimtrace.web.views.results import readout, results


def test_charts_are_the_builds_sweep(demo_site_data):
    data = results(demo_site_data)
    sweep = demo_site_data.build.sweep()
    assert data["sweep"] == sweep
    assert [c["id"] for c in data["charts"]] == [
        f"{rule}-{parameter}" for rule in ("notebook", "submission") for parameter in ("cosine", "overlap", "top_n")
    ]
    for chart in data["charts"]:
        curve = sweep["curves"][chart["rule"]][chart["parameter"]]
        assert [p["HM"] for p in chart["points"]] == [p["HM"] for p in curve]
        assert chart["points"][chart["start"]]["value"] == sweep["notebook"][chart["parameter"]]
        assert chart["readout"] == readout(chart, chart["start"])
        assert sum(p["best"] for p in chart["points"]) <= 1


def test_sentences_name_both_settings_with_intervals_and_the_test(demo_site_data):
    data = results(demo_site_data)
    for rule, said in data["sentences"].items():
        assert "HM" in said["notebook"] and " to " in said["notebook"], rule
        assert said["baseline"].startswith("Always SUPPORTS"), rule
        best = data["sweep"]["best"][rule]
        if "best setting" in data["sweep"]["tests"][rule]["figures"]:
            assert best["key"] in said["best"]
            assert "more than chance" in said["best"] or "cannot be told apart" in said["best"]


def test_readout_words():
    chart = {
        "rule": "notebook",
        "parameter": "top_n",
        "claims": 154,
        "points": [
            {
                "value": 6,
                "F": 0.07566,
                "A": 0.25326,
                "A_lower": 0.19,
                "A_upper": 0.33,
                "HM": 0.1165,
                "fallback": 0.8117,
                "fallbacks": 125,
            }
        ],
    }
    assert readout(chart, 0) == (
        "notebook rule, top-n 6: F 0.0757, A 0.2533 (95% 0.1900 to 0.3300), HM 0.1165, fallback share 81.2% (125 of 154)"
    )
