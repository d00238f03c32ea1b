"""Predictions beside the build's pipeline, for Python: ``claimtrace compare`` as an object (the
same reading of each file, the same report), its per-claim table as a DataFrame, and the
site's Compare page as its picture."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

from claimtrace.api.build import Build, open_build
from claimtrace.api.scores import read_predictions
from claimtrace.compare.runs import Run, chosen_split, run_from_json
from claimtrace.compare.runs import compare as compare_runs
from claimtrace.errors import DataError
from claimtrace.evaluation.audit import course_context
from claimtrace.web import pages
from claimtrace.web.notebook import notebook_page
from claimtrace.web.runs import Runs

__all__ = ["Comparison", "compare"]


class Comparison:
    """Runs compared claim by claim with a build's pipeline. :meth:`to_dict` is what
    ``claimtrace compare --predictions FILE ... --json`` prints; :meth:`to_frame` the per-claim
    table."""

    def __init__(self, build: Build, runs: list[Run], raws: list[bytes], report: dict):
        self.build = build
        self.runs = runs
        self.report = report
        self._raws = raws  # each run's bytes, for the site's Compare page

    @property
    def split(self) -> str:
        return self.report["split"]

    @property
    def names(self) -> list[str]:
        return [run.name for run in self.runs]

    @property
    def scores(self) -> list[dict]:
        """Each run's summary: its course scores (a labelled split), agreement with the notebook, audit."""
        return self.report["runs"]

    def claim_rows(self) -> list[dict]:
        """One flat row per claim, in file order: the claim, its label, the notebook's verdicts
        and F, BM25's F, and each run's label, whether it is right and its F (``<name> label``,
        ``<name> right``, ``<name> F``)."""
        rows = []
        for row in self.report["claims"]:
            notebook = row["notebook"]
            flat: dict[str, Any] = {
                "claim_id": row["claim_id"],
                "claim_text": row["claim_text"],
                "label": row["label"],
                "notebook": notebook["verdicts"]["notebook"],
                "notebook alone": notebook["verdicts"]["alone"],
                "notebook F": notebook["F"],
                "notebook fallback": notebook["fallback"],
                "bm25 F": None if row["bm25"] is None else row["bm25"]["F"],
            }
            for name, entry in row["runs"].items():
                flat[f"{name} label"] = None if entry is None else entry["label"]
                flat[f"{name} right"] = None if entry is None else entry["correct"]
                flat[f"{name} F"] = None if entry is None else entry["F"]
            rows.append(flat)
        return rows

    def to_frame(self):
        """The per-claim table (:meth:`claim_rows`) as a pandas DataFrame indexed by claim id, or,
        without pandas, the rows themselves (a list of dicts)."""
        try:
            import pandas
        except ImportError:
            return self.claim_rows()
        return pandas.DataFrame.from_records(self.claim_rows(), index="claim_id")

    def differing(self, name: str | None = None) -> list[str]:
        """The claims on which a run's label is not the notebook's (the first run's by default)."""
        name = self.names[0] if name is None else name
        if name not in self.names:
            raise DataError(f"name: no run is named {name!r} (runs: {', '.join(self.names)})")
        return [
            row["claim_id"]
            for row in self.report["claims"]
            if row["runs"][name] is not None and not row["runs"][name]["same_label_as_notebook"]
        ]

    def to_dict(self) -> dict:
        return self.report

    def __repr__(self) -> str:
        return f"<claimtrace.Comparison of {', '.join(self.names)} on {self.split} with {self.build.root}>"

    def _repr_html_(self) -> str:
        """The site's Compare page of these runs (a dev or test comparison: the site compares no
        train files)."""
        runs = Runs(self.build.reader)  # the site's runs, kept in memory: nothing is written
        for run, raw in zip(self.runs, self._raws, strict=True):
            runs.upload(raw, run.name)
        return notebook_page(self.build.renderer, pages.COMPARE_INDEX, runs.index())


def _as_build(build: Build | str | os.PathLike | None) -> Build:
    if isinstance(build, Build):
        return build
    return open_build(build)


def compare(
    *predictions: str | os.PathLike | Mapping,
    build: Build | str | os.PathLike | None = None,
    names: Sequence[str] | None = None,
    split: str | None = None,
) -> Comparison:
    """Each of ``predictions`` (a file's path, or a dict in the course's shape) beside ``build``'s
    pipeline (a :class:`Build`, a workdir, or None: :func:`open_build`'s default), named by
    ``names`` (default: a file's stem; ``predictions``, or ``predictions 1``, ``predictions 2`` ...
    for dicts), on ``split`` (default: the split most of them are of). The report equals
    ``claimtrace compare``'s; a DataError names the file or argument at fault."""
    if not predictions:
        raise DataError("predictions: give at least one predictions file or dict")
    names = list(names or [])
    if len(names) > len(predictions):
        raise DataError(f"names: {len(names)} names given for {len(predictions)} predictions")
    build = _as_build(build)
    context = course_context(build.data_dir)
    splits = context.pop("splits")
    runs, raws = [], []
    for i, given in enumerate(predictions):
        argument = "predictions" if len(predictions) == 1 else f"predictions {i + 1}"
        value, raw, source = read_predictions(given, argument)
        name = names[i] if i < len(names) else (argument if source == argument else None)
        runs.append(run_from_json(value, raw, source, name, splits, split, **context))
        raws.append(raw)
    chosen = chosen_split(runs, split)
    for run in runs:
        if run.split != chosen:
            raise DataError(f"{run.name}: holds {run.split} claims, the others {chosen}: compare one split at a time")
    report = compare_runs(build.reader, runs, chosen)
    report["set_aside"] = []
    return Comparison(build, runs, raws, report)
