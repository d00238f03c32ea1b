"""How sure a figure is, and whether two differ by more than chance: every statistic claimtrace
shows beside a score.

The dev split is 154 claims: a sample. Each figure gets a 95% interval, and each comparison of
two systems is paired (the same claims) and tested:

* a proportion (accuracy, a share of claims): the **Wilson score interval**;
* a mean over claims that is not a proportion (the course's evidence F, its harmonic mean with
  accuracy, macro-F1, precision, recall): a **percentile bootstrap over claims**. Claims are
  the unit resampled because they are what was sampled: a claim's passages and label are scored
  together, and the course's F has no closed form for its variance;
* a difference between two systems on the same claims: a **paired bootstrap** (both systems read
  at the same resampled claims), **McNemar's exact test** on the claims where exactly one of the
  two is right (the continuity-corrected chi-square beside it), and **Cohen's h**;
* several comparisons at once: **Holm's** step-down correction of their p-values.

Every bootstrap draws its claim indices from numpy's Generator (PCG64) seeded with
:data:`SEED`, :data:`RESAMPLES` resamples unless told otherwise, and reads the interval off the
resampled values with ``numpy.quantile``'s default (linear) interpolation. Means over resampled
claims are summed in one fixed order (one system's by numpy's pairwise sum of its gather, several
systems' claim after claim, as numpy reduces a stack of their gathers), and counts (right claims,
a label's claims) are whole numbers, exact in any order; so the same inputs give the same bits on
every machine. The distributions are scipy's.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields

import numpy as np
from scipy import stats

from claimtrace.evaluation.bootstrap_bounds import tail_quantiles

#: The confidence level of every interval.
LEVEL = 0.95
#: Resamples of every bootstrap, and the seed of the stream their claim indices come from.
RESAMPLES = 10_000
SEED = 2024
#: The significance level of every "more than chance" verdict (after Holm's correction).
ALPHA = 0.05


@dataclass(frozen=True)
class Interval:
    """A figure and its interval: ``estimate`` on the sample, ``lower``/``upper`` its bounds."""

    estimate: float
    lower: float
    upper: float
    method: str
    level: float = LEVEL
    successes: int | None = None  # Wilson: k of n
    n: int | None = None
    resamples: int | None = None  # bootstrap: how many, from which seed
    seed: int | None = None

    def to_dict(self) -> dict:
        return _fields_of(self, skip_none=True)

    def text(self, digits: int = 4) -> str:
        """``0.3831 [0.3102, 0.4620]``."""
        return f"{self.estimate:.{digits}f} [{self.lower:.{digits}f}, {self.upper:.{digits}f}]"


def wilson(successes: int, n: int, level: float = LEVEL) -> Interval:
    """The Wilson score interval of ``successes`` out of ``n`` (statsmodels'
    ``proportion_confint(method="wilson")``); NaN bounds when ``n`` is 0."""
    if n == 0:
        return Interval(float("nan"), float("nan"), float("nan"), "Wilson score", level, successes, n)
    z = stats.norm.isf((1 - level) / 2)
    share = successes / n
    denominator = 1 + z * z / n
    centre = (share + z * z / (2 * n)) / denominator
    half = z * np.sqrt(share * (1 - share) / n + z * z / (4 * n * n)) / denominator
    return Interval(share, float(centre - half), float(centre + half), "Wilson score", level, successes, n)


def _fields_of(record, skip_none: bool = False) -> dict:
    """A flat dataclass's fields as a dict, in their order (``dataclasses.asdict`` without its
    deep copy, which a class's thousands of comparisons would pay for nothing)."""
    out = {f.name: getattr(record, f.name) for f in fields(record)}
    return {key: value for key, value in out.items() if value is not None} if skip_none else out


def resample_indices(n: int, resamples: int = RESAMPLES, seed: int = SEED) -> np.ndarray:
    """The claim indices of every bootstrap resample.

    Returns
    -------
    ndarray of int64, shape (resamples, n)
        Row ``b`` is resample ``b``: ``n`` indices drawn with replacement from ``0 .. n-1``.
    """
    return np.random.default_rng(seed).integers(0, n, size=(resamples, n), dtype=np.int64)


def resampled_means(values: np.ndarray, indices: np.ndarray) -> np.ndarray:
    """The mean of each system's per-claim values over each resample.

    Parameters
    ----------
    values : ndarray, shape (n,) or (systems, n)
        One value per claim (per system).
    indices : ndarray of int, shape (resamples, n)
        From :func:`resample_indices`.

    Returns
    -------
    ndarray of float64, shape (resamples,) or (systems, resamples)
    """
    values = np.asarray(values, dtype=np.float64)
    if values.ndim == 1:
        return resampled_means(values[np.newaxis], indices)[0]
    # Every system, alone or among others, is summed the same way, in claim order, one claim
    # after the other (as numpy reduces a (systems, resamples, n) gather), a claim's draws at a
    # time, without holding the gather (docs/benchmarks.md, "The statistics"): a system's intervals
    # are the same bits whichever systems it is computed beside.
    by_claim = np.ascontiguousarray(values.T)  # (n, systems): a draw reads one row
    draws = np.ascontiguousarray(indices.T)  # (n, resamples)
    total = by_claim[draws[0]]  # (resamples, systems)
    for column in draws[1:]:
        total += by_claim[column]
    return np.ascontiguousarray(total.T) / indices.shape[1]


def resampled_shares(right: np.ndarray, drawn: np.ndarray) -> np.ndarray:
    """The share of claims each system got right in each resample, from how many times each
    claim is drawn (:func:`multiplicities`): a count, exact in any order, so the same bits as
    :func:`resampled_means` of the right/wrong values without gathering them.

    Parameters
    ----------
    right : ndarray of bool, shape (systems, n)
    drawn : ndarray, shape (resamples, n)
        Whole numbers, int64 or float64.

    Returns
    -------
    ndarray of float64, shape (systems, resamples)
    """
    # whole numbers this small are exact in float64 whatever the order BLAS adds them in
    counts = np.asarray(drawn, dtype=np.float64) @ np.asarray(right, dtype=np.float64).T
    return np.ascontiguousarray(counts.T) / drawn.shape[1]


def percentile_interval(
    estimate: float, resampled: np.ndarray, resamples: int, seed: int, level: float = LEVEL
) -> Interval:
    """The percentile bootstrap interval of resampled values of a statistic."""
    tail = (1 - level) / 2
    lower, upper = np.quantile(resampled, [tail, 1 - tail])
    return _percentile(estimate, lower, upper, resamples, seed, level)


def _percentile(estimate: float, lower: float, upper: float, resamples: int, seed: int, level: float = LEVEL):
    return Interval(
        float(estimate), float(lower), float(upper), "percentile bootstrap", level, None, None, resamples, seed
    )


def bootstrap_mean(values: Sequence[float], indices: np.ndarray, seed: int = SEED) -> Interval:
    """The mean of per-claim values (the course's F, precision, recall) with its bootstrap
    interval over the resamples ``indices`` (drawn from ``seed``)."""
    values = np.asarray(values, dtype=np.float64)
    return percentile_interval(float(values.mean()), resampled_means(values, indices), len(indices), seed)


def harmonic_means(f: np.ndarray, a: np.ndarray) -> np.ndarray:
    """The course's headline ``2FA / (F + A)``, elementwise, 0 where both are 0."""
    total = f + a
    return np.where(total == 0, 0.0, 2 * f * a / np.where(total == 0, 1.0, total))


# --- labels ---------------------------------------------------------------------------------------


def multiplicities(indices: np.ndarray) -> np.ndarray:
    """How many times each claim is drawn in each resample.

    Returns
    -------
    ndarray of int64, shape (resamples, n)
    """
    resamples, n = indices.shape
    flat = (indices + n * np.arange(resamples, dtype=np.int64)[:, None]).ravel()
    return np.bincount(flat, minlength=resamples * n).reshape(resamples, n)


def _f1_by_label(true_positives, gold_counts, predicted_counts):
    """Per-label F1, ``2TP / (gold + predicted)``, 0 where a label is in neither (scikit-learn's
    ``zero_division=0``), and which labels are present (in gold or predictions)."""
    present = (gold_counts + predicted_counts) > 0
    f1 = np.where(present, 2 * true_positives / np.where(present, gold_counts + predicted_counts, 1), 0.0)
    return f1, present


def _label_counts(gold: np.ndarray, predicted: np.ndarray, labels: Sequence[str], weights: np.ndarray):
    """(true positives, gold counts, predicted counts) per label, weighted per claim.

    ``weights`` is ``(n,)`` for the sample itself or ``(resamples, n)`` multiplicities; the
    counts are integers, so the order they are summed in changes nothing."""
    hits = np.stack([(gold == label) & (predicted == label) for label in labels], axis=1)
    in_gold = np.stack([gold == label for label in labels], axis=1)
    in_predicted = np.stack([predicted == label for label in labels], axis=1)
    # One product for the three, in float64: whole numbers this small are exact whatever the
    # order BLAS adds them in, and numpy's integer product has no BLAS (docs/benchmarks.md,
    # "The statistics").
    columns = np.concatenate([hits, in_gold, in_predicted], axis=1).astype(np.float64)
    counts = (np.asarray(weights, dtype=np.float64) @ columns).astype(np.int64)
    width = len(labels)
    return counts[..., :width], counts[..., width : 2 * width], counts[..., 2 * width :]


def f1_by_label(gold: np.ndarray, predicted: np.ndarray, labels: Sequence[str], weights: np.ndarray) -> np.ndarray:
    """Each label's F1 (0 for a label in neither), on the sample (``weights`` ones, shape
    ``(n,)``) or on each resample (:func:`multiplicities`, shape ``(resamples, n)``)."""
    return _f1_by_label(*_label_counts(gold, predicted, labels, weights))[0]


def _macro(f1: np.ndarray, present: np.ndarray) -> np.ndarray:
    return (f1 * present).sum(axis=-1) / np.maximum(present.sum(axis=-1), 1)


def macro_f1(gold: Sequence[str], predicted: Sequence[str]) -> float:
    """Macro-F1 as scikit-learn's ``f1_score(average="macro", zero_division=0)``: the mean F1 of
    the labels present in gold or predictions."""
    gold, predicted = np.asarray(gold, dtype=object), np.asarray(predicted, dtype=object)
    labels = sorted(set(gold.tolist()) | set(predicted.tolist()), key=str)
    f1, present = _f1_by_label(*_label_counts(gold, predicted, labels, np.ones(len(gold), dtype=np.int64)))
    return float(_macro(f1, present))


def bootstrap_macro_f1(
    gold: Sequence[str],
    predicted: Sequence[str],
    indices: np.ndarray,
    seed: int = SEED,
    drawn: np.ndarray | None = None,
) -> Interval:
    """Macro-F1 with its bootstrap interval; each resample averages the labels present in it.
    ``drawn`` is :func:`multiplicities` of ``indices``, when already computed."""
    gold, predicted = np.asarray(gold, dtype=object), np.asarray(predicted, dtype=object)
    labels = sorted(set(gold.tolist()) | set(predicted.tolist()), key=str)
    drawn = multiplicities(indices) if drawn is None else drawn
    f1, present = _f1_by_label(*_label_counts(gold, predicted, labels, drawn))
    return percentile_interval(macro_f1(gold, predicted), _macro(f1, present), len(indices), seed)


def recall_by_label(gold: Sequence[str], predicted: Sequence[str], labels: Sequence[str]) -> dict[str, dict]:
    """Per gold label: how many claims carry it, how many of them got it (recall, with its Wilson
    interval), and how often the label was predicted at all (a label never predicted is said so)."""
    gold, predicted = list(gold), list(predicted)
    out = {}
    for label in labels:
        carrying = [p for g, p in zip(gold, predicted, strict=True) if g == label]
        found = sum(1 for p in carrying if p == label)
        out[label] = {
            "claims": len(carrying),
            "recall": wilson(found, len(carrying)).to_dict(),
            "predicted": sum(1 for p in predicted if p == label),
        }
    return out


# --- two systems on the same claims ---------------------------------------------------------------


@dataclass(frozen=True)
class McNemar:
    """McNemar's test on paired right/wrong: ``b`` claims only A got right, ``c`` only B."""

    b: int
    c: int
    exact_p: float  # two-sided binomial test of b against Bin(b + c, 1/2)
    chi2: float  # continuity-corrected
    chi2_p: float


def mcnemar_of_counts(b: np.ndarray, c: np.ndarray) -> list[McNemar]:
    """McNemar's test of each pair of discordant counts: ``b[i]`` claims only the first system
    got right, ``c[i]`` only the second (scipy's distributions take them all in one call).
    A pair with no discordant claim has p = 1."""
    b, c = np.asarray(b, dtype=np.int64), np.asarray(c, dtype=np.int64)
    discordant = b + c
    tested = discordant > 0
    exact = np.ones(len(b))
    chi2, chi2_p = np.zeros(len(b)), np.ones(len(b))
    if tested.any():
        exact[tested] = np.minimum(1.0, 2 * stats.binom.cdf(np.minimum(b, c)[tested], discordant[tested], 0.5))
        chi2[tested] = (np.abs(b - c)[tested] - 1) ** 2 / discordant[tested]
        chi2_p[tested] = stats.chi2.sf(chi2[tested], 1)
    return [
        McNemar(int(x), int(y), float(e), float(q), float(qp))
        for x, y, e, q, qp in zip(b.tolist(), c.tolist(), exact.tolist(), chi2.tolist(), chi2_p.tolist(), strict=True)
    ]


def cohens_h(p1: float, p2: float) -> float:
    """Cohen's h, ``2 asin sqrt(p1) - 2 asin sqrt(p2)`` (statsmodels' ``proportion_effectsize``):
    about 0.2 is small, 0.5 medium, 0.8 large."""
    return float(2 * np.arcsin(np.sqrt(p1)) - 2 * np.arcsin(np.sqrt(p2)))


def _two_sided(below: float, above: float) -> float:
    return min(1.0, 2 * min(below, above))


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjustment of p-values tested together (statsmodels'
    ``multipletests(method="holm")``): the k-th smallest is multiplied by (m - k + 1), and
    adjusted values never decrease along that order."""
    p = np.asarray(p_values, dtype=np.float64)
    order = np.argsort(p, kind="stable")
    scaled = np.minimum(1.0, p[order] * (len(p) - np.arange(len(p))))
    adjusted = np.empty_like(p)
    adjusted[order] = np.maximum.accumulate(scaled)
    return adjusted.tolist()


def verdict(p: float, alpha: float = ALPHA) -> str:
    """The plain words for a (corrected) p-value."""
    return "more than chance" if p < alpha else "cannot be told apart"


# --- a system's figures, and systems compared ------------------------------------------------------


@dataclass(frozen=True)
class PerClaim:
    """One system's per-claim results on a labelled split, claims in one order shared by every
    system it is compared with.

    ``f`` is the course's per-claim evidence F, ``right`` whether the label is the gold one."""

    gold: tuple[str, ...]
    predicted: tuple[str | None, ...]
    f: np.ndarray  # shape (n,), float64
    right: np.ndarray  # shape (n,), bool


#: The differences :meth:`Resampled.paired` gives, in its order.
PAIRED_KEYS = ("A", "F", "HM")
#: Pairs of systems whose resampled differences :meth:`Resampled.paired_many` holds at once.
_PAIRS_AT_ONCE = 256


class Resampled:
    """Several systems' means over the same bootstrap resamples of claims, computed once:
    every figure and every paired difference reads them."""

    def __init__(self, systems: Sequence[PerClaim], resamples: int = RESAMPLES, seed: int = SEED):
        self.resamples, self.seed = resamples, seed
        self.indices = resample_indices(len(systems[0].f), resamples, seed)
        # (resamples, n): for the counts; whole numbers, held as float64 for BLAS's products
        self.drawn = multiplicities(self.indices).astype(np.float64)
        self.f = resampled_means(np.stack([s.f for s in systems]), self.indices)  # (systems, resamples)
        self.right = np.stack([s.right for s in systems])
        self.a = resampled_shares(self.right, self.drawn)
        self.hm = harmonic_means(self.f, self.a)
        self.systems = list(systems)
        # each system's figures on the sample, as every comparison reads them
        self._a_mean = [float(s.right.mean()) for s in systems]
        self._f_mean = np.array([s.f.mean() for s in systems])
        self._hm_mean = harmonic_means(self._f_mean, np.array(self._a_mean))

    def _interval(self, estimate: float, values: np.ndarray) -> Interval:
        return percentile_interval(estimate, values, self.resamples, self.seed)

    def figures(self, k: int) -> dict:
        """System ``k``'s figures, each with its interval: A (Wilson), F, HM and macro-F1
        (bootstrap), and the recall of each gold label."""
        system = self.systems[k]
        f, a = float(system.f.mean()), float(system.right.mean())
        labels = sorted(set(system.gold))
        return {
            "A": wilson(int(system.right.sum()), len(system.right)).to_dict(),
            "F": self._interval(f, self.f[k]).to_dict(),
            "HM": self._interval(float(harmonic_means(np.array(f), np.array(a))), self.hm[k]).to_dict(),
            "macro_f1": bootstrap_macro_f1(
                system.gold, system.predicted, self.indices, self.seed, self.drawn
            ).to_dict(),
            "recall": recall_by_label(system.gold, system.predicted, labels),
        }

    def paired(self, k: int, against: int) -> dict:
        """System ``k`` minus system ``against`` on the same claims: each difference with its
        paired bootstrap interval; accuracy also by McNemar's exact test and Cohen's h; F and HM
        by their bootstrap p. ``p`` is the test of record (McNemar's exact p on accuracy)."""
        return self.paired_many([(k, against)])[0]

    def paired_many(self, pairs: Sequence[tuple[int, int]], keys: Sequence[str] = PAIRED_KEYS) -> list[dict]:
        """:meth:`paired` of each ``(k, against)``, in order. A block of pairs' resampled
        differences is read at once: one quantile call and one McNemar call per block, not
        three and one per pair (a class of 70 files has 2,415 pairs). ``keys``: the differences
        wanted (a class's every pair shows A and HM only: its F differences, 10,000 resamples
        each, would be computed for nothing); each is the same bits whichever others are asked."""
        out: list[dict] = []
        for start in range(0, len(pairs), _PAIRS_AT_ONCE):
            out += self._paired_block(pairs[start : start + _PAIRS_AT_ONCE], keys)
        return out

    def _paired_block(self, pairs: Sequence[tuple[int, int]], keys: Sequence[str]) -> list[dict]:
        bounds, p, tests = self._block_columns(pairs, keys)
        return [self._comparison(k, j, i, bounds, p, tests[i]) for i, (k, j) in enumerate(pairs)]

    def paired_columns(self, pairs: Sequence[tuple[int, int]], keys: Sequence[str] = PAIRED_KEYS) -> dict:
        """What :meth:`paired_many` gives, as columns over the pairs instead of a dict per pair (a
        class's pairs held as dicts, then corrected into new ones, took much memory:
        docs/benchmarks.md, "A class: `claimtrace compare --class`"): ``bounds`` and ``p`` per key
        (lists over the pairs, each bound ``[lower, upper]``), ``mcnemar_p`` (the exact p), the
        same values block by block."""
        out: dict = {"bounds": {key: [] for key in keys}, "p": {key: [] for key in keys}, "mcnemar_p": []}
        for start in range(0, len(pairs), _PAIRS_AT_ONCE):
            bounds, p, tests = self._block_columns(pairs[start : start + _PAIRS_AT_ONCE], keys)
            for key in keys:
                out["bounds"][key] += bounds[key]
                out["p"][key] += p[key]
            out["mcnemar_p"] += [test.exact_p for test in tests]
        return out

    def percentile_dict(self, estimate: float, lower: float, upper: float) -> dict:
        """``_percentile(estimate, lower, upper, resamples, seed).to_dict()``, built directly."""
        return {
            "estimate": float(estimate),
            "lower": float(lower),
            "upper": float(upper),
            "method": "percentile bootstrap",
            "level": LEVEL,
            "resamples": self.resamples,
            "seed": self.seed,
        }

    def estimates(self, k: int, j: int) -> dict:
        """System ``k`` minus system ``j`` on the sample: A, F and HM."""
        return {
            "A": self._a_mean[k] - self._a_mean[j],
            "F": self._f_mean[k] - self._f_mean[j],
            "HM": self._hm_mean[k] - self._hm_mean[j],
        }

    def effect_size(self, k: int, j: int) -> float:
        """Cohen's h of system ``k``'s accuracy against system ``j``'s."""
        return cohens_h(self._a_mean[k], self._a_mean[j])

    def _block_columns(self, pairs: Sequence[tuple[int, int]], keys: Sequence[str]) -> tuple[dict, dict, list]:
        """A block of pairs' interval bounds and bootstrap p per key, and their McNemar tests."""
        ks = np.array([k for k, _ in pairs], dtype=np.int64)
        js = np.array([j for _, j in pairs], dtype=np.int64)
        bounds, p = {}, {}
        for key in keys:
            resampled = {"A": self.a, "F": self.f, "HM": self.hm}[key]
            gaps = resampled[ks] - resampled[js]  # (pairs, resamples)
            # the shares np.mean gives: a whole count over the resamples, exact in any order
            below = (np.count_nonzero(gaps <= 0, axis=-1) / self.resamples).tolist()
            above = (np.count_nonzero(gaps >= 0, axis=-1) / self.resamples).tolist()
            p[key] = [_two_sided(x, y) for x, y in zip(below, above, strict=True)]
            # the same bounds as a quantile call per pair; the gaps are not needed after it
            bounds[key] = tail_quantiles(gaps, LEVEL).tolist()  # numpy.quantile's bits, from the tails
        right = self.right.astype(np.int64)
        only_k = (right[ks] * (1 - right[js])).sum(axis=1)
        only_j = ((1 - right[ks]) * right[js]).sum(axis=1)
        return bounds, p, mcnemar_of_counts(only_k, only_j)

    def _comparison(self, k: int, j: int, i: int, bounds: dict, p: dict, test: McNemar) -> dict:
        """Pair ``i`` of a block, ``k`` minus ``j``, from the block's bounds and p-values."""
        estimates = self.estimates(k, j)
        gap = {key: self.percentile_dict(estimates[key], *bounds[key][i]) for key in bounds}
        return {
            **{key: gap[key] if key == "A" else {**gap[key], "p": p[key][i]} for key in bounds},
            "mcnemar": _fields_of(test),
            "cohens_h": self.effect_size(k, j),
            "p": test.exact_p,
        }


def with_holm(comparisons: list[dict], key: str = "p", alpha: float = ALPHA) -> list[dict]:
    """Each comparison with its Holm-corrected ``p_holm`` (over all of them, tested together)
    and the verdict at ``alpha`` that follows from it."""
    adjusted = holm([c[key] for c in comparisons]) if comparisons else []
    return [{**c, "p_holm": p, "verdict": verdict(p, alpha)} for c, p in zip(comparisons, adjusted, strict=True)]
