"""Systems compared on the same claims: the scoreboard's and a class's statistics."""

from __future__ import annotations

import numpy as np
import pytest

from claimtrace.evaluation import significance
from claimtrace.evaluation import statistics as S

GOLD = ("SUPPORTS",) * 60 + ("REFUTES",) * 40 + ("NOT_ENOUGH_INFO",) * 40 + ("DISPUTED",) * 14


def _system(right_share: float, f_value: float, seed: int) -> S.PerClaim:
    draw = np.random.default_rng(seed)
    right = draw.random(len(GOLD)) < right_share
    predicted = tuple(
        g if r else ("SUPPORTS" if g != "SUPPORTS" else "REFUTES") for g, r in zip(GOLD, right, strict=True)
    )
    f = np.where(draw.random(len(GOLD)) < f_value, 1.0, 0.0)
    return S.PerClaim(GOLD, predicted, f, np.array([p == g for p, g in zip(predicted, GOLD, strict=True)]))


def test_a_clearly_better_system_is_more_than_chance_and_a_copy_is_not():
    systems = {"notebook": _system(0.3, 0.1, 1), "better": _system(0.9, 0.8, 2), "copy": _system(0.3, 0.1, 1)}
    report = significance.against_reference(systems, "notebook", resamples=2000)
    assert set(report["paired"]) == {"better", "copy"}
    better, copy = report["paired"]["better"], report["paired"]["copy"]
    assert better["verdict"] == better["HM"]["verdict"] == "more than chance" and better["A"]["lower"] > 0
    assert copy["verdict"] == copy["HM"]["verdict"] == "cannot be told apart"
    assert copy["A"] == {**copy["A"], "estimate": 0.0, "lower": 0.0, "upper": 0.0}
    assert copy["mcnemar"]["exact_p"] == 1.0
    assert report["figures"]["better"]["A"]["method"] == "Wilson score"
    assert report["method"]["resamples"] == 2000 and report["method"]["seed"] == S.SEED
    # Holm over the two comparisons: never below the uncorrected p
    assert better["p_holm"] >= better["p"]


def test_every_pair_is_corrected_together_and_each_system_can_read_its_verdicts():
    systems = {name: _system(share, 0.2, seed) for name, share, seed in (("a", 0.3, 1), ("b", 0.32, 2), ("c", 0.95, 3))}
    pairs = significance.every_pair(systems, resamples=2000)
    assert [(p["a"], p["b"]) for p in pairs] == [("a", "b"), ("a", "c"), ("b", "c")]
    verdicts = significance.told_apart(pairs, "c", key="A")
    assert verdicts == {"a": "more than chance", "b": "more than chance"}
    assert significance.told_apart(pairs, "a", key="A")["b"] == "cannot be told apart"
    assert all(p["HM"]["p_holm"] >= p["HM"]["p"] for p in pairs)


def test_systems_on_other_claims_are_refused():
    one = _system(0.5, 0.5, 1)
    other = S.PerClaim(GOLD[::-1], one.predicted, one.f, one.right)
    with pytest.raises(ValueError, match="same claims"):
        significance.against_reference({"a": one, "b": other}, "a")


def test_one_resampling_for_runs_and_references_gives_each_comparison_s_bits():
    """compared_together: one set of resamples gives what against_reference (one reference at a
    time) and every_pair (the runs alone) give, to the bit."""
    runs = {name: _system(share, 0.3, seed) for name, share, seed in (("a", 0.4, 4), ("b", 0.5, 5), ("c", 0.7, 6))}
    refs = {"notebook": _system(0.3, 0.1, 1), "always": _system(0.44, 0.1, 7)}
    together = significance.compared_together({**runs, **refs}, list(refs), resamples=500)
    assert list(together["figures"]) == [*runs, *refs]
    for reference in refs:
        alone = significance.against_reference({**runs, reference: refs[reference]}, reference, resamples=500)
        for name in runs:
            assert repr(together["paired"][name][reference]) == repr(alone["paired"][name])
        assert repr(together["figures"][reference]) == repr(alone["figures"][reference])
    assert repr(together["pairs"]) == repr(significance.every_pair(runs, resamples=500))
    single = significance.compared_together({"a": runs["a"], **refs}, list(refs), resamples=500)
    assert single["pairs"] == [] and set(single["paired"]) == {"a"}
