"""Runs with their uncertainty: each run's figures with their intervals, each run paired with
the notebook's pipeline and with the baselines, and, in a class, every pair of runs, each set of
comparisons Holm-corrected together (:mod:`claimtrace.evaluation.significance`).

Runs are paired on every claim of the split: a claim a file left out (skipped by the course's
scorer, with ``--skip-missing``) counts as wrong with F 0 here."""

from __future__ import annotations

from collections.abc import Mapping

from claimtrace.data.files import Claim
from claimtrace.evaluation.scoreboard import NOTEBOOK_ROW, baseline_results, row_result
from claimtrace.evaluation.scorer import Evaluation
from claimtrace.evaluation.significance import against_reference, every_pair, method_note, strict_per_claim


def run_statistics(build, results: Mapping[str, Evaluation], claims: Mapping[str, Claim], split: str) -> dict:
    """Every run's intervals and paired tests on a labelled split.

    Returns
    -------
    dict
        ``{"method", "figures": {name: figures}, "paired": {run: {other: comparison}},
        "pairs": [...]}``: ``figures`` for every run, the notebook's row and each baseline;
        ``paired[run][other]`` the run minus ``other`` (the notebook's row and each baseline),
        Holm-corrected over the runs compared with that reference; ``pairs`` every pair of runs
        (:func:`every_pair`), corrected together.
    """
    runs = list(results)  # the runs' names, in their order
    systems = {name: strict_per_claim(result, claims) for name, result in results.items()}
    references = {NOTEBOOK_ROW.name: row_result(build, split, NOTEBOOK_ROW)}
    references.update({b.name: result for b, result in baseline_results(build, split, claims)})
    systems.update({name: strict_per_claim(result, claims) for name, result in references.items()})
    figures, paired = {}, {name: {} for name in runs}
    for reference in references:
        tested = against_reference({name: systems[name] for name in [*paired, reference]}, reference)
        figures.update(tested["figures"])
        for name in paired:
            paired[name][reference] = tested["paired"][name]
    pairs = every_pair({name: systems[name] for name in runs}) if len(runs) > 1 else []
    return {"method": method_note(), "figures": figures, "paired": paired, "pairs": pairs}
