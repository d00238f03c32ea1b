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
from claimtrace.web.views.classroom import class_page
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
        #: The class's statistics (every dev run, every pair of them), with the dev runs' digests
        #: they were computed for; dropped when a run is added or forgotten.
        self._class: tuple[tuple[str, ...], dict] | None = None
        #: The class page's data, with the dev runs' digests it was computed for.
        self._class_page: tuple[tuple[str, ...], dict] | None = None
        #: The files of a class folder set aside (``{"file", "why"}``, the file by its name).
        self.set_aside: list[dict] = []
        self._audit_context: dict | None = None
        self._lock = threading.Lock()
        #: Whether uploads are taken (off in a several-process server: each would keep its own).
        self.uploads = True

    def over(self, build: Build) -> Runs:
        """The same runs over another reader of the build (a server that noticed the build
        completed or was repaired): nothing computed from the old reader is kept."""
        runs = Runs(build)
        with self._lock:
            runs._given, runs._uploads = OrderedDict(self._given), OrderedDict(self._uploads)
            runs.set_aside = list(self.set_aside)
        runs.uploads = self.uploads
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
        """Add a run from a file given at start (it stays while the server runs)."""
        run = self.read(predictions_bytes(path), str(path), name)
        with self._lock:
            for other in self._given.values():
                if other.name == run.name and other.digest != run.digest:
                    raise DataError(f"{path}: another run is already named {run.name!r}: give each its own --name")
            self._given[run.digest] = run
            self._class = None
        return run

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
        aside.sort(key=lambda line: line["file"])
        with self._lock:
            self.set_aside += aside
        return aside

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
            self._class = None
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
        with self._lock:
            self._reports[run.digest] = compared
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
        }
        statistics = self.class_statistics(by_split.get("dev", []))
        if statistics is not None:
            out.update(class_intervals(statistics, summaries))
            out["statistics"] = statistics
        return out

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


# -- intervals and paired tests, as the pages say them -------------------------------------------

#: How a page names each reference: (its row's label, the words for "its HM" in a sentence).
REFERENCE_WORDS = {
    "notebook+notebook+notebook": ("the notebook’s pipeline", "the notebook’s"),
    "baseline:random-label": ("a random label", "that of a random label"),
    "baseline:course-file": ("the course’s baseline file", "the course baseline file’s"),
}
#: The always-the-majority-label baseline's name, before the label.
ALWAYS = "baseline:always-"


def reference_words(name: str) -> tuple[str, str, str]:
    """A reference system's row label, its words in a sentence, and its kind ("notebook" or
    "baseline")."""
    kind = "baseline" if name.startswith("baseline:") else "notebook"
    if name.startswith(ALWAYS):
        label = name[len(ALWAYS) :]
        return f"always {label}", f"that of always answering {label}", kind
    label, words = REFERENCE_WORDS.get(name, (name, f"{name}’s"))
    return label, words, kind


def _p_text(p: float) -> str:
    return "p < 0.001" if p < 0.001 else f"p = {p:.3f}"


def _p_cell(p: float) -> str:
    return "< 0.001" if p < 0.001 else f"{p:.3f}"


def method_text(method: dict, claims: int, holm: str) -> str:
    """How every figure and comparison of a compare page was made, in one paragraph."""
    return (
        f"Each figure with its 95% interval: A by the Wilson score interval; F, HM and macro-F1 by a "
        f"percentile bootstrap over the {claims} claims ({method['resamples']:,} resamples, seed "
        f"{method['seed']}). A difference is paired (both systems read at the same resampled claims): "
        "its interval by the paired bootstrap, HM tested by the paired bootstrap's p, A by McNemar's "
        f"exact test; p-values are Holm-corrected {holm}, and a difference is “more than chance” when "
        f"the corrected p is below {method['alpha']}."
    )


def hm_sentence(subject: str, difference: dict, words: str) -> str:
    """One HM comparison in words, with its interval, its test and its verdict."""
    gap = difference["estimate"]
    side = "higher than" if gap > 0 else "lower than" if gap < 0 else "the same as"
    size = f"{abs(gap):.3f} " if gap else ""
    return (
        f"{subject} HM is {size}{side} {words} (95% interval {difference['lower']:+.3f} to "
        f"{difference['upper']:+.3f}; paired bootstrap {_p_text(difference['p_holm'])}, Holm-corrected): "
        f"{'more than chance' if difference['verdict'] == 'more than chance' else 'the two cannot be told apart'}."
    )


def _figure_row(statistics: dict, key: str, label: str, kind: str) -> dict:
    figures = statistics["figures"][key]
    return {"key": key, "name": label, "kind": kind, **{m: figures[m] for m in ("F", "A", "HM", "macro_f1")}}


def _difference_row(reference: str, comparison: dict, subject: str) -> dict:
    label, words, kind = reference_words(reference)
    on_a = {**comparison["A"], **{k: comparison[k] for k in ("p", "p_holm", "verdict")}}
    return {
        "key": reference,
        "name": label,
        "kind": kind,
        "HM": comparison["HM"],
        "A": on_a,
        "HM_p": _p_cell(comparison["HM"]["p_holm"]),
        "A_p": _p_cell(comparison["p_holm"]),
        "mcnemar": comparison["mcnemar"],
        "sentence": hm_sentence(subject, comparison["HM"], words),
    }


def run_intervals(statistics: dict, name: str) -> dict:
    """A run's page: its figures beside the notebook's row and the baselines (a table's and a
    chart's rows), its differences from each (rows, and a sentence each), and whether its
    accuracy is exactly always-the-majority-label's."""
    figures = [_figure_row(statistics, name, name, "run")]
    figures += [_figure_row(statistics, key, *reference_words(key)[::2]) for key in statistics["paired"][name]]
    against = [_difference_row(ref, c, "Your run’s") for ref, c in statistics["paired"][name].items()]
    mine = statistics["figures"][name]["A"]
    same_a = None
    for ref, comparison in statistics["paired"][name].items():
        other = statistics["figures"][ref]["A"]
        if ref.startswith(ALWAYS) and other["successes"] == mine["successes"]:
            label = ref[len(ALWAYS) :]
            same_a = (
                f"A equals always answering {label}: both get {mine['successes']} of {mine['n']} claims right "
                f"(McNemar's exact {_p_text(comparison['p_holm'])}, Holm-corrected: "
                f"{'more than chance' if comparison['verdict'] == 'more than chance' else 'cannot be told apart'})."
            )
    return {
        "method": method_text(
            statistics["method"],
            mine["n"],
            "over the runs compared with the same reference (one run here, so the correction changes nothing)",
        ),
        "figures": figures,
        "against": against,
        "same_a": same_a,
    }


def _oriented(pair: dict, first: str) -> dict:
    """A pair's HM comparison read as ``first`` minus the other."""
    hm = pair["HM"]
    if pair["a"] == first:
        return hm
    return {**hm, "estimate": -hm["estimate"], "lower": -hm["upper"], "upper": -hm["lower"]}


#: The baseline every run of a class is told apart from (or not), on HM.
ALWAYS_SUPPORTS = "baseline:always-SUPPORTS"


def _told_apart(statistics: dict, pairs: dict, digest: str, leader: str) -> dict:
    """Whether a dev run's HM can be told apart from the leader's (every pair Holm-corrected
    together) and from always answering SUPPORTS (Holm over the runs): each verdict."""
    out = {"leader": None, "always_supports": None}
    if digest != leader:
        out["leader"] = pairs[frozenset((digest, leader))]["HM"]["verdict"]
    against = statistics["paired"].get(digest, {}).get(ALWAYS_SUPPORTS)
    if against is not None:
        out["always_supports"] = against["HM"]["verdict"]
    return out


def class_intervals(statistics: dict, summaries: list[dict]) -> dict:
    """The compare index: each dev run's intervals and its HM against the next run in the
    ranking (from every pair of dev runs, Holm-corrected together), the references' rows, the
    chart's rows, and how many pairs differ by more than chance, in words."""
    pairs = {frozenset((p["a"], p["b"])): p for p in statistics["pairs"]}
    dev = [s for s in summaries if s["split"] == "dev"]
    for upper, lower in zip(dev, dev[1:], strict=False):
        pair = pairs[frozenset((upper["digest"], lower["digest"]))]
        upper["next"] = {
            "name": lower["name"],
            "HM": _oriented(pair, upper["digest"]),
            "p": _p_cell(pair["HM"]["p_holm"]),
        }
    for summary in dev:
        summary["intervals"] = {m: statistics["figures"][summary["digest"]][m] for m in ("F", "A", "HM")}
        summary["told_apart"] = _told_apart(statistics, pairs, summary["digest"], dev[0]["digest"])
    keys = [key for key in statistics["figures"] if key not in statistics["paired"]]  # the references
    references = [_figure_row(statistics, key, *reference_words(key)[::2]) for key in keys]
    chart = [{"name": s["name"], "kind": "run", "HM": s["intervals"]["HM"]} for s in dev]
    chart += [{"name": r["name"], "kind": r["kind"], "HM": r["HM"]} for r in references]
    differ = sum(p["HM"]["verdict"] == "more than chance" for p in statistics["pairs"])
    return {
        "references": references,
        "chart": chart,
        "method": method_text(
            statistics["method"],
            statistics["figures"][dev[0]["digest"]]["A"]["n"],
            f"over every pair of dev runs ({len(statistics['pairs'])}) and, against each baseline, over the dev runs",
        ),
        "told_apart": told_apart_words(len(dev), len(statistics["pairs"]), differ, statistics["method"]),
    }


def told_apart_words(runs: int, pairs: int, differ: int, method: dict) -> str:
    """How many pairs of dev runs differ in HM by more than chance, of how many."""
    test = f"paired bootstrap, {method['resamples']:,} resamples, seed {method['seed']}"
    if pairs == 0:
        return f"{runs} dev run: no pair of runs to compare."
    if pairs == 1:
        verdict = "differ in HM by more than chance" if differ else "cannot be told apart in HM"
        return f"The two dev runs {verdict} ({test}; one pair, so Holm’s correction changes nothing)."
    return (
        f"Of the {pairs} pairs of dev runs, {differ} differ{'s' if differ == 1 else ''} in HM by more than "
        f"chance ({test}; Holm-corrected over all {pairs} pairs)."
    )
