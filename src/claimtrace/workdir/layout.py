"""A workdir's layout (:class:`Workdir` names every path a build writes) and its file manifest
(``manifest.json``: what the build wrote, to be checked against what is there).

Layout of a workdir::

    build.json                        what was built from what (corpus, checkpoint)
    evidence.json                     the demo corpus (``--demo`` only)
    corpus/texts.bin, corpus/index.npz  every passage's text, found by id and offset
    tagging/stems/NNNNN.json          both preprocessing variants of each distinct passage text
    tagging/stems.npz                 each distinct text's final stems; each passage's text number
    tagging/restemmed.npz             each token of the passages' stems and of the tags, preprocessed again
    tagging/vectorizer.npz            the fitted 20,000-feature tagging vectorizer
    tagging/tags/NNNNN.jsonl          each passage's tags, in the canonical passage order
    tagging/summary.json              figures of the tagging stage
    retrieval/vectorizer.npz          the fitted 1,000-term tag vectorizer
    retrieval/index.npz               the retrieval model's passages and posting lists
    retrieval/<split>.jsonl           each claim's retrieval (train, dev, test), in file order
    retrieval/summary.json            fallback shares, dev F, the per-variant F table
    classifier/inputs/<split>-<source>.npz  the model inputs (gold, retrieved evidence)
    classifier/<split>.json           per claim: {gold, retrieved} x {alone, notebook} logits, verdict
    classifier/summary.json           accuracies and confusion matrices, the checkpoint used
    bm25/index/, bm25/chunks/         the BM25 reference index (chunks while it is being built)
    bm25/summary.json                 the BM25 row of the retrieval variants table, per-split figures
    retrieval/bm25-<split>.jsonl      BM25's six passages per claim: {claim_id, evidences, scores}
    retrieval/variants/<variant>-<split>.jsonl  each quirk variant's retrieval (dev, test)
    classifier/inputs/<split>-<source>.npz  also bm25 and each quirk variant's evidence (dev, test)
    classifier/more/<split>.json      per claim: {model: {source: {protocol: {logits, verdict}}}},
                                      the verdicts classifier/<split>.json does not hold
                                      (dev, test; empty entries for train)
    scoreboard.json                   dev F, A, HM of every retrieval x classifier x protocol row
    attribution/claims.jsonl          ``claimtrace attribute`` (not ``build``): each dev claim's attributions
    attribution/lstm.jsonl            the LSTM's verdict of each dev claim attributed (no exact answer there)
    attribution/grades.json           the methods' grades over the dev claims, with intervals
    counterfactuals/<split>.jsonl     ``claimtrace counterfactual --all`` (not ``build``): each dev and test
                                      claim's smallest edits that change its verdict
    counterfactuals/summary.json      the shares of dev claims one edit of each kind changes, with intervals
"""

from __future__ import annotations

import enum
import fcntl
import functools
import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from claimtrace.errors import REPAIR_HINT, DataError, Missing
from claimtrace.lib import chunks
from claimtrace.lib.build_files import read_json, write_atomic

#: A file not written yet while a build runs in the workdir (``serve --while-building``).
BEING_BUILT = "not written yet: the build running in this workdir is making it; reload in a few seconds"

#: Passages per chunk of the tagging stage's files.
CHUNK = 50_000


@functools.total_ordering
class Stage(enum.Enum):
    """The build's stages, ordered as it runs them: a stage runs when it is not after the build's
    ``--until`` (``stage <= until``)."""

    TAGGING = "tagging"
    RETRIEVAL = "retrieval"
    BM25 = "bm25"
    CLASSIFIER = "classifier"

    def __lt__(self, other: Stage) -> bool:
        if not isinstance(other, Stage):
            return NotImplemented
        order = list(Stage)
        return order.index(self) < order.index(other)


#: The stages' names, in build order (``claimtrace build --until STAGE``).
STAGES = tuple(stage.value for stage in Stage)


def chunk_spans(n_items: int) -> list[tuple[int, int]]:
    """``(start, stop)`` of each chunk of :data:`CHUNK` items, in order: chunk ``i`` is the
    ``i``-th span (read at call time: one chunk size for the build and the reader)."""
    return chunks.spans(n_items, CHUNK)


@dataclass
class Workdir:
    """Paths of a build's artifacts."""

    root: Path

    def __post_init__(self) -> None:
        self.root = Path(self.root)

    @property
    def build_record(self) -> Path:
        """``build.json``: what the build is of (its corpus, its checkpoint)."""
        return self.root / "build.json"

    @property
    def file_manifest(self) -> Path:
        """Every artifact's size, sha256 and item count (:class:`FileManifest`)."""
        return self.root / "manifest.json"

    @property
    def build_lock(self) -> Path:
        """``.build.lock``: held by the one ``claimtrace build`` writing this workdir (a dot
        name: never an artifact)."""
        return self.root / ".build.lock"

    def build_running(self) -> bool:
        """Whether a ``claimtrace build`` is writing this workdir now: it holds the lock on
        :attr:`build_lock` (the system drops it when the build ends, however it ends)."""
        try:
            handle = open(self.build_lock, encoding="utf-8")  # noqa: SIM115 - closed below
        except OSError:  # no lock file: no build, or one not started yet
            return False
        with handle:
            try:
                fcntl.flock(handle.fileno(), fcntl.LOCK_SH | fcntl.LOCK_NB)
            except BlockingIOError:
                return True
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
            return False

    def not_built_hint(self) -> str:
        """What is said of a file a later stage writes and that is not there: being made by the
        build running now (``serve --while-building``), or the command that makes it."""
        if self.build_running():
            return BEING_BUILT
        return f"not built yet: run `claimtrace build --workdir {self.root}`"

    def verdicts_written(self) -> bool:
        """Whether the classifier stage's first step is done: the build checkpoint's verdicts of
        every split (its summary is written after them). The walkthroughs need no later step."""
        return self.classifier_summary.is_file()

    @property
    def checkpoint_copy(self) -> Path:
        """The trained checkpoint the classifier stage used, copied in: the workdir carries it
        when it is moved or copied (the shipped checkpoint is never copied)."""
        return self.root / "classifier" / "checkpoint"

    @property
    def classifier_parts(self) -> Path:
        """The classifier stage's finished pieces while it runs: one file per split and evidence
        source, merged into classifier/<split>.json and removed."""
        return self.root / "classifier" / "parts"

    def classifier_part(self, split: str, source: str) -> Path:
        return self.classifier_parts / f"{split}-{source}.json"

    def at(self, relative: str) -> Path:
        """The path of a manifest entry (a path relative to the workdir, with ``/``)."""
        return self.root.joinpath(*relative.split("/"))

    def relative(self, path: Path) -> str:
        """A path in the workdir as the manifest names it: relative, with ``/``."""
        return Path(path).relative_to(self.root).as_posix()

    def corpus_path(self, recorded: str) -> Path:
        """The corpus file build.json names (relative to the workdir, or absolute in a build.json
        an older claimtrace wrote)."""
        return self.root / recorded if not os.path.isabs(recorded) else Path(recorded)

    def artifact_files(self) -> list[Path]:
        """Every file the build keeps, whole and final: not the manifest itself, not a temporary
        (a dot name: :func:`~claimtrace.data.files.atomic_output`'s), not a stage's scratch pieces that
        are removed once merged (bm25/chunks, classifier/parts)."""
        scratch = (self.bm25_dir / "chunks", self.classifier_parts)
        found = []
        for folder, folders, files in os.walk(self.root):
            here = Path(folder)
            folders[:] = sorted(f for f in folders if not f.startswith(".") and here / f not in scratch)
            found += [here / name for name in sorted(files) if not name.startswith(".")]
        return [path for path in found if path != self.file_manifest]

    @property
    def demo_evidence(self) -> Path:
        return self.root / "evidence.json"

    @property
    def passage_texts(self) -> Path:
        return self.root / "corpus" / "texts.bin"

    @property
    def passage_index(self) -> Path:
        return self.root / "corpus" / "index.npz"

    @property
    def stems_dir(self) -> Path:
        return self.root / "tagging" / "stems"

    @property
    def passage_stems(self) -> Path:
        """Each distinct passage text's final stems and each passage's distinct-text number:
        a trace reads a passage's stems here instead of preprocessing its text again."""
        return self.root / "tagging" / "stems.npz"

    @property
    def restemmed(self) -> Path:
        """What each token of the passages' stems and of the tags becomes when preprocessed again
        (the quirk "stems of stems"): a trace looks tokens up here instead of preprocessing them."""
        return self.root / "tagging" / "restemmed.npz"

    @property
    def vectorizer(self) -> Path:
        return self.root / "tagging" / "vectorizer.npz"

    @property
    def tags_dir(self) -> Path:
        return self.root / "tagging" / "tags"

    @property
    def tagging_summary(self) -> Path:
        return self.root / "tagging" / "summary.json"

    @property
    def retrieval_vectorizer(self) -> Path:
        return self.root / "retrieval" / "vectorizer.npz"

    @property
    def retrieval_index(self) -> Path:
        return self.root / "retrieval" / "index.npz"

    def retrieval(self, split: str) -> Path:
        return self.root / "retrieval" / f"{split}.jsonl"

    @property
    def retrieval_summary(self) -> Path:
        return self.root / "retrieval" / "summary.json"

    def inputs(self, split: str, source: str) -> Path:
        return self.root / "classifier" / "inputs" / f"{split}-{source}.npz"

    def verdicts(self, split: str) -> Path:
        return self.root / "classifier" / f"{split}.json"

    @property
    def classifier_summary(self) -> Path:
        return self.root / "classifier" / "summary.json"

    @property
    def bm25_dir(self) -> Path:
        """The folder :func:`claimtrace.pipeline.bm25.build_bm25_index` builds in (``index/``, ``chunks/``)."""
        return self.root / "bm25"

    @property
    def bm25_index(self) -> Path:
        return self.bm25_dir / "index"

    @property
    def bm25_summary(self) -> Path:
        return self.bm25_dir / "summary.json"

    def bm25_retrieval(self, split: str) -> Path:
        return self.root / "retrieval" / f"bm25-{split}.jsonl"

    def variant_retrieval(self, variant: str, split: str) -> Path:
        return self.root / "retrieval" / "variants" / f"{variant}-{split}.jsonl"

    def more_verdicts(self, split: str) -> Path:
        return self.root / "classifier" / "more" / f"{split}.json"

    @property
    def sweep(self) -> Path:
        return self.root / "sweep" / "dev.json"

    @property
    def scoreboard(self) -> Path:
        return self.root / "scoreboard.json"

    @property
    def attribution_dir(self) -> Path:
        """``claimtrace attribute``'s output: attribution methods graded on the dev claims."""
        return self.root / "attribution"

    @property
    def attribution_claims(self) -> Path:
        return self.attribution_dir / "claims.jsonl"

    @property
    def attribution_grades(self) -> Path:
        return self.attribution_dir / "grades.json"

    @property
    def attribution_lstm(self) -> Path:
        """The LSTM's verdict attributed by the methods applied to it (no exact answer there)."""
        return self.attribution_dir / "lstm.jsonl"

    @property
    def counterfactuals_dir(self) -> Path:
        """``claimtrace counterfactual --all``'s output: the smallest edits that change each verdict."""
        return self.root / "counterfactuals"

    def counterfactuals(self, split: str) -> Path:
        return self.counterfactuals_dir / f"{split}.jsonl"

    def counterfactuals_part(self, split: str) -> Path:
        """A split's claims while the command runs (a dot name: scratch, merged and removed)."""
        return self.counterfactuals_dir / f".{split}-part.jsonl"

    @property
    def counterfactuals_summary(self) -> Path:
        return self.counterfactuals_dir / "summary.json"

    def attribution_part(self, worker: int, model: str = "transformer") -> Path:
        """A worker's claims of one model while the command runs (a dot name: scratch, merged
        and removed)."""
        return self.attribution_dir / f".{_model_prefix(model)}part-{worker}.jsonl"

    def attribution_parts(self, model: str = "transformer") -> list[Path]:
        """Every worker's scratch file of one model, in worker order."""
        return sorted(self.attribution_dir.glob(f".{_model_prefix(model)}part-*.jsonl"))

    def stage_done(self, stage: Stage) -> bool:
        """Whether a stage has finished: the file it writes last is there (its summary; the
        classifier stage's: the scoreboard)."""
        last = {
            Stage.TAGGING: self.tagging_summary,
            Stage.RETRIEVAL: self.retrieval_summary,
            Stage.BM25: self.bm25_summary,
            Stage.CLASSIFIER: self.scoreboard,
        }[stage]
        return last.is_file()

    def stages_not_built(self) -> list[str]:
        """The names of the stages, in build order, that have not finished (a build made with
        --until, or killed)."""
        return [stage.value for stage in Stage if not self.stage_done(stage)]

    @staticmethod
    def chunk(folder: Path, index: int, suffix: str) -> Path:
        return chunks.chunk_path(folder, index, suffix)

    def read_build_record(self) -> dict:
        if not self.build_record.is_file():
            if self.file_manifest.is_file():  # a build whose build.json was lost: the manifest keeps a copy
                raise Missing(
                    "build", self.build_record, f"missing: run `claimtrace build --workdir {self.root}` to repair"
                )
            raise Missing("build", self.root, "not a claimtrace build (no build.json): run `claimtrace build` first")
        return read_json(self.build_record)


#: The manifest's format (manifest.json's ``"format"``).
MANIFEST_FORMAT = 1


def sha256_of(path: Path, block: int = 1 << 20) -> tuple[str, int, int]:
    """(sha256 hex, bytes, newlines) of a file, read once in 1 MiB blocks."""
    digest = hashlib.sha256()
    size = newlines = 0
    with open(path, "rb") as handle:
        while chunk := handle.read(block):
            digest.update(chunk)
            size += len(chunk)
            newlines += chunk.count(b"\n")
    return digest.hexdigest(), size, newlines


def items_of_lines(path: Path) -> bool:
    """Whether a file's items are its lines (JSON lines: one record each)."""
    return path.suffix == ".jsonl"


class FileManifest:
    """``manifest.json``: every artifact the build wrote, by its path relative to the workdir,
    with its size, sha256 and, for a file of records, its item count::

        {"format": 1,
         "build": {...what build.json holds...},
         "files": {"tagging/tags/00000.jsonl": {"bytes": 5301234, "sha256": "9f...", "items": 50000},
                   "tagging/vectorizer.npz": {"bytes": 812345, "sha256": "1c..."}, ...}}

    The build records each file as it writes it (:meth:`record`); ``build`` keeps a copy of
    build.json so that a damaged build.json can be written again. Checked two ways: cheaply
    (:meth:`cheap_problem`: there, of the recorded size; the reader does this on every open,
    item counts where it reads the records anyway) and fully (:meth:`full_problem`: sha256 too;
    ``claimtrace build`` and ``claimtrace verify``)."""

    def __init__(self, work: Workdir, build: dict | None = None, files: dict[str, dict] | None = None):
        self.work = work
        self.build = build
        self.files: dict[str, dict] = dict(files or {})
        #: files found damaged and removed for their stage to write again: path -> old entry
        self.repaired: dict[str, dict | None] = {}

    @classmethod
    def read(cls, work: Workdir) -> FileManifest | None:
        """The workdir's manifest; None when it has none (a build made before manifests)."""
        path = work.file_manifest
        if not path.is_file():
            return None
        raw = read_json(path)
        if not isinstance(raw, dict) or raw.get("format") != MANIFEST_FORMAT or not isinstance(raw.get("files"), dict):
            raise DataError(f"{path}: damaged (not a format {MANIFEST_FORMAT} manifest): {REPAIR_HINT}")
        return cls(work, raw.get("build"), raw["files"])

    def save(self) -> None:
        """Write manifest.json atomically, keeping the entries another process recorded meanwhile
        (two builds into one workdir write the same files; neither may drop the other's)."""
        try:
            on_disk = FileManifest.read(self.work)
        except DataError:
            on_disk = None
        files = dict(on_disk.files) if on_disk is not None else {}
        files.update(self.files)
        self.files = {name: files[name] for name in sorted(files) if self.work.at(name).is_file()}
        body = {"format": MANIFEST_FORMAT, "build": self.build, "files": self.files}
        text = json.dumps(body, ensure_ascii=False, indent=1) + "\n"
        if on_disk is None or {"format": MANIFEST_FORMAT, "build": on_disk.build, "files": on_disk.files} != body:
            write_atomic(self.work.file_manifest, text)  # unchanged: not rewritten

    def entry_of(self, path: Path) -> dict:
        """What a file is now: its size, sha256 and (JSON lines) item count."""
        sha256, size, newlines = sha256_of(path)
        entry: dict[str, Any] = {"bytes": size, "sha256": sha256}
        if items_of_lines(path):
            entry["items"] = newlines
        return entry

    def record(self, path: Path, items: int | None = None, save: bool = True) -> None:
        """Record a file the build has just written (whole: it was renamed into place).
        ``items``: its record count, for a file whose items are not lines (a JSON list)."""
        entry = self.entry_of(path)
        if items is not None:
            entry["items"] = items
        self.files[self.work.relative(path)] = entry
        if save:
            self.save()

    def get(self, path: Path) -> dict | None:
        try:
            return self.files.get(self.work.relative(path))
        except ValueError:  # not in the workdir (the shipped checkpoint)
            return None

    def cheap_problem(self, path: Path) -> str | None:
        """What is wrong with a recorded file, found without reading it: missing, or not of the
        recorded size (a truncated or appended file; a file cut at a line's end included)."""
        entry = self.get(path)
        if entry is None:
            return None
        try:
            size = path.stat().st_size
        except FileNotFoundError:
            return "missing"
        except OSError as err:
            return f"cannot be read ({err.strerror or err})"
        if size != entry["bytes"]:
            return f"{size} bytes, but the build wrote {entry['bytes']}"
        return None

    def full_problem(self, path: Path) -> str | None:
        """:meth:`cheap_problem`, then its sha256 and item count against the recorded ones."""
        problem = self.cheap_problem(path)
        entry = self.get(path)
        if problem is not None or entry is None:
            return problem
        try:
            now = self.entry_of(path)
        except OSError as err:
            return f"cannot be read ({err.strerror or err})"
        if now["sha256"] != entry["sha256"]:
            return f"content changed (sha256 {now['sha256'][:12]}..., the build wrote {entry['sha256'][:12]}...)"
        if "items" in now and now["items"] != entry.get("items"):
            return f"{now['items']} items, but the build wrote {entry.get('items')}"
        return None

    def problems(self, full: bool) -> dict[str, str]:
        """Every recorded file that is missing or damaged: relative path -> what is wrong."""
        check = self.full_problem if full else self.cheap_problem
        found = {}
        for name in self.files:
            problem = check(self.work.at(name))
            if problem is not None:
                found[name] = problem
        return found


def _model_prefix(model: str) -> str:
    """The scratch files' prefix of a model attributed (the Transformer's: none, as before the
    LSTM was attributed, so a run killed then resumes)."""
    return "" if model == "transformer" else f"{model}-"
