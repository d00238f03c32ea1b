"""The error analysis by gold label (evaluation/by_label.py): counts, Wilson intervals of recall,
precision and gold found, F1 and each label's mean evidence F with their bootstrap intervals."""

from __future__ import annotations

import json

import pytest

from claimtrace.evaluation import statistics as S
from claimtrace.evaluation.by_label import by_label, gold_found

LABELS = ("SUPPORTS", "REFUTES", "NOT_ENOUGH_INFO", "DISPUTED")
GOLD = ["SUPPORTS"] * 5 + ["REFUTES"] * 3 + ["NOT_ENOUGH_INFO"] * 2
PREDICTED = ["SUPPORTS", "SUPPORTS", "SUPPORTS", "REFUTES", "NOT_ENOUGH_INFO", "REFUTES", "SUPPORTS", "SUPPORTS"] + [
    "SUPPORTS",
    "NOT_ENOUGH_INFO",
]
F = [0.5, 0.0, 0.25, 0.0, 1.0, 0.0, 0.0, 0.4, 0.0, 0.2]
FOUND = [f > 0 for f in F]


@pytest.fixture(scope="module")
def analysis():
    return by_label(GOLD, PREDICTED, F, FOUND, LABELS, resamples=2000)


def test_counts_and_wilson_intervals(analysis):
    rows = {r["label"]: r for r in analysis["labels"]}
    s = rows["SUPPORTS"]
    assert s["claims"] == 5 and s["correct"] == 3 and s["predicted"] == 6
    assert s["predicted_as"] == {"SUPPORTS": 3, "REFUTES": 1, "NOT_ENOUGH_INFO": 1, "DISPUTED": 0}
    assert s["recall"] == S.wilson(3, 5).to_dict() and s["precision"] == S.wilson(3, 6).to_dict()
    assert s["found"] == S.wilson(3, 5).to_dict()
    assert analysis["found"] == S.wilson(sum(FOUND), len(FOUND)).to_dict()
    # a label never predicted and without claims: no precision, no evidence F, F1 0
    d = rows["DISPUTED"]
    assert d["claims"] == 0 and d["predicted"] == 0 and d["evidence_F"] is None and d["F1"]["estimate"] == 0.0


def test_f1_and_evidence_f_with_bootstrap_intervals(analysis):
    for row in analysis["labels"]:
        tp, gold, predicted = row["correct"], row["claims"], row["predicted"]
        expected = 0.0 if gold + predicted == 0 else 2 * tp / (gold + predicted)
        assert row["F1"]["estimate"] == pytest.approx(expected)
        assert row["F1"]["method"] == "percentile bootstrap" and row["F1"]["resamples"] == 2000
        assert row["F1"]["lower"] <= row["F1"]["estimate"] <= row["F1"]["upper"]
        if row["claims"]:
            mine = [f for f, g in zip(F, GOLD, strict=True) if g == row["label"]]
            assert row["evidence_F"]["estimate"] == pytest.approx(sum(mine) / len(mine))
            assert row["evidence_F"]["lower"] <= row["evidence_F"]["estimate"] <= row["evidence_F"]["upper"]


def test_same_inputs_same_figures():
    twice = [json.dumps(by_label(GOLD, PREDICTED, F, FOUND, LABELS, resamples=500)) for _ in range(2)]
    assert twice[0] == twice[1]  # as text: a label never predicted has NaN precision bounds


def test_gold_found_is_any_gold_passage_retrieved():
    assert gold_found(["a", "b"], ["c", "b"]) and not gold_found(["a"], ["c"]) and not gold_found([], ["c"])


def test_lengths_must_agree():
    with pytest.raises(ValueError, match="differ in length"):
        by_label(GOLD, PREDICTED[:-1], F, FOUND, LABELS, resamples=10)
