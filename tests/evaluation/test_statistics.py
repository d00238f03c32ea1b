"""The statistics module against implementations that share none of its code: statsmodels
(Wilson, McNemar, Cohen's h, Holm), scikit-learn (macro-F1) and plain Python loops over the
same resample stream (every bootstrap)."""

from __future__ import annotations

import json
import math
import random
from unittest import mock

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import f1_score
from statsmodels.stats.contingency_tables import mcnemar as sm_mcnemar
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.proportion import proportion_confint, proportion_effectsize

from claimtrace.evaluation import statistics as S

LABELS = ("SUPPORTS", "REFUTES", "NOT_ENOUGH_INFO", "DISPUTED")
EXACT = 1e-12
FIXED = settings(derandomize=True, max_examples=60, deadline=None)


# --- Wilson ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("k", "n", "shown"),
    [(59, 154, (38.3, 31.0, 46.2)), (89, 154, (57.8, 49.9, 65.3)), (68, 154, (44.2, 36.6, 52.0))],
)
def test_wilson_gives_the_seed_sites_figures(k, n, shown):
    """The 2026 explainer's label accuracy, gold-evidence accuracy and always-SUPPORTS figures."""
    interval = S.wilson(k, n)
    assert tuple(round(100 * v, 1) for v in (interval.estimate, interval.lower, interval.upper)) == shown


@FIXED
@given(st.integers(1, 2000).flatmap(lambda n: st.tuples(st.integers(0, n), st.just(n))))
def test_wilson_is_statsmodels(pair):
    k, n = pair
    lower, upper = proportion_confint(k, n, alpha=1 - S.LEVEL, method="wilson")
    interval = S.wilson(k, n)
    assert abs(interval.lower - lower) < EXACT and abs(interval.upper - upper) < EXACT
    assert interval.estimate == k / n and interval.successes == k and interval.n == n


def test_wilson_of_nothing_is_undefined():
    assert math.isnan(S.wilson(0, 0).estimate)


# --- McNemar, Cohen's h, Holm ------------------------------------------------------------------------


def _mcnemar(right_a, right_b) -> S.McNemar:
    """McNemar's test of two systems' per-claim right/wrong on the same claims, through the
    counts the comparisons read: ``b`` claims only A got right, ``c`` only B."""
    right_a, right_b = np.asarray(right_a, dtype=bool), np.asarray(right_b, dtype=bool)
    b, c = int((right_a & ~right_b).sum()), int((~right_a & right_b).sum())
    return S.mcnemar_of_counts(np.array([b]), np.array([c]))[0]


@FIXED
@given(st.lists(st.tuples(st.booleans(), st.booleans()), min_size=1, max_size=300))
def test_mcnemar_is_statsmodels(pairs):
    right_a, right_b = zip(*pairs, strict=True)
    test = _mcnemar(right_a, right_b)
    a, b = np.array(right_a), np.array(right_b)
    table = [[int((a & b).sum()), int((a & ~b).sum())], [int((~a & b).sum()), int((~a & ~b).sum())]]
    assert (test.b, test.c) == (table[0][1], table[1][0])
    assert abs(test.exact_p - sm_mcnemar(table, exact=True).pvalue) < EXACT
    if test.b + test.c:
        corrected = sm_mcnemar(table, exact=False, correction=True)
        assert abs(test.chi2 - corrected.statistic) < EXACT and abs(test.chi2_p - corrected.pvalue) < EXACT


@FIXED
@given(st.floats(0, 1), st.floats(0, 1))
def test_cohens_h_is_statsmodels(p1, p2):
    assert abs(S.cohens_h(p1, p2) - proportion_effectsize(p1, p2)) < EXACT


@FIXED
@given(st.lists(st.floats(0, 1), min_size=1, max_size=40))
def test_holm_is_statsmodels(p_values):
    # multipletests calls gc.collect() every time: with the suite's builds and caches alive that
    # is most of a minute over 60 examples, and it changes no figure, so it is skipped here.
    with mock.patch("gc.collect"):
        expected = multipletests(p_values, method="holm")[1]
    assert np.allclose(S.holm(p_values), expected, rtol=0, atol=EXACT)


def test_verdicts_follow_the_corrected_p():
    rows = S.with_holm([{"p": 0.01}, {"p": 0.04}, {"p": 0.5}])
    assert [r["p_holm"] for r in rows] == pytest.approx([0.03, 0.08, 0.5])
    assert [r["verdict"] for r in rows] == ["more than chance", "cannot be told apart", "cannot be told apart"]


# --- macro-F1 ------------------------------------------------------------------------------------


labels_lists = st.integers(1, 200).flatmap(
    lambda n: st.tuples(
        st.lists(st.sampled_from(LABELS), min_size=n, max_size=n),
        st.lists(st.sampled_from(LABELS), min_size=n, max_size=n),
    )
)


@FIXED
@given(labels_lists)
def test_macro_f1_is_scikit_learns(pair):
    gold, predicted = pair
    assert abs(S.macro_f1(gold, predicted) - f1_score(gold, predicted, average="macro", zero_division=0)) < EXACT


# --- the bootstraps, against plain loops on the same resample stream ----------------------------------


def _plain_indices(n: int, resamples: int, seed: int) -> list[list[int]]:
    """The same draws as S.resample_indices, one resample at a time."""
    generator = np.random.default_rng(seed)
    return generator.integers(0, n, size=(resamples, n)).tolist()


def _plain_quantile(values: list[float], q: float) -> float:
    """numpy's default ('linear') quantile, by hand."""
    ordered = sorted(values)
    h = (len(ordered) - 1) * q
    low = math.floor(h)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (h - low) * (ordered[high] - ordered[low])


def _plain_interval(values: list[float]) -> tuple[float, float]:
    tail = (1 - S.LEVEL) / 2
    return _plain_quantile(values, tail), _plain_quantile(values, 1 - tail)


@FIXED
@given(st.lists(st.floats(0, 1), min_size=2, max_size=60), st.integers(0, 2**31))
def test_bootstrap_mean_is_a_plain_loop(values, seed):
    resamples = 200
    interval = S.bootstrap_mean(values, S.resample_indices(len(values), resamples, seed), seed)
    means = [math.fsum(values[i] for i in row) / len(values) for row in _plain_indices(len(values), resamples, seed)]
    lower, upper = _plain_interval(means)
    assert abs(interval.lower - lower) < EXACT and abs(interval.upper - upper) < EXACT
    assert interval.estimate == pytest.approx(math.fsum(values) / len(values), abs=EXACT)
    assert (interval.resamples, interval.seed) == (resamples, seed)


def _plain_hm(f: float, a: float) -> float:
    return 0.0 if f == 0 and a == 0 else 2 * f * a / (f + a)


@FIXED
@given(
    st.integers(2, 60).flatmap(
        lambda n: st.tuples(
            st.lists(st.floats(0, 1), min_size=n, max_size=n), st.lists(st.booleans(), min_size=n, max_size=n)
        )
    ),
    st.integers(0, 2**31),
)
def test_a_systems_harmonic_mean_interval_is_a_plain_loop(pair, seed):
    f, right = pair
    resamples = 200
    predicted = tuple("SUPPORTS" if r else "REFUTES" for r in right)
    system = S.PerClaim(("SUPPORTS",) * len(f), predicted, np.array(f), np.array(right))
    interval = S.Resampled([system], resamples, seed).figures(0)["HM"]
    hms = []
    for row in _plain_indices(len(f), resamples, seed):
        hms.append(_plain_hm(math.fsum(f[i] for i in row) / len(f), sum(right[i] for i in row) / len(f)))
    lower, upper = _plain_interval(hms)
    assert abs(interval["lower"] - lower) < EXACT and abs(interval["upper"] - upper) < EXACT
    assert interval["estimate"] == pytest.approx(_plain_hm(math.fsum(f) / len(f), sum(right) / len(f)), abs=EXACT)


@settings(derandomize=True, max_examples=8, deadline=None)
@given(labels_lists.filter(lambda pair: len(pair[0]) >= 2), st.integers(0, 2**31))
def test_bootstrap_macro_f1_is_scikit_learn_on_each_resample(pair, seed):
    gold, predicted = pair
    resamples = 60
    interval = S.bootstrap_macro_f1(gold, predicted, S.resample_indices(len(gold), resamples, seed), seed)
    values = [
        f1_score([gold[i] for i in row], [predicted[i] for i in row], average="macro", zero_division=0)
        for row in _plain_indices(len(gold), resamples, seed)
    ]
    lower, upper = _plain_interval(values)
    assert abs(interval.lower - lower) < EXACT and abs(interval.upper - upper) < EXACT


def _system(n: int, seed: int) -> S.PerClaim:
    draw = random.Random(seed)
    gold = tuple(draw.choice(LABELS) for _ in range(n))
    predicted = tuple(g if draw.random() < 0.5 else draw.choice(LABELS) for g in gold)
    f = np.array([draw.choice([0.0, 0.0, 0.25, 0.4, 2 / 3, 1.0]) for _ in range(n)])
    return S.PerClaim(gold, predicted, f, np.array([p == g for p, g in zip(predicted, gold, strict=True)]))


def test_a_paired_difference_is_a_plain_loop_over_the_same_claims():
    one, other = _system(154, 1), _system(154, 2)
    other = S.PerClaim(
        one.gold, other.predicted, other.f, np.array([p == g for p, g in zip(other.predicted, one.gold, strict=True)])
    )
    resampled = S.Resampled([one, other], resamples=300, seed=7)
    paired = resampled.paired(0, 1)
    gaps_a, gaps_f, gaps_hm = [], [], []
    for row in _plain_indices(154, 300, 7):
        fa, fb = (math.fsum(s.f[i] for i in row) / 154 for s in (one, other))
        aa, ab = (sum(bool(s.right[i]) for i in row) / 154 for s in (one, other))
        gaps_a.append(aa - ab)
        gaps_f.append(fa - fb)
        gaps_hm.append(_plain_hm(fa, aa) - _plain_hm(fb, ab))
    for key, gaps in (("A", gaps_a), ("F", gaps_f), ("HM", gaps_hm)):
        lower, upper = _plain_interval(gaps)
        assert abs(paired[key]["lower"] - lower) < EXACT and abs(paired[key]["upper"] - upper) < EXACT, key
    below = sum(g <= 0 for g in gaps_hm) / 300
    above = sum(g >= 0 for g in gaps_hm) / 300
    assert paired["HM"]["p"] == pytest.approx(min(1.0, 2 * min(below, above)), abs=EXACT)
    assert paired["p"] == paired["mcnemar"]["exact_p"]
    figures = resampled.figures(0)
    assert figures["A"]["estimate"] == one.right.mean() and figures["A"]["method"] == "Wilson score"
    assert figures["recall"]["SUPPORTS"]["claims"] == one.gold.count("SUPPORTS")


def test_a_label_never_predicted_has_recall_zero_and_says_so():
    recall = S.recall_by_label(
        ["SUPPORTS", "REFUTES", "REFUTES"], ["SUPPORTS", "SUPPORTS", "SUPPORTS"], ["SUPPORTS", "REFUTES"]
    )
    assert recall["REFUTES"]["recall"]["estimate"] == 0.0 and recall["REFUTES"]["predicted"] == 0
    assert recall["SUPPORTS"]["recall"]["estimate"] == 1.0 and recall["SUPPORTS"]["predicted"] == 3


# --- the same bits, faster ------------------------------------------------------------------------


def test_several_systems_means_are_numpys_sum_of_the_whole_gather():
    """Several systems' resampled means, a claim's draws at a time, are bit for bit numpy's sum
    over the whole (systems, resamples, n) gather (which adds claim after claim); one system's
    are summed the same way (not numpy's pairwise sum of its own 2-d gather); right/wrong shares
    come from counts."""
    rng = np.random.default_rng(3)
    for systems, n, resamples in ((2, 154, 2000), (9, 154, 500), (70, 154, 200), (5, 1000, 100), (3, 7, 50)):
        values = rng.random((systems, n)) * rng.integers(0, 2, (systems, n))
        indices = S.resample_indices(n, resamples, seed=systems)
        assert np.array_equal(S.resampled_means(values, indices), values[..., indices].sum(axis=-1) / n)
        alone = np.zeros(resamples)
        for column in indices.T:  # claim after claim
            alone += values[0][column]
        assert np.array_equal(S.resampled_means(values[0], indices), alone / n)
        right = rng.random((systems, n)) < 0.4
        shares = S.resampled_shares(right, S.multiplicities(indices))
        assert np.array_equal(shares, right.astype(np.float64)[..., indices].sum(axis=-1) / n)


def _bootstrap_p(differences: np.ndarray) -> float:
    """The two-sided percentile-bootstrap p-value of a difference being 0: twice the smaller
    share of resampled differences on either side of 0 (at most 1)."""
    return min(1.0, 2 * min(float(np.mean(differences <= 0)), float(np.mean(differences >= 0))))


def test_pairs_compared_in_blocks_are_each_pair_compared_alone():
    """paired_many's blocks give each pair what its own quantile, bootstrap p and McNemar give."""
    systems = [_system(154, k) for k in range(5)]
    gold = systems[0].gold
    systems = [
        S.PerClaim(gold, s.predicted, s.f, np.array([p == g for p, g in zip(s.predicted, gold)])) for s in systems
    ]
    resampled = S.Resampled(systems, resamples=400, seed=11)
    pairs = [(i, j) for i in range(5) for j in range(5) if i != j]
    for (i, j), paired in zip(pairs, resampled.paired_many(pairs), strict=True):
        one, other = systems[i], systems[j]
        assert paired["mcnemar"] == _mcnemar(one.right, other.right).__dict__
        gap = resampled.hm[i] - resampled.hm[j]
        alone = S.percentile_interval(paired["HM"]["estimate"], gap, 400, 11).to_dict()
        assert {k: v for k, v in paired["HM"].items() if k != "p"} == alone and paired["HM"]["p"] == _bootstrap_p(gap)
        a_gap = resampled.a[i] - resampled.a[j]
        assert paired["A"] == S.percentile_interval(one.right.mean() - other.right.mean(), a_gap, 400, 11).to_dict()
    assert S.mcnemar_of_counts(np.array([0, 3]), np.array([0, 5]))[0] == S.McNemar(0, 0, 1.0, 0.0, 1.0)


def test_a_system_s_resampled_means_are_the_same_bits_alone_or_among_others():
    """One summation for every system: a run's intervals do not depend on which other systems
    they were computed beside (``evaluate``'s alone, a class's together)."""
    rng = np.random.default_rng(7)
    values = rng.random((4, 154))
    indices = S.resample_indices(154, 500)
    together = S.resampled_means(values, indices)
    for k in range(4):
        assert np.array_equal(S.resampled_means(values[k], indices), together[k])
        assert np.array_equal(S.resampled_means(values[k : k + 1], indices)[0], together[k])


def test_tail_quantiles_are_numpys_quantile_to_the_bit():
    """The bounds read from each row's tails are numpy.quantile's, whatever the row holds: ties
    (accuracy differences), one value, a NaN or a negative zero (left to numpy), sorted rows,
    lengths that are not a multiple of the groups, rows too short to gain; through the kernel
    (``few=0``) and, for few rows, through numpy itself."""
    from claimtrace.evaluation.bootstrap_bounds import FEW_ROWS, tail_quantiles

    rng = np.random.default_rng(5)
    ties = (rng.integers(0, 155, (40, 10_000)) - rng.integers(0, 155, (40, 10_000))) / 154
    odd = rng.normal(size=(6, 10_000))
    odd[0, 17], odd[1, 9_999], odd[2] = np.nan, -0.0, 0.0
    odd[2, 5] = -0.0
    cases = [
        rng.normal(size=(64, 10_000)),
        ties,
        np.zeros((3, 10_000)),
        odd,
        np.sort(rng.normal(size=(4, 10_000)))[:, ::-1],
        rng.random((5, 10_007)),
        rng.random((4, 2_000)),
        rng.random((3, 37)),
    ]
    tail = (1 - S.LEVEL) / 2
    for values in cases:
        expected = np.quantile(values, [tail, 1 - tail], axis=-1).T
        for few in (0, FEW_ROWS):
            got = tail_quantiles(values, S.LEVEL, few=few)
            assert np.array_equal(got.view(np.int64), expected.view(np.int64)), (values.shape, few)


def test_few_rows_do_not_compile_the_tails_kernel():
    """A build's few dozen rows are numpy's to answer: the kernel's first compile on a machine
    (seconds) is left to a class's thousands of pairs."""
    from unittest import mock

    from claimtrace.evaluation import bootstrap_bounds

    values = np.random.default_rng(6).normal(size=(bootstrap_bounds.FEW_ROWS - 1, 2_000))
    with mock.patch.object(bootstrap_bounds, "_order_statistics", side_effect=AssertionError("compiled")):
        bootstrap_bounds.tail_quantiles(values, S.LEVEL)
    with (
        pytest.raises(AssertionError, match="compiled"),
        mock.patch.object(bootstrap_bounds, "_order_statistics", side_effect=AssertionError("compiled")),
    ):
        bootstrap_bounds.tail_quantiles(np.vstack([values, values[:1]]), S.LEVEL)


def test_a_class_s_pairs_are_each_pair_compared_and_corrected_as_defined():
    """Every pair of a class (10,000 resamples, so the bounds come from the rows' tails), its
    dicts built from columns: each is the pair's own quantiles, bootstrap p, McNemar's exact p
    and Cohen's h, Holm-corrected over the pairs, key for key and bit for bit."""
    from itertools import combinations

    from claimtrace.evaluation.significance import every_pair

    gold = _system(154, 0).gold
    systems = {}
    for k in range(9):
        s = _system(154, k + 1)
        systems[f"run-{k}"] = S.PerClaim(gold, s.predicted, s.f, np.array([p == g for p, g in zip(s.predicted, gold)]))
    pairs = every_pair(systems)
    resampled = S.Resampled(list(systems.values()))
    names = list(systems)
    expected = []
    for i, j in combinations(range(len(names)), 2):
        one, other = systems[names[i]], systems[names[j]]
        hm = [float(S.harmonic_means(np.array(s.f.mean()), np.array(s.right.mean()))) for s in (one, other)]
        hm_gap, a_gap = resampled.hm[i] - resampled.hm[j], resampled.a[i] - resampled.a[j]
        a = one.right.mean() - other.right.mean()
        expected.append(
            {
                "a": names[i],
                "b": names[j],
                "HM": {
                    **S.percentile_interval(hm[0] - hm[1], hm_gap, S.RESAMPLES, S.SEED).to_dict(),
                    "p": _bootstrap_p(hm_gap),
                },
                "A": {
                    **S.percentile_interval(a, a_gap, S.RESAMPLES, S.SEED).to_dict(),
                    "p": _mcnemar(one.right, other.right).exact_p,
                },
                "cohens_h": S.cohens_h(one.right.mean(), other.right.mean()),
            }
        )
    for key in ("HM", "A"):
        for pair, corrected in zip(expected, S.with_holm([pair[key] for pair in expected]), strict=True):
            pair[key] = corrected
    assert [json.dumps(pair) for pair in pairs] == [json.dumps(pair) for pair in expected]
    assert "F" not in pairs[0] and len(pairs) == 36
