"""Attribution methods graded against the exact answer (:mod:`claimtrace.models.attribution`).

Per claim, over its real (not ``[PAD]``) positions, a method's attributions ``a`` against the
exact shares ``e``:

* ``spearman``, ``kendall``: rank correlation (scipy; tau-b). A method that gives every
  position the same value ranks nothing: 0, not undefined;
* ``top3``: the share of the method's three largest ``|a|`` that are among the exact three
  largest ``|e|`` (a position tied with the exact third counts: repeated words share a value);
* ``top_sign``: the method's largest ``|a|`` has the sign ``e`` has there (a position the exact
  answer gives 0 has no sign to get right: wrong);
* ``completeness``: ``|sum(a) - (F(x) - F(all [PAD]))| / |F(x) - F(all [PAD])|``, the relative
  error of the sum against the difference it should add up to.

A claim **passes** when Spearman >= 0.9, top-3 >= 2/3, the top sign is right and completeness
is within 5%; a method passes when the Wilson interval of its share of passing claims lies
above 0.9. Shuffled exact shares keep their sum and fail on ranks: completeness alone grades
nothing. Over claims every figure is a mean with its bootstrap interval (:func:`bootstrap_mean`),
the shares of claims (top sign, passing) Wilson intervals, and the seconds per claim likewise.

Where no exact answer exists (the notebook's LSTM), two methods can only be set beside each
other (:func:`agreement_claim`, :func:`agreement`): the same rank correlations and top-3, one
method's answer in the exact answer's place, summed up over claims by their median (a few
claims whose words barely move the verdict rank noise, and a mean would follow them).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from scipy import stats

from claimtrace.evaluation.statistics import SEED, bootstrap_mean, percentile_interval, resample_indices, wilson

#: What a claim must reach to pass (see the module's docstring).
PASS = {"spearman": 0.9, "top3": 2 / 3, "completeness": 0.05}
#: The share of passing claims whose Wilson lower bound makes a method pass.
METHOD_PASS = 0.9
#: Per-claim grades averaged over claims (bootstrap intervals).
MEANS = ("spearman", "kendall", "top3", "completeness")
#: Per-claim grades that are right or wrong (Wilson intervals).
SHARES = ("top_sign", "passed")
#: Top words a claim's record and page name per method.
TOP = 3


def _correlation(test, a: np.ndarray, e: np.ndarray) -> float:
    if np.ptp(a) == 0 or np.ptp(e) == 0:
        return 0.0
    return float(test(a, e).statistic)


def grade_claim(attributed: np.ndarray, exact: np.ndarray, difference: float) -> dict:
    """One claim's grades.

    Parameters
    ----------
    attributed, exact : ndarray, shape (k,)
        The method's and the exact values at the claim's k real positions.
    difference : float
        ``F(x) - F(all [PAD])``, what the exact values add up to.

    Returns
    -------
    dict with ``spearman``, ``kendall``, ``top3``, ``top_sign``, ``completeness``, ``passed``.
    """
    a, e = np.asarray(attributed, dtype=np.float64), np.asarray(exact, dtype=np.float64)
    k = min(3, len(a))
    top = np.argsort(-np.abs(a), kind="stable")[:k]
    third = np.sort(np.abs(e))[::-1][k - 1]
    lead = int(top[0])
    grades = {
        "spearman": _correlation(stats.spearmanr, a, e),
        "kendall": _correlation(stats.kendalltau, a, e),
        "top3": float(np.mean(np.abs(e[top]) >= third)),
        "top_sign": bool(a[lead] != 0 and np.sign(a[lead]) == np.sign(e[lead])),
        "completeness": completeness_error(a, difference),
    }
    grades["passed"] = bool(
        grades["spearman"] >= PASS["spearman"]
        and grades["top3"] >= PASS["top3"] - 1e-12
        and grades["top_sign"]
        and grades["completeness"] <= PASS["completeness"]
    )
    return grades


def grade_method(per_claim: Sequence[Mapping], seed: int = SEED) -> dict:
    """A method's grades over claims, each with its 95% interval, and whether it passes.

    Parameters
    ----------
    per_claim : sequence of dicts from :func:`grade_claim`, one per claim (the same claims, in
        the same order, for every method: the resamples are the same claims).
    """
    n = len(per_claim)
    indices = resample_indices(n, seed=seed)
    out = {"claims": n}
    for key in MEANS:
        out[key] = bootstrap_mean([g[key] for g in per_claim], indices, seed).to_dict()
    for key in SHARES:
        out[key] = wilson(sum(bool(g[key]) for g in per_claim), n).to_dict()
    out["passes"] = bool(out["passed"]["lower"] >= METHOD_PASS)
    return out


def shuffled(values: np.ndarray, seed: int = SEED) -> np.ndarray:
    """The same values at other positions (a seeded permutation): a deliberately wrong answer
    with the right sum."""
    return np.random.default_rng(seed).permutation(np.asarray(values))


def timing(seconds: Sequence[float], seed: int = SEED) -> dict:
    """A method's seconds per claim (mean, bootstrap interval over claims) and in all."""
    indices = resample_indices(len(seconds), seed=seed)
    return {"per_claim": bootstrap_mean(seconds, indices, seed).to_dict(), "total": float(np.sum(seconds))}


def top_words(tokens: Sequence[str], values: Sequence[float], n: int = TOP) -> list[dict]:
    """The ``n`` positions of largest ``|value|`` (ties: the earlier), each ``{"token", "value"}``
    with its signed value."""
    order = sorted(range(len(values)), key=lambda i: -abs(values[i]))[:n]
    return [{"token": tokens[i], "value": float(values[i])} for i in order]


def completeness_error(attributed: Sequence[float], difference: float) -> float:
    """How far the values' sum is from ``F(x) - F(all [PAD])``, relative to it (as
    :func:`grade_claim`'s ``completeness``)."""
    total = float(np.sum(attributed))
    return abs(total - difference) / abs(difference) if difference else abs(total)


def agreement_claim(first: np.ndarray, second: np.ndarray) -> dict:
    """Two methods' answers on one claim's real positions set beside each other, ``first`` in
    the exact answer's place: ``spearman``, ``kendall``, ``top3`` (of ``second``'s three largest,
    the share among ``first``'s, ties with its third counting) and ``top_same`` (the same
    largest position, or one tied with it)."""
    a, b = np.asarray(first, dtype=np.float64), np.asarray(second, dtype=np.float64)
    k = min(3, len(a))
    top = np.argsort(-np.abs(b), kind="stable")[:k]
    third = np.sort(np.abs(a))[::-1][k - 1]
    return {
        "spearman": _correlation(stats.spearmanr, b, a),
        "kendall": _correlation(stats.kendalltau, b, a),
        "top3": float(np.mean(np.abs(a[top]) >= third)),
        "top_same": bool(np.abs(a[top[0]]) >= np.max(np.abs(a))),
    }


def agreement(per_claim: Sequence[Mapping], at_least: float = PASS["spearman"], seed: int = SEED) -> dict:
    """Two methods' agreement over claims: the median Spearman and Kendall with percentile
    bootstrap intervals over claims, the mean top-3 likewise, and Wilson intervals of the
    shares of claims with the same top position and with Spearman >= ``at_least`` (the bar a
    method must clear against the exact answer).

    Parameters
    ----------
    per_claim : sequence of dicts from :func:`agreement_claim`
    """
    n = len(per_claim)
    indices = resample_indices(n, seed=seed)
    out: dict = {"claims": n}
    for key in ("spearman", "kendall"):
        out[key] = median_interval([g[key] for g in per_claim], indices, seed)
    out["top3"] = bootstrap_mean([g["top3"] for g in per_claim], indices, seed).to_dict()
    out["top_same"] = wilson(sum(bool(g["top_same"]) for g in per_claim), n).to_dict()
    out["spearman_at_least"] = {
        "bar": at_least,
        **wilson(sum(g["spearman"] >= at_least for g in per_claim), n).to_dict(),
    }
    return out


def median_interval(values: Sequence[float], indices: np.ndarray | None = None, seed: int = SEED) -> dict:
    """The median of per-claim values with its percentile bootstrap interval over claims (the
    resamples ``indices``, drawn from ``seed``), as an interval's dict."""
    values = np.asarray(values, dtype=np.float64)
    if indices is None:
        indices = resample_indices(len(values), seed=seed)
    resampled = np.median(values[indices], axis=1)
    return {
        **percentile_interval(float(np.median(values)), resampled, len(indices), seed).to_dict(),
        "statistic": "median",
    }
