"""The demo build's scoreboard with its uncertainty, held to computations that share none of its
code: statsmodels' Wilson interval and McNemar test, and a plain loop over the same resamples."""

from __future__ import annotations

import json
import math

import numpy as np
from statsmodels.stats.contingency_tables import mcnemar
from statsmodels.stats.proportion import proportion_confint

from claimtrace.cli.main import main
from claimtrace.data.files import parse_claims
from claimtrace.evaluation import statistics as S
from claimtrace.evaluation.scorer import evaluate

NOTEBOOK = "notebook+notebook+notebook"


def _per_claim(build, name):
    row = next(r for r in build.scoreboard()["rows"] if r["name"] == name)
    retrieval, model, protocol = row["retrieval"], row["model"], row["protocol"]
    predicted = parse_claims(build.predictions("dev", retrieval, model, protocol), name, labelled=True)
    result = evaluate(predicted, build.claims("dev"))
    return row, [r["F"] for r in result.per_claim], [r["correct"] for r in result.per_claim]


def test_every_row_has_its_intervals_and_its_test_against_the_notebooks_row(demo_build):
    board = demo_build.scoreboard()
    assert board["statistics"]["resamples"] == S.RESAMPLES and board["statistics"]["seed"] == S.SEED
    _, f_notebook, right_notebook = _per_claim(demo_build, NOTEBOOK)
    for row in board["rows"]:
        _, f, right = _per_claim(demo_build, row["name"])
        lower, upper = proportion_confint(sum(right), len(right), alpha=1 - S.LEVEL, method="wilson")
        a = row["intervals"]["A"]
        assert a["estimate"] == row["A"] and abs(a["lower"] - lower) < 1e-12 and abs(a["upper"] - upper) < 1e-12
        assert row["intervals"]["F"]["estimate"] == row["F"]
        assert {"macro_f1", "recall", "HM"} <= set(row["intervals"])
        if row["name"] == NOTEBOOK:
            assert "paired" not in row
            continue
        table = np.zeros((2, 2), dtype=int)
        for one, other in zip(right, right_notebook, strict=True):
            table[int(not one), int(not other)] += 1
        assert abs(row["paired"]["mcnemar"]["exact_p"] - mcnemar(table, exact=True).pvalue) < 1e-12
        assert row["paired"]["p_holm"] >= row["paired"]["p"]
        assert row["paired"]["verdict"] in ("more than chance", "cannot be told apart")


def test_the_notebook_rows_f_interval_is_a_plain_loop_over_the_same_resamples(demo_build):
    row, f, _ = _per_claim(demo_build, NOTEBOOK)
    indices = np.random.default_rng(S.SEED).integers(0, len(f), size=(S.RESAMPLES, len(f))).tolist()
    means = sorted(math.fsum(f[i] for i in resample) / len(f) for resample in indices)
    tail = (1 - S.LEVEL) / 2
    h = (len(means) - 1) * tail
    lower = means[math.floor(h)] + (h - math.floor(h)) * (means[math.floor(h) + 1] - means[math.floor(h)])
    assert abs(row["intervals"]["F"]["lower"] - lower) < 1e-12


def test_always_supports_and_a_random_label_are_baselines_beside_the_rows(demo_build, capsys):
    baselines = {b["name"]: b for b in demo_build.scoreboard()["baselines"]}
    always = baselines["baseline:always-SUPPORTS"]
    gold = [c.label for c in demo_build.claims("dev").values()]
    assert always["baseline"] is True and always["A"] == gold.count("SUPPORTS") / len(gold)
    assert "baseline:random-label" in baselines and "paired" in always
    assert main(["evaluate", "--workdir", str(demo_build.root), "--split", "dev", "--json"], standalone_mode=False) in (
        0,
        None,
    )
    report = json.loads(capsys.readouterr().out)
    assert report["scoreboard"]["baselines"][0]["name"] == "baseline:always-SUPPORTS"
    assert report["gold_vs_retrieved"]["mcnemar"]["b"] >= 0 and "interval" in report["classifier"]["gold"]["alone"]
