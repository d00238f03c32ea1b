"""claimtrace.evaluation.attribution: the exact answer gets a perfect grade, shuffled or random
answers fail, and the edge cases (a constant answer, tied shares) are graded as documented."""

from __future__ import annotations

import numpy as np
import pytest

from claimtrace.evaluation import attribution as G


def _claims(n: int = 154, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.normal(0, 0.01, rng.integers(10, 120)) for _ in range(n)]


def test_the_exact_shares_get_a_perfect_grade():
    graded = [G.grade_claim(e, e, e.sum()) for e in _claims()]
    for g in graded:
        assert g == pytest.approx(
            {"spearman": 1.0, "kendall": 1.0, "top3": 1.0, "top_sign": True, "completeness": 0.0, "passed": True}
        )
    method = G.grade_method(graded)
    assert method["passes"] and method["passed"]["successes"] == 154
    assert method["spearman"]["lower"] == pytest.approx(1.0) and method["completeness"]["upper"] == 0.0


def test_shuffled_shares_keep_their_sum_and_fail():
    claims = _claims()
    graded = [G.grade_claim(G.shuffled(e, seed=i), e, e.sum()) for i, e in enumerate(claims)]
    method = G.grade_method(graded)
    assert not method["passes"]
    assert method["completeness"]["upper"] < 1e-12  # the sum is right: completeness alone grades nothing
    assert method["spearman"]["upper"] < 0.2 and method["passed"]["successes"] < 10


def test_a_constant_answer_ranks_nothing_and_fails():
    e = _claims(1)[0]
    g = G.grade_claim(np.zeros_like(e), e, e.sum())
    assert g["spearman"] == 0.0 and g["kendall"] == 0.0 and not g["top_sign"] and not g["passed"]
    assert g["completeness"] == 1.0


def test_a_position_tied_with_the_exact_third_counts_in_the_top_three():
    exact = np.array([0.5, 0.3, 0.2, 0.2, 0.01])
    attributed = np.array([0.5, 0.3, 0.0, 0.25, 0.01])  # picks the other 0.2
    assert G.grade_claim(attributed, exact, exact.sum())["top3"] == 1.0


def test_the_top_sign_is_read_at_the_methods_largest_token():
    exact = np.array([-0.4, 0.1, 0.05])
    assert not G.grade_claim(np.array([0.4, 0.1, 0.05]), exact, exact.sum())["top_sign"]
    assert G.grade_claim(np.array([-0.3, 0.1, 0.05]), exact, exact.sum())["top_sign"]


def test_timing_has_its_interval_and_total():
    out = G.timing([1.0, 2.0, 3.0])
    assert out["total"] == 6.0 and out["per_claim"]["estimate"] == 2.0
    assert out["per_claim"]["lower"] <= 2.0 <= out["per_claim"]["upper"]


def test_two_methods_that_agree_and_two_that_do_not():
    claims = _claims(40)
    same = [G.agreement_claim(e, 3 * e) for e in claims]  # the same order, another scale
    assert all(g == pytest.approx({"spearman": 1.0, "kendall": 1.0, "top3": 1.0, "top_same": True}) for g in same)
    over = G.agreement(same)
    assert over["spearman"]["estimate"] == pytest.approx(1.0) and over["spearman"]["statistic"] == "median"
    assert over["top_same"]["successes"] == 40 and over["spearman_at_least"]["successes"] == 40
    opposite = G.agreement([G.agreement_claim(e, -e) for e in claims])  # the same sizes, every sign turned
    assert opposite["spearman"]["upper"] == pytest.approx(-1.0) and opposite["spearman_at_least"]["successes"] == 0
    assert opposite["top_same"]["successes"] == 40  # top words go by size: the same ones


def test_the_median_has_a_bootstrap_interval_about_it():
    values = np.r_[np.zeros(10), np.ones(11)]
    got = G.median_interval(values)
    assert got["estimate"] == 1.0 and got["lower"] == 0.0 and got["upper"] == 1.0
    assert got["resamples"] == 10_000 and got["seed"] == 2024 and got["statistic"] == "median"


def test_top_words_by_size_with_their_sign_and_completeness_as_graded():
    tokens, values = ["a", "b", "c", "d"], [0.1, -0.5, 0.3, 0.5]
    assert G.top_words(tokens, values) == [
        {"token": "b", "value": -0.5},
        {"token": "d", "value": 0.5},
        {"token": "c", "value": 0.3},
    ]  # ties: the earlier position first
    assert G.completeness_error(values, 0.8) == pytest.approx(0.5)
    e = _claims(1)[0]
    assert G.completeness_error(e * 1.1, e.sum()) == pytest.approx(G.grade_claim(e * 1.1, e, e.sum())["completeness"])
