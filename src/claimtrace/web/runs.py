"""Your system beside the notebook's, on the site: the runs a server compares.

A run is a predictions file in the course's shape (:mod:`claimtrace.compare.runs`). The server is
given some at start (``claimtrace serve --predictions FILE``, ``--class DIR``) and takes more as
uploads. Every run is kept in the build's run store (:mod:`claimtrace.compare.run_store`: an SQLite
file beside the build, shared by every worker process, surviving a restart; in memory for a
server or test given none) under its content's digest, so ``/compare/<digest>`` can be shared,
and nothing is ever written into the build. Uploads are checked as the command line checks a
file (size cap, the course's shape, known claim ids); past the store's cap the oldest runs are
evicted, and a page asked for one says so. Each process reads a stored run once (kept by digest,
:data:`RUNS_KEPT` at most) and compares it once.
"""

from __future__ import annotations

import datetime
import threading
from collections import OrderedDict
from collections.abc import Iterable
from pathlib import Path

from claimtrace import course
from claimtrace.compare.run_store import Evicted, RunStore, Stored
from claimtrace.compare.runs import (
    Run,
    compare,
    explained_wins,
    pipeline_found_gold,
    read_class,
    run_from_json,
    scoreboard_rows,
)
from claimtrace.compare.uncertainty import class_statistics
from claimtrace.constants import SPLITS
from claimtrace.data.files import json_from_bytes
from claimtrace.errors import DataError
from claimtrace.evaluation.audit import audit_context
from claimtrace.evaluation.scorer import check_predictions_size, predictions_bytes
from claimtrace.lib.lru import LRU
from claimtrace.web.views.classroom import class_page
from claimtrace.web.views.comparison import class_intervals, run_intervals
from claimtrace.workdir.reader import BuildReader

#: Stored runs a process keeps read, and compared, at once (each a few hundred KB at most); a
#: class of a few hundred files fits.
RUNS_KEPT = 512
#: The splits a run may be of on the site (a file's split is found from its claims).
RUN_SPLITS = ("dev", "test")


class Runs:
    """The runs of one server (or one static export), by name and by digest: those given at its
    start, and every upload in its store."""

    def __init__(self, build: BuildReader, store: RunStore | None = None):
        self.build = build
        self.store = store if store is not None else RunStore(None)
        self._given: OrderedDict[str, Run] = OrderedDict()
        self._stored: LRU[str, Run | None] = LRU(RUNS_KEPT)  # a stored run read, by digest (None: unreadable)
        self._reports: LRU[str, tuple[dict, dict[str, dict]]] = LRU(RUNS_KEPT)
        #: The class's statistics (every dev run, every pair of them), with the dev runs' digests
        #: they were computed for; dropped when a run is added or forgotten.
        self._class: tuple[tuple[str, ...], dict] | None = None
        #: The class page's data, with the dev runs' digests it was computed for.
        self._class_page: tuple[tuple[str, ...], dict] | None = None
        #: The files of a class folder set aside (``{"file", "why"}``, the file by its name).
        self.set_aside: list[dict] = []
        self._audit_context: dict | None = None
        self._lock = threading.Lock()

    def over(self, build: BuildReader) -> Runs:
        """The same runs over another reader of the build (a server that noticed the build
        completed or was repaired): the same store; nothing computed from the old reader is kept."""
        runs = Runs(build, self.store)
        with self._lock:
            runs._given = OrderedDict(self._given)
            runs.set_aside = list(self.set_aside)
        return runs

    # -- adding -----------------------------------------------------------------------------------

    def read(self, raw: bytes, source: str, name: str | None = None) -> Run:
        """A run from a file's bytes, its split found from its first claim; DataError naming
        ``source``, the claim and the field for anything the command line would refuse."""
        check_predictions_size(len(raw), source)
        value = json_from_bytes(raw, source)
        run = run_from_json(value, raw, source, name, self._splits(), **self._context())
        if run.split not in RUN_SPLITS:
            raise DataError(f"{source}: holds {run.split} claims; the site compares {' and '.join(RUN_SPLITS)} files")
        return run

    def _splits(self) -> dict:
        return {split: self.build.claims(split) for split in SPLITS}

    def _context(self) -> dict:
        """What a file is audited against beside the claims, as the command line audits it: the
        course baseline file's evidences and the stopwords (read once)."""
        if self._audit_context is None:
            self._audit_context = audit_context(self.build.data_dir)
        return self._audit_context

    def give(self, path: str | Path, name: str | None = None) -> Run:
        """Add a run from a file given at start (it stays while the server runs, and is stored,
        so that its address still answers after a restart without it)."""
        raw = predictions_bytes(path)
        run = self.read(raw, str(path), name)
        with self._lock:
            for other in self._given.values():
                if other.name == run.name and other.digest != run.digest:
                    raise DataError(f"{path}: another run is already named {run.name!r}: give each its own --name")
            self._given[run.digest] = run
            self._class = None
        self.store.put(raw, run.name, "given", keep=self._given_digests())
        return run

    def _given_digests(self) -> frozenset[str]:
        with self._lock:
            return frozenset(self._given)

    def give_all(self, files: Iterable[tuple[str, str | None]]) -> None:
        """:meth:`give` each (file, name) pair, in order; a folder is a class (:meth:`give_class`)."""
        for path, name in files:
            if Path(path).is_dir():
                self.give_class(path)
            else:
                self.give(path, name)

    def give_class(self, folder: str | Path) -> list[dict]:
        """Add every ``*.json`` of a folder as a run named by its file's stem
        (:func:`claimtrace.compare.runs.read_class`); a file the course's scorer cannot score, of
        train, or named as a run already given is set aside (:attr:`set_aside`, the file by its
        name: no machine path on a page), not refused. Returns what this folder set aside."""
        runs, aside = read_class(folder, self._splits(), **self._context())
        aside = [{"file": Path(line["file"]).name, "why": line["why"]} for line in aside]
        for run in runs:
            file = f"{run.name}.json"  # read_class names a run by its file's stem
            if run.split not in RUN_SPLITS:
                aside.append({"file": file, "why": f"holds {run.split} claims; the site compares dev and test files"})
                continue
            with self._lock:
                taken = any(other.name == run.name and other.digest != run.digest for other in self._given.values())
                if not taken:
                    self._given[run.digest] = run
                    self._class = None
            if taken:
                aside.append({"file": file, "why": f"another run is already named {run.name!r}"})
            else:
                self.store.put((Path(folder) / file).read_bytes(), run.name, "given", keep=self._given_digests())
        aside.sort(key=lambda line: line["file"])
        with self._lock:
            self.set_aside += aside
        return aside

    def upload(self, raw: bytes, name: str | None = None) -> Run:
        """Add an uploaded run to the store (the same bytes give the same run, once, under the
        name it was first given), evicting the oldest past the store's cap."""
        run = self.read(raw, "the uploaded file", name or "upload")
        with self._lock:
            known = self._given.get(run.digest)
        if known is not None:
            return known
        label = f"upload {run.digest[:8]}" if run.name == "upload" else run.name
        stored, _ = self.store.put(raw, label, "upload", keep=self._given_digests())
        run = Run(stored.name, *_rest(run))
        self._stored.put(run.digest, run)
        with self._lock:
            self._class = None
        return run

    # -- reading ----------------------------------------------------------------------------------

    def all(self) -> list[Run]:
        """The runs given at start, then every upload in the store, oldest first (another
        process's uploads included: the store is listed on every call, a few hundred rows)."""
        with self._lock:
            given = list(self._given.values())
        known = {run.digest for run in given}
        uploads = (self._stored_run(record) for record in self.store.listed("upload") if record.digest not in known)
        return [*given, *(run for run in uploads if run is not None)]

    def _stored_run(self, record: Stored) -> Run | None:
        """A stored run, read once per process (None when this version's reader refuses it)."""
        if record.digest in self._stored:
            return self._stored.get(record.digest)
        raw = self.store.raw(record.digest)
        try:
            run = (
                None
                if raw is None
                else Run(record.name, *_rest(self.read(raw, f"upload {record.digest}", record.name)))
            )
        except DataError:
            run = None
        self._stored.put(record.digest, run)
        return run

    def evicted(self, key: str | None = None) -> list[Evicted]:
        """The runs evicted from the store to keep it under its cap (those named or keyed
        ``key``, when given), most recent first."""
        return [gone for gone in self.store.evicted() if key is None or key in (gone.name, gone.digest)]

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
        # A run given to an earlier start of the server: its address still answers.
        record = next((r for r in self.store.listed("given") if r.digest == key), None)
        return None if record is None else self._stored_run(record)

    def report(self, run: Run) -> dict:
        """The run's page: :func:`claimtrace.compare.runs.compare` of it alone, with its explained wins."""
        return self._compared(run)[0]

    def _compared(self, run: Run) -> tuple[dict, dict[str, dict]]:
        """The run compared once: its page, and each claim's whole row (a claim page's box) by id."""
        cached = self._reports.get(run.digest)
        if cached is not None:
            return cached
        report = compare(self.build, [run], run.split)
        page = {
            "run": {"strict": None, "strict_note": None, **report["runs"][0]},  # none on an unlabelled split
            "split": run.split,
            "labelled": report["labelled"],
            "scoreboard": report["scoreboard"],
            "table2": report["table2"],
            "found": pipeline_found_gold(report) if report["labelled"] else None,
            "wins": explained_wins(report, run.name, limit=5) if report["labelled"] else [],
            "claims": [_claim_line(row, run.name) for row in report["claims"]],
        }
        if "statistics" in report:
            page["statistics"] = report["statistics"]
            page["intervals"] = run_intervals(report["statistics"], run.name)
        compared = (page, {row["claim_id"]: {**row, "split": run.split} for row in report["claims"]})
        self._reports.put(run.digest, compared)
        return compared

    def index(self) -> dict:
        """The compare page: every run's summary (dev runs by HM, each with its intervals and
        whether it can be told apart from the next), the baselines, the build's rows and Table 2."""
        by_split: dict[str, list[Run]] = {}
        for run in self.all():
            by_split.setdefault(run.split, []).append(run)
        summaries = []
        for split, runs in by_split.items():
            summaries += [{**self.report(run)["run"], "split": split} for run in runs]
        summaries.sort(key=lambda s: (s["split"], -(s["HM"] if s["HM"] is not None else -1.0)))
        out = {
            "runs": summaries,
            "scoreboard": scoreboard_rows(self.build),
            "table2": course.TABLE2["dev"],
            "set_aside": list(self.set_aside),
            "class_page": bool(by_split.get("dev")),
            "store": self.store_summary(),
        }
        statistics = self.class_statistics(by_split.get("dev", []))
        if statistics is not None:
            out.update(class_intervals(statistics, summaries))
            out["statistics"] = statistics
        return out

    def store_summary(self) -> dict:
        """What the run store holds and what it evicted (the compare page says it)."""
        evicted = self.evicted()
        return {
            "kept": len(self.store.listed()),
            "bytes": self.store.total_bytes(),
            "cap_bytes": self.store.cap_bytes,
            "shared": self.store.path is not None,
            "evicted_count": len(evicted),
            "evicted": [evicted_line(gone) for gone in evicted[:EVICTED_SHOWN]],
        }

    def class_statistics(self, runs: list[Run]) -> dict | None:
        """Every dev run's figures and every pair of dev runs, from one resampling
        (:func:`claimtrace.compare.uncertainty.class_statistics`), computed once per set of runs."""
        if not runs:
            return None
        key = tuple(run.digest for run in runs)
        with self._lock:
            cached = self._class
        if cached is not None and cached[0] == key:
            return cached[1]
        statistics = class_statistics(self.build, runs, "dev")
        with self._lock:
            self._class = (key, statistics)
        return statistics

    def class_view(self) -> dict:
        """The class page (:func:`claimtrace.web.views.classroom.class_page`): every dev run
        together, in the index's order, from each run's comparison; computed once per set of runs."""
        dev = [run for run in self.index()["runs"] if run["split"] == "dev"]
        key = tuple(run["digest"] for run in dev)
        with self._lock:
            cached = self._class_page
        if cached is not None and cached[0] == key:
            return cached[1]
        by_digest = {run.digest: run for run in self.all()}
        rows = {digest: self._compared(by_digest[digest])[1] for digest in key}
        page = class_page(self.build, dev, rows, list(self.set_aside))
        with self._lock:
            self._class_page = (key, page)
        return page

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


#: Evicted runs a compare page names (the most recent; the count says how many in all).
EVICTED_SHOWN = 20


def evicted_line(gone: Evicted) -> dict:
    """An evicted run as a page says it: its name, digest and the day and time (UTC) it went."""
    when = datetime.datetime.fromtimestamp(gone.evicted, datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    return {"name": gone.name, "digest": gone.digest, "bytes": gone.size, "evicted": when}


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
