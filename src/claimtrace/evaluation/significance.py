"""Systems scored on the same claims, each figure with its interval and each system paired with a
reference system (the notebook's own pipeline) and tested: the scoreboard's and a class's
statistics, computed once from the course scorer's per-claim results.

Every comparison made at once is corrected together (Holm), and its verdict says whether the
difference is more than chance at :data:`claimtrace.evaluation.statistics.ALPHA`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import combinations

import numpy as np

from claimtrace.data.files import Claim
from claimtrace.evaluation import statistics as S
from claimtrace.evaluation.scorer import Evaluation


def strict_per_claim(result: Evaluation, gold: Mapping[str, Claim]) -> S.PerClaim:
    """A course-scorer result over every claim of the split, in sorted claim order: a claim the
    file left out (skipped by the course's scorer) counts as wrong with F 0, so that systems are
    always paired on the same claims."""
    scored = {r["claim_id"]: r for r in result.per_claim}
    ids = sorted(gold)
    missing = {"F": 0.0, "correct": False, "label": None}
    rows = [scored.get(cid, missing) for cid in ids]
    return S.PerClaim(
        gold=tuple(gold[cid].label for cid in ids),
        predicted=tuple(r["label"] for r in rows),
        f=np.array([r["F"] for r in rows], dtype=np.float64),
        right=np.array([r["correct"] for r in rows], dtype=bool),
    )


def method_note(resamples: int = S.RESAMPLES, seed: int = S.SEED) -> dict:
    """How every figure of a report was made: stated wherever the figures are shown."""
    return {
        "level": S.LEVEL,
        "alpha": S.ALPHA,
        "proportions": "Wilson score interval",
        "means": f"percentile bootstrap over claims, {resamples:,} resamples, seed {seed}",
        "paired": "paired bootstrap of the difference (the same resampled claims); accuracy also by McNemar's exact test, with Cohen's h",
        "correction": "Holm, over every comparison shown together",
        "resamples": resamples,
        "seed": seed,
    }


def _check_same_claims(systems: Mapping[str, S.PerClaim]) -> None:
    golds = {system.gold for system in systems.values()}
    if len(golds) > 1:
        raise ValueError("systems compared must be scored on the same claims, in the same order")


def against_reference(
    systems: Mapping[str, S.PerClaim], reference: str, resamples: int = S.RESAMPLES, seed: int = S.SEED
) -> dict:
    """Every system's figures with their intervals, and every other system paired with
    ``reference``: its differences in A, F and HM with their intervals, McNemar's exact p on A
    and the bootstrap p on HM, each Holm-corrected over the systems compared.

    Returns
    -------
    dict
        ``{"method", "figures": {name: figures}, "paired": {name: comparison}}``; a comparison
        holds ``A``/``F``/``HM`` differences (system minus reference), ``mcnemar``,
        ``cohens_h``, ``p`` (McNemar's), ``p_holm``, ``verdict`` (on A), and ``HM.p_holm``,
        ``HM.verdict``.
    """
    _check_same_claims(systems)
    names = list(systems)
    resampled = S.Resampled([systems[n] for n in names], resamples, seed)
    others = [name for name in names if name != reference]
    return {
        "method": method_note(resamples, seed),
        "reference": reference,
        "figures": _figures(resampled, names),
        "paired": _against(resampled, names, others, reference),
    }


def every_pair(systems: Mapping[str, S.PerClaim], resamples: int = S.RESAMPLES, seed: int = S.SEED) -> list[dict]:
    """Every pair of systems compared (a class of files), Holm-corrected over all the pairs: on
    HM by the paired bootstrap, on A by McNemar's exact test.

    Returns
    -------
    list of dict
        ``{"a", "b", "HM": difference a - b with p, p_holm, verdict, "A": difference with
        "p" (McNemar), "p_holm", "verdict"}`` per pair, in the systems' order.
    """
    _check_same_claims(systems)
    names = list(systems)
    if len(names) < 2:
        return []
    return _pairs(S.Resampled([systems[n] for n in names], resamples, seed), names, names)


def compared_together(
    systems: Mapping[str, S.PerClaim], references: Sequence[str], resamples: int = S.RESAMPLES, seed: int = S.SEED
) -> dict:
    """Runs beside reference systems, from one set of resamples: every system's figures, every
    run (a system that is not a reference) paired with each reference, and every pair of runs.

    The bootstrap's claim indices depend only on the number of claims, ``resamples`` and
    ``seed``, so each figure and each comparison is bit for bit what :func:`against_reference`
    (one reference at a time) and :func:`every_pair` (the runs alone) give; the claims are
    resampled once instead of once per reference and once more for the pairs.

    Returns
    -------
    dict
        ``{"method", "figures": {name: figures}, "paired": {run: {reference: comparison}},
        "pairs": [...]}``: ``paired[run][reference]`` as :func:`against_reference`'s, Holm-corrected
        over the runs compared with that reference; ``pairs`` as :func:`every_pair`'s over the
        runs, corrected together (empty for fewer than two runs).
    """
    _check_same_claims(systems)
    names = list(systems)
    runs = [name for name in names if name not in references]
    resampled = S.Resampled([systems[n] for n in names], resamples, seed)
    paired: dict[str, dict] = {run: {} for run in runs}
    for reference in references:
        for run, comparison in _against(resampled, names, runs, reference).items():
            paired[run][reference] = comparison
    return {
        "method": method_note(resamples, seed),
        "figures": _figures(resampled, names),
        "paired": paired,
        "pairs": _pairs(resampled, names, runs) if len(runs) > 1 else [],
    }


def _figures(resampled: S.Resampled, names: Sequence[str]) -> dict:
    return {name: resampled.figures(k) for k, name in enumerate(names)}


def _against(resampled: S.Resampled, names: Sequence[str], others: Sequence[str], reference: str) -> dict:
    """Each of ``others`` minus ``reference``, Holm-corrected over ``others`` (on A by McNemar's
    p, on HM by the bootstrap p)."""
    k_reference = names.index(reference)
    compared = resampled.paired_many([(names.index(name), k_reference) for name in others])
    on_a = S.with_holm(compared)
    on_hm = S.with_holm([c["HM"] for c in compared])
    return {name: {**comparison, "HM": hm} for name, comparison, hm in zip(others, on_a, on_hm, strict=True)}


def _pairs(resampled: S.Resampled, names: Sequence[str], among: Sequence[str]) -> list[dict]:
    """Every pair of ``among`` (``a`` before ``b`` in their order), Holm-corrected over the pairs:
    on HM by the bootstrap p, on A by McNemar's exact p.

    Each pair's dicts are built once, from the pairs' columns (a pair's F difference is not
    shown, so not computed): the same values as correcting :meth:`S.Resampled.paired_many`'s
    comparisons with :func:`S.with_holm`, without holding three dicts per pair on the way."""
    pairs = list(combinations([names.index(name) for name in among], 2))
    columns = resampled.paired_columns(pairs, keys=("A", "HM"))
    p = {"HM": columns["p"]["HM"], "A": columns["mcnemar_p"]}
    corrected = {key: S.holm(values) if values else [] for key, values in p.items()}
    out = []
    for i, (k, j) in enumerate(pairs):
        estimates = resampled.estimates(k, j)
        pair: dict = {"a": names[k], "b": names[j]}
        for key in ("HM", "A"):
            adjusted = corrected[key][i]
            pair[key] = {
                **resampled.percentile_dict(estimates[key], *columns["bounds"][key][i]),
                "p": p[key][i],
                "p_holm": adjusted,
                "verdict": S.verdict(adjusted),
            }
        pair["cohens_h"] = resampled.effect_size(k, j)
        out.append(pair)
    return out


def told_apart(pairs: Sequence[dict], name: str, key: str = "HM") -> dict[str, str]:
    """For one system, each other system's verdict against it on ``key``."""
    out = {}
    for pair in pairs:
        if name in (pair["a"], pair["b"]):
            out[pair["b"] if pair["a"] == name else pair["a"]] = pair[key]["verdict"]
    return out


def figures_of(result: Evaluation, resamples: int = S.RESAMPLES, seed: int = S.SEED) -> dict:
    """A predictions file's figures with their intervals, over the claims the course's scorer
    scored (``{"A", "F", "HM", "macro_f1", "recall", "method"}``)."""
    rows = result.per_claim
    if not rows:
        return {"method": method_note(resamples, seed)}
    system = S.PerClaim(
        gold=tuple(r["gold_label"] for r in rows),
        predicted=tuple(r["label"] for r in rows),
        f=np.array([r["F"] for r in rows], dtype=np.float64),
        right=np.array([r["correct"] for r in rows], dtype=bool),
    )
    return {**S.Resampled([system], resamples, seed).figures(0), "method": method_note(resamples, seed)}


def labels_paired(
    gold: Sequence[str], one: Sequence[str], other: Sequence[str], resamples: int = S.RESAMPLES, seed: int = S.SEED
) -> dict:
    """Two label sets on the same claims (one model on gold evidence and on retrieved, say):
    ``one`` minus ``other`` in accuracy, with its paired bootstrap interval, McNemar's exact
    test, Cohen's h and the verdict at :data:`S.ALPHA` (a single comparison, uncorrected)."""
    zeros = np.zeros(len(gold))
    systems = [
        S.PerClaim(tuple(gold), tuple(labels), zeros, np.array([p == g for p, g in zip(labels, gold, strict=True)]))
        for labels in (one, other)
    ]
    paired = S.Resampled(systems, resamples, seed).paired(0, 1)
    out = {key: paired[key] for key in ("A", "mcnemar", "cohens_h", "p")}
    return {**out, "verdict": S.verdict(paired["p"]), "method": method_note(resamples, seed)}


def verdicts_paired(gold: Mapping[str, Claim], one: Mapping[str, str], other: Mapping[str, str]) -> dict:
    """Two stored verdict sets on the same labelled claims (claim id -> label), ``one`` minus
    ``other`` in accuracy, paired over the claims in sorted order (:func:`labels_paired`)."""
    ids = sorted(gold)
    return labels_paired([gold[cid].label for cid in ids], [one[cid] for cid in ids], [other[cid] for cid in ids])
