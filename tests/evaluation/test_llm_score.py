"""An LLM run's own figures (claimtrace.evaluation.llm_score): counted, paired with the notebook's
classifier on the same claims, citations, latency, tokens, cost, the interval-width sentence."""

from __future__ import annotations

import pytest

from claimtrace.data.files import Claim
from claimtrace.evaluation import llm as P
from claimtrace.evaluation import llm_score as L


def _run(rows, failed=()) -> dict:
    """A run of claims ``c0..``: each row (answer text, latency)."""
    value = {}
    for i, (text, latency) in enumerate(rows):
        value[f"c{i}"] = P.claim_entry(f"claim {i}", P.judge_answer(text), text, latency, (100, 10))
    ids = [f"c{i}" for i in range(len(rows))] + list(failed)
    value[P.RUN_KEY] = {
        "model": "gpt-4o-mini-2024",
        "sample": {"n": len(ids), "seed": 0, "stratified": False, "claim_ids": ids},
        "failed": {cid: "HTTP 500 (after 4 retries)" for cid in failed},
    }
    return value


GOLD = {f"c{i}": Claim(f"c{i}", f"claim {i}", "SUPPORTS", ("e1",)) for i in range(6)}


def test_a_run_is_counted_scored_and_paired_on_its_sample():
    ok = '{"label": "SUPPORTS", "evidence_ids": ["e1", "e9"]}'
    run = _run(
        [(ok, 100), (ok, 200), (ok, 300), ('{"label": "REFUTES", "evidence_ids": []}', 400), ("no", 500)], ["c5"]
    )
    notebook = {f"c{i}": "REFUTES" for i in range(6)}
    shown = {f"c{i}": ["e1", "e2"] for i in range(6)}
    report = L.score_run(run, GOLD, notebook, shown, resamples=200)
    assert report["counts"] == {"sampled": 6, "scored": 5, "ok": 4, "unusable": 1, "failed": 1}
    assert report["accuracy"]["estimate"] == pytest.approx(3 / 5) and report["accuracy"]["n"] == 5
    assert report["notebook_accuracy"]["estimate"] == 0.0
    assert report["paired"]["mcnemar"]["b"] == 3 and report["paired"]["mcnemar"]["c"] == 0
    assert report["paired"]["A"]["estimate"] == pytest.approx(0.6)
    assert report["citations"]["cited"] == 6 and report["citations"]["valid"] == 3  # e9 was never shown
    assert report["evidence_f"]["estimate"] == pytest.approx(3 * (2 / 3) / 5)
    assert report["latency"] == {"median_ms": 300.0, "p90_ms": pytest.approx(460.0)}
    assert report["tokens"] == {"in": 500, "out": 50}
    assert report["cost"]["usd"] == pytest.approx((500 * 0.15 + 50 * 0.60) / 1e6)
    assert "±0.44" in report["note"]


def test_the_interval_width_sentence_at_20_claims():
    assert L.interval_width(20) == pytest.approx(0.219, abs=1e-3)
    assert "At 20 claims a 95% interval on a share is about ±0.22 wide" in L.width_note(20)


def test_prices_by_the_longest_prefix_and_unknown_otherwise():
    assert L.price_of("gpt-4o-mini-2024-07-18") == (0.15, 0.60)
    assert L.price_of("gpt-4o-2024-08-06") == (2.50, 10.00)
    assert L.cost_of("llama-3-8b", 1000, 1000)["usd"] == "unknown"


def test_a_run_with_nothing_scored_says_so():
    report = L.score_run(_run([], ["c0"]), GOLD, {}, {})
    assert report["counts"]["scored"] == 0 and "accuracy" not in report


def test_hm_is_the_courses_harmonic_mean_of_accuracy_and_evidence_f():
    ok = '{"label": "SUPPORTS", "evidence_ids": ["e1", "e9"]}'
    run = _run([(ok, 1), ('{"label": "REFUTES", "evidence_ids": ["e1"]}', 1), (ok, 1), ("no", 1)])
    report = L.score_run(run, GOLD, {f"c{i}": "SUPPORTS" for i in range(6)}, {}, resamples=200)
    a, f = 2 / 4, (2 / 3 + 1 + 2 / 3) / 4
    assert report["hm"]["estimate"] == pytest.approx(2 * a * f / (a + f))
    assert report["hm"]["lower"] <= report["hm"]["estimate"] <= report["hm"]["upper"]
    assert report["hm"]["method"] == "percentile bootstrap"


def test_two_conditions_are_paired_on_the_claims_scored_under_both():
    right, wrong = '{"label": "SUPPORTS", "evidence_ids": ["e1"]}', '{"label": "REFUTES", "evidence_ids": []}'
    retrieved = _run([(wrong, 1), (wrong, 1), (right, 1), (wrong, 1)], failed=["c4"])
    on_gold = _run([(right, 1), (right, 1), (right, 1), (wrong, 1), (right, 1)])
    paired = L.conditions_paired(retrieved, on_gold, GOLD, resamples=200)
    assert paired["claims"] == 4  # c4 failed with the retrieved passages
    assert (paired["mcnemar"]["b"], paired["mcnemar"]["c"]) == (2, 0)
    assert paired["A"]["estimate"] == pytest.approx(3 / 4 - 1 / 4) and paired["F"]["estimate"] == pytest.approx(0.5)
    assert paired["hm"] == {"gold": pytest.approx(0.75), "retrieved": pytest.approx(0.25)}
    assert paired["HM"]["estimate"] == pytest.approx(0.5) and paired["p"] == pytest.approx(0.5)
    assert paired["verdict"] == "cannot be told apart" and paired["cohens_h"] > 0
    assert L.conditions_paired(retrieved, {P.RUN_KEY: {}}, GOLD) == {"claims": 0}
