"""Your system beside the notebook's, on the site: the runs a server compares.

A run is a predictions file in the course's shape (:mod:`claimtrace.compare.runs`). The server is
given some at start (``claimtrace serve --predictions FILE``) and takes more as uploads; every
run is kept in memory under its content's digest, so ``/compare/<digest>`` can be shared while
the server runs, and nothing is ever written into the build. Uploads are checked as the command
line checks a file (size cap, the course's shape, known claim ids), and the oldest upload is
forgotten past :data:`MAX_UPLOADS`; the runs given at start stay.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable
from pathlib import Path

from claimtrace import course
from claimtrace.compare.runs import (
    Run,
    compare,
    explained_wins,
    pipeline_found_gold,
    run_from_json,
    scoreboard_rows,
)
from claimtrace.constants import SPLITS
from claimtrace.data.files import json_from_bytes
from claimtrace.errors import DataError
from claimtrace.evaluation.scorer import check_predictions_size, predictions_bytes
from claimtrace.workdir.reader import Build

#: Uploaded runs kept in memory at once (each is a few tens of KB).
MAX_UPLOADS = 32
#: The splits a run may be of on the site (a file's split is found from its claims).
RUN_SPLITS = ("dev", "test")


class Runs:
    """The runs of one server (or one static export), by name and by digest."""

    def __init__(self, build: Build):
        self.build = build
        self._given: OrderedDict[str, Run] = OrderedDict()
        self._uploads: OrderedDict[str, Run] = OrderedDict()
        self._reports: dict[str, tuple[dict, dict[str, dict]]] = {}
        self._lock = threading.Lock()
        #: Whether uploads are taken (off in a several-process server: each would keep its own).
        self.uploads = True

    def over(self, build: Build) -> Runs:
        """The same runs over another reader of the build (a server that noticed the build
        completed or was repaired): nothing computed from the old reader is kept."""
        runs = Runs(build)
        with self._lock:
            runs._given, runs._uploads = OrderedDict(self._given), OrderedDict(self._uploads)
        runs.uploads = self.uploads
        return runs

    # -- adding -----------------------------------------------------------------------------------

    def read(self, raw: bytes, source: str, name: str | None = None) -> Run:
        """A run from a file's bytes, its split found from its first claim; DataError naming
        ``source``, the claim and the field for anything the command line would refuse."""
        check_predictions_size(len(raw), source)
        value = json_from_bytes(raw, source)
        run = run_from_json(value, raw, source, name, {split: self.build.claims(split) for split in SPLITS})
        if run.split not in RUN_SPLITS:
            raise DataError(f"{source}: holds {run.split} claims; the site compares {' and '.join(RUN_SPLITS)} files")
        return run

    def give(self, path: str | Path, name: str | None = None) -> Run:
        """Add a run from a file given at start (it stays while the server runs)."""
        run = self.read(predictions_bytes(path), str(path), name)
        with self._lock:
            for other in self._given.values():
                if other.name == run.name and other.digest != run.digest:
                    raise DataError(f"{path}: another run is already named {run.name!r}: give each its own --name")
            self._given[run.digest] = run
        return run

    def give_all(self, files: Iterable[tuple[str, str | None]]) -> None:
        """:meth:`give` each (file, name) pair, in order."""
        for path, name in files:
            self.give(path, name)

    def upload(self, raw: bytes, name: str | None = None) -> Run:
        """Add an uploaded run (the same bytes give the same run, once)."""
        if not self.uploads:
            raise DataError(
                "this server runs several processes, and each would keep its own uploads: "
                "give the file to `claimtrace serve --predictions FILE` instead"
            )
        run = self.read(raw, "the uploaded file", name or "upload")
        with self._lock:
            known = self._given.get(run.digest) or self._uploads.get(run.digest)
            if known is not None:
                return known
            run = Run(f"upload {run.digest[:8]}" if run.name == "upload" else run.name, *_rest(run))
            self._uploads[run.digest] = run
            while len(self._uploads) > MAX_UPLOADS:
                forgotten, _ = self._uploads.popitem(last=False)
                self._reports.pop(forgotten, None)
        return run

    # -- reading ----------------------------------------------------------------------------------

    def all(self) -> list[Run]:
        with self._lock:
            return [*self._given.values(), *self._uploads.values()]

    def given(self) -> list[Run]:
        with self._lock:
            return list(self._given.values())

    def get(self, key: str | None) -> Run | None:
        """The run whose name, digest or digest's first 16 hex digits is ``key``."""
        if not key:
            return None
        for run in self.all():
            if key in (run.name, run.digest):
                return run
        return None

    def report(self, run: Run) -> dict:
        """The run's page: :func:`claimtrace.compare.runs.compare` of it alone, with its explained wins."""
        return self._compared(run)[0]

    def _compared(self, run: Run) -> tuple[dict, dict[str, dict]]:
        """The run compared once: its page, and each claim's whole row (a claim page's box) by id."""
        with self._lock:
            cached = self._reports.get(run.digest)
        if cached is not None:
            return cached
        report = compare(self.build, [run], run.split)
        page = {
            "run": report["runs"][0],
            "split": run.split,
            "labelled": report["labelled"],
            "scoreboard": report["scoreboard"],
            "table2": report["table2"],
            "found": pipeline_found_gold(report) if report["labelled"] else None,
            "wins": explained_wins(report, run.name, limit=5) if report["labelled"] else [],
            "claims": [_claim_line(row, run.name) for row in report["claims"]],
        }
        compared = (page, {row["claim_id"]: {**row, "split": run.split} for row in report["claims"]})
        with self._lock:
            self._reports[run.digest] = compared
        return compared

    def index(self) -> dict:
        """The compare page: every run's summary (dev runs by HM), the build's rows and Table 2."""
        by_split: dict[str, list[Run]] = {}
        for run in self.all():
            by_split.setdefault(run.split, []).append(run)
        summaries = []
        for split, runs in by_split.items():
            summaries += [{**self.report(run)["run"], "split": split} for run in runs]
        summaries.sort(key=lambda s: (s["split"], -(s["HM"] if s["HM"] is not None else -1.0)))
        return {"runs": summaries, "scoreboard": scoreboard_rows(self.build), "table2": course.TABLE2["dev"]}

    def box(self, run: Run | None, claim_id: str) -> dict | None:
        """A claim page's "your system" box (None when no run is chosen, or it is of another split)."""
        if run is None:
            return None
        row = self._compared(run)[1].get(claim_id)  # the run's comparison, made once for its page
        if row is None:
            return None
        return {"run": run.name, "digest": run.digest, **row, "entry": row["runs"][run.name]}

    def explore_rows(self, split: str) -> list[dict]:
        """Each run of ``split`` for Explore: its summary (a scoreboard row on dev) and, per claim
        in file order, whether its label is right (None when unlabelled or left out), for the
        filter "your run right, the notebook wrong" and the reverse."""
        rows = []
        for run in self.all():
            if run.split != split:
                continue
            report = self.report(run)
            rows.append({**report["run"], "right": [line["run_right"] for line in report["claims"]]})
        return rows


def with_runs(runs: Runs, explore: dict) -> dict:
    """An Explore page's data with its split's runs (the page itself when there are none, so that
    a server without runs keeps rendering the one cached page)."""
    rows = runs.explore_rows(explore["split"]) if runs.all() else []
    return {**explore, "runs": rows} if rows else explore


def _rest(run: Run) -> tuple:
    return run.digest, run.split, run.predictions, run.missing, run.report


def _claim_line(row: dict, name: str) -> dict:
    """One claim of a run's page: labels and F beside the notebook's, BM25's F."""
    entry = row["runs"][name]
    notebook = row["notebook"]
    line = {
        "claim_id": row["claim_id"],
        "label": row["label"],
        "run_label": None if entry is None else entry["label"],
        "run_right": None if entry is None else entry["correct"],
        "run_F": None if entry is None else entry["F"],
        "notebook_label": notebook["verdicts"]["notebook"],
        "notebook_right": None if row["label"] is None else notebook["verdicts"]["notebook"] == row["label"],
        "notebook_F": notebook["F"],
        "bm25_F": None if row["bm25"] is None else row["bm25"]["F"],
        "why": [] if entry is None else entry.get("why", []),
    }
    return line
