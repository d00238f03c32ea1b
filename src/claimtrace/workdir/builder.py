"""Build a workdir: run the pipeline's stages over one corpus, in order, resumably.

This is the runner: one build at a time in a workdir (a lock), the manifest checked before the
stages and completed after each, the stages run in :class:`~claimtrace.workdir.layout.Stage`
order up to ``until`` with the jobs started alongside them, and each step's start, end and
times said. What each stage computes is :mod:`claimtrace.workdir.stages`'; every stage reads
what the earlier ones wrote through the build's one reader
(:class:`~claimtrace.workdir.reader.BuildReader`, opened once per build).

The layout is :mod:`claimtrace.workdir.layout`'s (its :class:`~claimtrace.workdir.layout.Workdir`
names every path). Every file is written to a temporary name and renamed, so a killed build
leaves only whole files; running the build again skips every chunk and file that exists and
redoes nothing finished. A build made by an older claimtrace is completed in place: the files it
lacks are written.
"""

from __future__ import annotations

import fcntl
import gc
import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from claimtrace.errors import DataError
from claimtrace.lib.forked_job import ForkedJob, cpu_seconds
from claimtrace.pipeline import tagging
from claimtrace.workdir.integrity import (
    check_build_record,
    copy_checkpoint,
    log,
    open_file_manifest,
    record_new,
    verify_repairs,
)
from claimtrace.workdir.layout import STAGES, FileManifest, Stage, Workdir
from claimtrace.workdir.reader import BuildReader
from claimtrace.workdir.stages.bm25 import bm25_done, build_bm25
from claimtrace.workdir.stages.classifier import build_classifier
from claimtrace.workdir.stages.corpus import build_passage_store, load_corpus
from claimtrace.workdir.stages.quirk_costs import build_more_verdicts, build_scoreboard
from claimtrace.workdir.stages.retrieval import build_retrieval, build_variant_records
from claimtrace.workdir.stages.sweep import build_sweep
from claimtrace.workdir.stages.tagging import finish_tagging, prepare_tagging, stems_items


@dataclass
class BuildRun:
    """One build's context while its stages run: what every stage reads and what the runner
    keeps between them.

    reader: the build's one reader (its workdir, its data folder). passages: the corpus,
    ``id -> text`` in file order, until no step left reads it (:meth:`let_go_of_passages`: None
    from then on). processes: processes at once (``--processes``). until: the last
    stage to run. files: the manifest, completed after each stage. items: the item counts of the
    files whose items are not lines (the stems chunks: JSON lists). seconds: each step's wall
    and CPU time, filled as the steps end. alongside: the jobs started alongside the stages, by
    stage name, until their results are taken.
    """

    reader: BuildReader
    passages: dict[str, str] | None
    processes: int
    until: Stage
    files: FileManifest
    items: dict[Path, int]
    seconds: dict[str, dict[str, float]]
    alongside: dict[str, ForkedJob] = field(default_factory=dict)

    @property
    def work(self) -> Workdir:
        return self.reader.work

    def record_new(self) -> None:
        """Record every file the stages have written in the manifest."""
        record_new(self.work, self.files, self.items)

    @contextmanager
    def step(self, name: str, what: str) -> Iterator[None]:
        """Say a step's start and end on stderr and keep its wall and CPU times in ``seconds``
        (the CPU time of the build's process and of the workers it waited for; a step with
        nothing left to do takes a moment)."""
        log(f"{name}: {what}")
        started, cpu = time.perf_counter(), cpu_seconds()
        yield
        self.seconds[name] = {"wall": time.perf_counter() - started, "cpu": cpu_seconds() - cpu}
        log(f"{name}: done in {self.seconds[name]['wall']:.1f} s")

    def start_bm25_alongside(self) -> None:
        """With two processes, the BM25 stage (which reads the passages only) runs in a forked
        process on one core from here, once the two preprocessing workers have let go of both
        cores, while the tagging vectorizer's fit and the retrieval stage leave one idle; it is
        collected at its place in the stage order. With one process it runs in its place."""
        if self.processes > 1 and self.until >= Stage.BM25 and not bm25_done(self.reader):
            self.alongside["bm25"] = ForkedJob.start(build_bm25, self.reader, self.passages, processes=1)

    def let_go_of_passages(self) -> None:
        """Drop the corpus once the tagging stage has read what it needs of it, unless the BM25
        stage is still to run in this process (with one process): BM25 alongside has its own
        copy, forked. The corpus's Python strings were a third of a GB held by the build's
        process through every later stage at 1.2M passages (docs/benchmarks.md)."""
        if "bm25" in self.alongside or self.until < Stage.BM25 or bm25_done(self.reader):
            self.passages = None


def build(
    workdir: str | os.PathLike,
    data_dir: Path,
    evidence: Path | None = None,
    processes: int = 2,
    until: str | Stage = Stage.CLASSIFIER,
    checkpoint: Path | None = None,
    corpus_changed: bool = False,
    seconds: dict[str, dict[str, float]] | None = None,
) -> dict:
    """Run the stages over the corpus (the demo corpus when ``evidence`` is None), from tagging
    up to and including ``until``; the classifier stage uses ``checkpoint`` (a ``claimtrace
    train`` folder; None: the shipped checkpoint).

    Every file already there is first checked against the manifest (size, sha256, item count);
    a damaged or missing one is removed and its stage writes it again, and only it. Every file
    written is recorded in the manifest after its stage, and the whole workdir is checked again
    at the end. ``corpus_changed``: the corpus file was edited in place since the workdir was
    built; rebuild every stage over its new content (without it, the build refuses).
    ``seconds``: filled with each stage's wall and CPU time, ``{stage: {"wall", "cpu"}}``; a stage
    run alongside the others (BM25, with two processes) also has ``"alongside": True``, its times
    being its own process's."""
    try:
        until = Stage(until)
    except ValueError:
        raise ValueError(f"until must be one of {', '.join(STAGES)}, got {until!r}") from None
    work = Workdir(Path(workdir))
    work.root.mkdir(parents=True, exist_ok=True)
    with workdir_lock(work), cyclic_gc_paused():
        passages, files = _open_corpus(work, data_dir, evidence, checkpoint, corpus_changed)
        # Every record is made with the item counts of the files whose items are not lines (the
        # stems chunks: JSON lists), whichever run records them: a fresh build, a resumed one (a
        # chunk written before the kill is recorded by the next run's first record) or a repair.
        items = stems_items(work, len(tagging.deduplicated(passages)))
        seconds = {} if seconds is None else seconds  # the caller's own dict, filled as the steps end
        run = BuildRun(BuildReader(work.root, data_dir), passages, processes, until, files, items, seconds)
        build_passage_store(work, passages)
        del passages  # the run holds the corpus, and lets go of it once no step reads it
        run.record_new()
        try:
            summary = _run_stages(run)
        finally:
            for job in run.alongside.values():
                job.cancel()  # a stage failed before the job's result was taken: stop it
        verify_repairs(work, files)
        return summary


def _open_corpus(
    work: Workdir, data_dir: Path, evidence: Path | None, checkpoint: Path | None, corpus_changed: bool
) -> tuple[dict[str, str], FileManifest]:
    """The build's passages and its manifest, checked before any stage runs: each damaged file
    removed, build.json recording what the build is of (or refusing to mix two corpora or
    checkpoints), the trained checkpoint copied in."""
    files = open_file_manifest(work)
    passages, description = load_corpus(work, data_dir, evidence)
    files = check_build_record(work, files, description, checkpoint, corpus_changed)
    files.record(work.build_record, save=False)
    copy_checkpoint(work, checkpoint)
    return passages, files


def _run_stages(run: BuildRun) -> dict:
    """Run the stages in order up to ``run.until``, recording each one's files; a job started
    alongside is kept in ``run.alongside`` (the caller stops it when a stage fails)."""
    summary: dict = {}
    for stage, run_stage in _STAGE_RUNNERS.items():
        if stage > run.until:
            break
        summary.update(run_stage(run))
        run.record_new()
    return summary


def _tagging(run: BuildRun) -> dict:
    with run.step("tagging", f"stems, the tagging vectorizer and tags of {len(run.passages):,} passages"):
        inputs = prepare_tagging(run.reader, run.passages, run.processes, run.start_bm25_alongside)
        run.let_go_of_passages()  # before the fit: what is left of the stage reads its inputs
        summary = finish_tagging(run.reader, inputs, run.processes)
        del inputs
    # A summary written before the stage counted the corpus (lengths, tags per passage) is written
    # again with those figures: recorded again, or the manifest would call it damaged.
    if run.files.get(run.reader.work.tagging_summary) is not None:
        run.files.record(run.reader.work.tagging_summary)
    return {"tagging": summary}


def _retrieval(run: BuildRun) -> dict:
    with run.step("retrieval", "every train, dev and test claim"):
        summary = {"retrieval": build_retrieval(run.reader, run.processes)}
    with run.step("variants", "each quirk variant's retrieval of dev and test"):
        build_variant_records(run.reader)
    return summary


def _bm25(run: BuildRun) -> dict:
    """The BM25 stage in its place, or the result of its job alongside (its own process's times)."""
    job = run.alongside.get("bm25")
    if job is None:
        with run.step("bm25", "the reference retriever's index and six passages per claim"):
            return {"bm25": build_bm25(run.reader, run.passages, run.processes)}
    summary = job.result()
    run.seconds["bm25"] = {**job.seconds, "alongside": True}
    log(f"bm25: the reference retriever's index and six passages per claim, alongside: {job.seconds['wall']:.1f} s")
    return {"bm25": summary}


def _classifier(run: BuildRun) -> dict:
    # Each step's files are recorded as it ends: a site serving the build while it runs (`serve
    # --while-building`) reads the manifest's change and shows what the step wrote.
    with run.step("classifier", "the build checkpoint's verdicts, gold and retrieved evidence"):
        summary = {"classifier": build_classifier(run.reader)}
    run.record_new()
    with run.step("more verdicts", "the intended model and the LSTM, BM25's and the variants' evidence"):
        build_more_verdicts(run.reader)
    run.record_new()
    with run.step("sweep", "dev F, A and HM by cosine threshold, overlap threshold and top-n"):
        build_sweep(run.reader)
    run.record_new()
    with run.step("scoreboard", "dev F, A and HM of every retrieval x classifier x protocol"):
        summary["scoreboard"] = build_scoreboard(run.reader)
    return summary


#: What runs each stage, in :class:`Stage` order (a stage's steps: retrieval writes the quirk
#: variants' records too; the classifier stage, the extra verdicts and the scoreboard).
_STAGE_RUNNERS: dict[Stage, Callable[[BuildRun], dict]] = {
    Stage.TAGGING: _tagging,
    Stage.RETRIEVAL: _retrieval,
    Stage.BM25: _bm25,
    Stage.CLASSIFIER: _classifier,
}


@contextmanager
def cyclic_gc_paused() -> Iterator[None]:
    """Python's cyclic garbage collector off while the build runs.

    The stages hold millions of small lists and dicts at once (each passage's stems, tags and
    tokens), and none forms a reference cycle: they are freed by reference counting alone. The
    collector, run every 700 new containers, walks the surviving ones again and again: a large
    share of the 1.2M-passage build's time, for a slightly higher peak with it off
    (docs/benchmarks.md, "The build"). The workers the build forks inherit the setting. A
    test's tiny builds pay nothing for it: nothing is collected at the end."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()  # what the build left in cycles is collected as usual from here


def _lock_briefly_contended(handle, tries: int = 20) -> None:
    """An exclusive lock on ``handle``, tried for about a fifth of a second: a server looking
    whether a build runs (``Workdir.build_running``) holds a shared lock for a moment, which is no
    build. BlockingIOError when another process keeps it."""
    for _ in range(tries - 1):
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            time.sleep(0.01)
    fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)


@contextmanager
def workdir_lock(work: Workdir) -> Iterator[None]:
    """One build at a time in a workdir: an exclusive lock on ``.build.lock`` (a dot name: never
    an artifact), held until the build ends, then removed; the system drops the lock when the
    process dies, so a killed build never leaves the workdir locked. A second build is refused
    in one line."""
    path = work.build_lock
    while True:
        handle = open(path, "a+", encoding="utf-8")  # noqa: SIM115 - held until the build ends
        try:
            _lock_briefly_contended(handle)
        except BlockingIOError:
            handle.seek(0)
            holder = handle.read().strip() or "another process"
            handle.close()
            raise DataError(
                f"{work.root}: another `claimtrace build` ({holder}) is writing this workdir: "
                "wait for it to end, or use another --workdir"
            ) from None
        try:  # the file locked is still the one at the path (not one a finishing build removed)
            same = os.stat(path).st_ino == os.fstat(handle.fileno()).st_ino
        except FileNotFoundError:
            same = False
        if same:
            break
        handle.close()
    try:
        handle.truncate(0)
        handle.write(f"pid {os.getpid()}")  # who holds it, for a second build's message
        handle.flush()
        yield
    finally:
        path.unlink(missing_ok=True)
        handle.close()  # closing releases the lock
