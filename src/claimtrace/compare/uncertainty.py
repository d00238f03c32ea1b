"""Runs with their uncertainty: each run's figures with their intervals, each run paired with
the notebook's pipeline and with the baselines, and, in a class, every pair of runs, each set of
comparisons Holm-corrected together (:mod:`claimtrace.evaluation.significance`).

Runs are paired on every claim of the split: a claim a file left out (skipped by the course's
scorer) counts as wrong with F 0 here. One set of bootstrap resamples
serves every figure, every comparison and every pair
(:func:`~claimtrace.evaluation.significance.compared_together`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from claimtrace.data.files import Claim
from claimtrace.evaluation.scoreboard import NOTEBOOK_ROW, baseline_results, row_result
from claimtrace.evaluation.scorer import Evaluation, evaluate
from claimtrace.evaluation.significance import compared_together, strict_per_claim


def references(build, split: str, claims: Mapping[str, Claim]) -> dict[str, Evaluation]:
    """What every run is set beside, scored on the split: the notebook's own pipeline (its
    scoreboard row), then each baseline (always the majority label, a random label, the course's
    baseline file)."""
    out = {NOTEBOOK_ROW.name: row_result(build, split, NOTEBOOK_ROW)}
    out.update({b.name: result for b, result in baseline_results(build, split, claims)})
    return out


def run_statistics(build, results: Mapping[str, Evaluation], claims: Mapping[str, Claim], split: str) -> dict:
    """Every run's intervals and paired tests on a labelled split.

    Returns
    -------
    dict
        ``{"method", "figures": {name: figures}, "paired": {run: {other: comparison}},
        "pairs": [...]}``: ``figures`` for every run, the notebook's row and each baseline;
        ``paired[run][other]`` the run minus ``other`` (the notebook's row and each baseline),
        Holm-corrected over the runs compared with that reference; ``pairs`` every pair of runs
        (as :func:`~claimtrace.evaluation.significance.every_pair`), corrected together.
    """
    systems = {name: strict_per_claim(result, claims) for name, result in results.items()}
    against = references(build, split, claims)
    systems.update({name: strict_per_claim(result, claims) for name, result in against.items()})
    return compared_together(systems, list(against))


def class_statistics(build, runs: Sequence, split: str) -> dict:
    """:func:`run_statistics` of a class of runs (each with ``digest`` and ``predictions``, as
    :class:`claimtrace.compare.runs.Run`), the runs named by their digests (two runs may share a
    name): each scored by the course's scorer, left-out claims skipped as ``claimtrace compare``
    skips them."""
    claims = build.claims(split)
    results = {run.digest: evaluate(run.predictions, claims, source=run.name, skip_missing=True) for run in runs}
    return run_statistics(build, results, claims, split)
