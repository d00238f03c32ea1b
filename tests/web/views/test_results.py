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
        f"{rule}-{parameter}"
        for rule in ("notebook", "submission")
        for parameter in ("cosine", "overlap", "top_n", "score")
    ]
    own = {rule["name"]: rule["score_threshold"] for rule in sweep["rules"]}
    for chart in data["charts"]:
        curve = sweep["curves"][chart["rule"]][chart["parameter"]]
        assert [p["HM"] for p in chart["points"]] == [p["HM"] for p in curve]
        notebook = sweep["notebook"][chart["parameter"]]
        notebook = own[chart["rule"]] if chart["parameter"] == "score" else notebook
        assert chart["points"][chart["start"]]["value"] == notebook
        assert [(p["P"], p["R"]) for p in chart["points"]] == [(p["P"], p["R"]) for p in curve]
        assert [p["F_lower"] for p in chart["points"]] == [p["F_interval"]["lower"] for p in curve]
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
                "F_lower": 0.05,
                "F_upper": 0.1,
                "P": 0.0612,
                "P_lower": 0.04,
                "P_upper": 0.08,
                "R": 0.12,
                "R_lower": 0.081,
                "R_upper": 0.16,
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
        "notebook rule, top-n 6: F 0.0757 (95% 0.0500 to 0.1000), precision 0.0612 (95% 0.0400 to 0.0800), "
        "recall 0.1200 (95% 0.0810 to 0.1600), A 0.2533 (95% 0.1900 to 0.3300), HM 0.1165, fallback share 81.2% (125 of 154)"
    )


def test_training_logs_hold_loss_and_accuracy_of_both_models_beside_the_printed_logs(demo_site_data):
    from claimtrace import course

    training = results(demo_site_data)["training"]
    models = {m["model"]: m for m in training["models"]}
    assert set(models) == {"transformer", "lstm"}
    for model in models.values():
        assert [e["epoch"] for e in model["epochs"]] == list(range(1, 11))
        for e in model["epochs"]:
            assert all(e[key] is not None for key in ("train_loss", "dev_loss", "train_accuracy", "dev_accuracy"))
            interval = e["dev_interval"]
            assert interval["successes"] == e["dev_correct"] and interval["n"] == model["claims"]["dev"] == 154
            assert interval["lower"] <= e["dev_accuracy"] <= interval["upper"]
    lstm = models["lstm"]["epochs"]
    assert [
        tuple(e["notebook"][k] for k in ("train_loss", "train_accuracy", "dev_loss", "dev_accuracy")) for e in lstm
    ] == list(course.ORIGINAL_LSTM_LOG.values())
    transformer = models["transformer"]["epochs"]
    assert [(e["notebook"]["train_accuracy"], e["notebook"]["dev_accuracy"]) for e in transformer] == list(
        course.ORIGINAL_LOG.values()
    )
    assert all(e["notebook"]["train_loss"] is None for e in transformer)  # the notebook printed none
