"""The course's evaluation (claimtrace.evaluation.scorer, notebook.md section 8)."""

from __future__ import annotations

import json

import pytest

from claimtrace.data import files as data
from claimtrace.data.files import Claim
from claimtrace.errors import DataError
from claimtrace.evaluation.audit import report_path
from claimtrace.evaluation.scorer import evaluate, evidence_f, evidence_scores, harmonic_mean


def _claim(evidences, label="SUPPORTS", claim_id="claim-1"):
    return Claim(claim_id, "text", label, tuple(evidences))


@pytest.mark.parametrize(
    "predicted, gold, expected",
    [
        ([], ["e1"], (0.0, 0.0, 0.0)),
        (["e2", "e3"], ["e1"], (0.0, 0.0, 0.0)),
        (["e1"], ["e1"], (1.0, 1.0, 1.0)),
        (["e1", "e2", "e3", "e4"], ["e1", "e5"], (0.25, 0.5, 1 / 3)),
        # gold duplicates count twice in `correct` and in len(gold); predicted duplicates in len(pred)
        (["e1", "e1"], ["e1", "e1", "e2"], (1.0, 2 / 3, 0.8)),
        (["e1"], [], (0.0, 0.0, 0.0)),
    ],
)
def test_evidence_scores(predicted, gold, expected):
    assert evidence_scores(predicted, gold) == pytest.approx(expected, abs=1e-15)
    assert evidence_f(predicted, gold) == evidence_scores(predicted, gold)[2]


def test_harmonic_mean():
    assert harmonic_mean(0.0, 0.0) == 0.0
    assert harmonic_mean(0.5, 0.5) == 0.5
    assert harmonic_mean(0.04299, 0.55844) == pytest.approx(0.07984, abs=1e-5)  # the report's dev row


def test_gold_against_itself_scores_one(data_dir):
    gold = data.load_claims("dev", data_dir)
    result = evaluate(gold, gold)
    assert (result.F, result.A, result.HM, result.claims) == (1.0, 1.0, 1.0, 154)


def test_baseline_file_figures(data_dir):
    """dev-claims-baseline.json scored as the course's eval.py scores it."""
    result = report_path(data.course_file(data_dir, "baseline"), data_dir).scored.course
    assert result.claims == 154
    assert result.F == 0.3377705627705628
    assert result.A == 0.35064935064935066
    assert result.HM == 0.3440894901357093


def test_missing_claims_are_an_error_unless_skipped(data_dir, tmp_path):
    gold = data.load_claims("dev", data_dir)
    raw = json.loads(data.course_file(data_dir, "baseline").read_text(encoding="utf-8"))
    dropped = sorted(raw)[:3]
    predictions = {
        cid: Claim(cid, "", e["claim_label"], tuple(e["evidences"])) for cid, e in raw.items() if cid not in dropped
    }
    with pytest.raises(DataError, match=rf"p.json: no prediction for 3 of the 154 claims \({dropped[0]}"):
        evaluate(predictions, gold, source="p.json")
    skipped = evaluate(predictions, gold, skip_missing=True)
    assert skipped.claims == 151 and skipped.skipped == dropped
    # eval.py's averages are over the claims it kept
    kept = {k: v for k, v in gold.items() if k not in dropped}
    assert skipped.F == evaluate(predictions, kept).F


def test_unreadable_prediction_file(data_dir, tmp_path):
    path = tmp_path / "broken.json"
    path.write_text("{not json", encoding="utf-8")
    with pytest.raises(DataError, match="not valid JSON"):
        report_path(path, data_dir)
    with pytest.raises(DataError, match="file is missing"):
        report_path(tmp_path / "absent.json", data_dir)


def test_extra_claims_are_ignored():
    gold = {"claim-1": _claim(["e1"])}
    predictions = {"claim-1": _claim(["e1"]), "claim-9": _claim(["e9"], claim_id="claim-9")}
    result = evaluate(predictions, gold)
    assert result.F == 1.0 and result.extra == ["claim-9"]
