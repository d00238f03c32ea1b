"""An error analysis by gold label: how the classifier's verdicts and the retrieval fare on each
label's claims, every figure with its 95% interval.

Per label: its claims; what they were predicted as; recall (right of the label's claims) and
precision (right of the verdicts giving the label), both proportions, so Wilson intervals; F1, a
ratio of counts over the whole split, with a percentile bootstrap over the split's claims (the
resamples of :mod:`claimtrace.evaluation.statistics`, the same per-label counts as its
macro-F1); the mean evidence F of the label's claims, bootstrapped over those claims; and how many
of them had at least one gold passage retrieved (Wilson). Over the split: the claims with a gold
passage found (Wilson).

May import: ``models`` and below (it is ``evaluation``'s).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from claimtrace.evaluation import statistics as S

__all__ = ["gold_found", "by_label"]


def gold_found(retrieved: Sequence[str], gold: Sequence[str]) -> bool:
    """Whether any of a claim's retrieved passages is one of its gold passages."""
    return not set(retrieved).isdisjoint(gold)


def by_label(
    gold: Sequence[str],
    predicted: Sequence[str],
    evidence_f: Sequence[float],
    found: Sequence[bool],
    labels: Sequence[str],
    resamples: int = S.RESAMPLES,
    seed: int = S.SEED,
) -> dict:
    """The error analysis of one split's verdicts and retrieval, claim ``i`` being
    ``gold[i]``, ``predicted[i]``, ``evidence_f[i]`` and ``found[i]``.

    Returns
    -------
    dict
        ``{"claims", "found": Wilson, "resamples", "seed", "labels": [{"label", "claims",
        "predicted_as": {label: n}, "predicted", "correct", "recall": Wilson, "precision": Wilson
        (NaN bounds when never predicted), "F1": bootstrap, "evidence_F": bootstrap, "found":
        Wilson}]}``; each interval as :meth:`Interval.to_dict`.
    """
    gold_a, predicted_a = np.asarray(gold, dtype=object), np.asarray(predicted, dtype=object)
    f = np.asarray(evidence_f, dtype=np.float64)
    hit = np.asarray(found, dtype=bool)
    n = len(gold_a)
    if not n == len(predicted_a) == len(f) == len(hit):
        raise ValueError("by_label: gold, predicted, evidence_f and found differ in length")
    drawn = S.multiplicities(S.resample_indices(n, resamples, seed))
    f1_resampled = S.f1_by_label(gold_a, predicted_a, labels, drawn)
    f1_sample = S.f1_by_label(gold_a, predicted_a, labels, np.ones(n, dtype=np.int64))
    rows = []
    for column, label in enumerate(labels):
        mine = gold_a == label
        says = predicted_a == label
        correct = int((mine & says).sum())
        rows.append(
            {
                "label": label,
                "claims": int(mine.sum()),
                "predicted_as": {other: int((mine & (predicted_a == other)).sum()) for other in labels},
                "predicted": int(says.sum()),
                "correct": correct,
                "recall": S.wilson(correct, int(mine.sum())).to_dict(),
                "precision": S.wilson(correct, int(says.sum())).to_dict(),
                "F1": S.percentile_interval(
                    float(f1_sample[column]), f1_resampled[:, column], resamples, seed
                ).to_dict(),
                "evidence_F": _mean_of(f[mine], resamples, seed),
                "found": S.wilson(int(hit[mine].sum()), int(mine.sum())).to_dict(),
            }
        )
    return {
        "claims": n,
        "found": S.wilson(int(hit.sum()), n).to_dict(),
        "resamples": resamples,
        "seed": seed,
        "labels": rows,
    }


def _mean_of(values: np.ndarray, resamples: int, seed: int) -> dict | None:
    """The mean of a label's per-claim values with its bootstrap interval over those claims
    (None for a label without claims)."""
    if len(values) == 0:
        return None
    return S.bootstrap_mean(values, S.resample_indices(len(values), resamples, seed), seed).to_dict()
