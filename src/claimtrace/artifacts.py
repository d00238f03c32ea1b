"""The build reader: the one place that knows a workdir's layout, and opens what is in it.

Stages write a workdir (:mod:`claimtrace.build`); the command line, :mod:`claimtrace.explain` and
the site read it through :class:`Build`, lazily, each piece once, and never re-derive what a
stage computed. No other module builds a workdir path: :class:`Workdir` names them all.

Layout of a workdir::

    build.json                        what was built from what (corpus, checkpoint)
    evidence.json                     the demo corpus (``--demo`` only)
    corpus/texts.bin, corpus/index.npz  every passage's text, found by id and offset
    tagging/stems/NNNNN.json          both preprocessing variants of each distinct passage text
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
"""

from __future__ import annotations

import hashlib
import json
import mmap
import os
import threading
import zipfile
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import constants as C
from . import data as data_layer
from .data import Claim, DataError

#: Passages per chunk of the tagging stage's files.
CHUNK = 50_000
#: The build's stages, in the order it runs them (``claimtrace build --until STAGE``).
STAGES = ("tagging", "retrieval", "bm25", "classifier")


class Missing(DataError):
    """A piece of the build is not there (not built yet, or made by an older claimtrace)."""

    def __init__(self, stage: str, path: Path, reason: str):
        super().__init__(f"{path}: {reason}")
        self.stage = stage
        self.path = path
        self.reason = f"{path}: {reason}"  # what a page shows: the file, and what to run


@dataclass
class Workdir:
    """Paths of a build's artifacts."""

    root: Path

    def __post_init__(self) -> None:
        self.root = Path(self.root)

    @property
    def manifest(self) -> Path:
        return self.root / "build.json"

    @property
    def file_manifest(self) -> Path:
        """Every artifact's size, sha256 and item count (:class:`FileManifest`)."""
        return self.root / "manifest.json"

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

    def stage_done(self, stage: str) -> bool:
        """Whether a stage has finished: the file it writes last is there (its summary; the
        classifier stage's: the scoreboard)."""
        last = {
            "tagging": self.tagging_summary,
            "retrieval": self.retrieval_summary,
            "bm25": self.bm25_summary,
            "classifier": self.scoreboard,
        }[stage]
        return last.is_file()

    def stages_not_built(self) -> list[str]:
        """The stages, in build order, that have not finished (a build made with --until, or killed)."""
        return [stage for stage in STAGES if not self.stage_done(stage)]

    def artifact_files(self) -> list[Path]:
        """Every file the build keeps, whole and final: not the manifest itself, not a temporary
        (a dot name: :func:`~claimtrace.data.atomic_output`'s), not a stage's scratch pieces that
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
        """The folder :func:`claimtrace.bm25.build_bm25_index` builds in (``index/``, ``chunks/``)."""
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
    def scoreboard(self) -> Path:
        return self.root / "scoreboard.json"

    @staticmethod
    def chunk(folder: Path, index: int, suffix: str) -> Path:
        return folder / f"{index:05d}{suffix}"

    def read_manifest(self) -> dict:
        if not self.manifest.is_file():
            if self.file_manifest.is_file():  # a build whose build.json was lost: the manifest keeps a copy
                raise Missing(
                    "build", self.manifest, f"missing: run `claimtrace build --workdir {self.root}` to repair"
                )
            raise Missing("build", self.root, "not a claimtrace build (no build.json): run `claimtrace build` first")
        return read_json(self.manifest)


#: What reading a damaged file raises: a truncated or garbage npz (BadZipFile, EOFError,
#: ValueError), JSON (JSONDecodeError is a ValueError), safetensors (SafetensorError), a file
#: with a field missing or of the wrong type (KeyError, IndexError, TypeError), or torch refusing
#: the weights (RuntimeError); OSError for a file that cannot be read at all.
_LOAD_ERRORS: tuple[type[BaseException], ...] = (
    OSError,
    ValueError,
    KeyError,
    IndexError,
    TypeError,
    EOFError,
    RuntimeError,
    RecursionError,
    zipfile.BadZipFile,
)

#: What to run when a build file is damaged.
REPAIR_HINT = "run `claimtrace build` to repair"


def _safetensors_error() -> tuple[type[BaseException], ...]:
    try:
        from safetensors import SafetensorError
    except ImportError:  # pragma: no cover - safetensors is a dependency
        return ()
    return (SafetensorError,)


@contextmanager
def damaged(path: Path, hint: str = REPAIR_HINT) -> Iterator[None]:
    """Turn any failure to read ``path`` inside the block into a DataError naming the file,
    what was wrong and ``hint``: one message instead of a numpy, JSON or safetensors traceback.
    A DataError raised inside (already naming its file) passes unchanged."""
    try:
        yield
    except DataError:
        raise
    except (*_LOAD_ERRORS, *_safetensors_error()) as err:
        what = str(err) or type(err).__name__
        raise DataError(f"{path}: damaged ({what}): {hint}") from None


def read_json(path: Path) -> Any:
    """A build's JSON file, or a DataError naming it."""
    with damaged(path):
        return json.loads(path.read_text(encoding="utf-8"))


def _json_lines(path: Path) -> list[dict]:
    """Every line of a JSON-lines file, each a JSON object; a damaged line raises a ValueError
    saying which (:func:`damaged` turns it into a DataError naming the file)."""
    rows = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        try:
            row = json.loads(line)
        except RecursionError:
            raise ValueError(f"line {number}: nested too deeply to read") from None
        except ValueError as err:
            raise ValueError(f"line {number}: {err}") from None
        if not isinstance(row, dict):
            raise ValueError(f"line {number} is not a JSON object")
        rows.append(row)
    return rows


def _read_records(path: Path) -> dict[str, dict]:
    """A JSON-lines file of per-claim records, claim id -> record, in file order."""
    records = {}
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            try:
                record = json.loads(line)
            except (ValueError, RecursionError):  # not JSON, nested too deeply, an endless integer
                raise DataError(f"{path}: line {number} is damaged: run `claimtrace build` to repair") from None
            records[record["claim_id"]] = record
    return records


def _rebuild_hint(work: Workdir) -> str:
    return f"run `claimtrace build --workdir {work.root}` (it completes a build made by an older claimtrace)"


# --- the manifest: what the build wrote, to be checked against what is there ---------------------

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
            data_layer.write_atomic(self.work.file_manifest, text)  # unchanged: not rewritten

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


def damaged_file(path: Path, problem: str) -> DataError:
    """The error a damaged or missing build file gives: the file, what is wrong, what to run."""
    return DataError(f"{path}: damaged ({problem}): {REPAIR_HINT}")


# --- passage texts by offset ----------------------------------------------------------------------


class PassageStore:
    """Every passage's text, found by id: a UTF-8 file of the texts end to end
    (:class:`~claimtrace.data.PackedStrings`, memory-mapped) and an index of the ids sorted
    (:class:`~claimtrace.data.StringIndex`) with the texts' byte offsets. The texts stay on disk;
    a look-up is a binary search and one slice."""

    def __init__(self, texts_path: Path, index_path: Path):
        with damaged(index_path), data_layer.load_npz(index_path) as stored:
            self._index = data_layer.StringIndex(stored["ids"], stored["rank"])
            offsets = stored["offsets"]  # (n + 1,) byte offsets, file order
        with damaged(texts_path), open(texts_path, "rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            buffer = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) if size else b""
        if size != int(offsets[-1]):
            raise DataError(
                f"{texts_path}: {size} bytes but its index says {int(offsets[-1])}: run `claimtrace build` to repair"
            )
        self._texts = data_layer.PackedStrings(buffer, offsets)

    @staticmethod
    def write(passages: Mapping[str, str], texts_path: Path, index_path: Path) -> None:
        """Write the store for ``passages`` (id -> text, file order), each file atomically."""
        buffer, offsets = data_layer.PackedStrings.pack(passages.values())
        index = data_layer.StringIndex.of(passages)
        with data_layer.atomic_output(texts_path) as temporary:
            temporary.write_bytes(buffer.tobytes())
        data_layer.write_npz(index_path, ids=index.sorted_keys, rank=index.rank, offsets=offsets)

    def __len__(self) -> int:
        return len(self._texts)

    def position(self, passage_id: str) -> int | None:
        return self._index.position(passage_id)

    def get(self, passage_id: str) -> str | None:
        """The text of a passage, or None when the corpus has no such id."""
        p = self.position(passage_id)
        return None if p is None else self._texts[p]

    def __contains__(self, passage_id: str) -> bool:
        return self.position(passage_id) is not None


# --- the reader -----------------------------------------------------------------------------------


class Build:
    """A workdir, read lazily: each piece is opened once, on first use, and kept.

    root: a ``claimtrace build`` workdir. data_dir: the course data (default: found as the CLI
    finds it). Every method raises :class:`Missing` (a :class:`DataError`) naming the file that
    is not there and what to run.
    """

    def __init__(self, root: str | os.PathLike, data_dir: str | os.PathLike | None = None):
        self.work = Workdir(Path(root))
        if not self.work.root.is_dir():
            raise DataError(
                f"{self.work.root}: no such build folder (make one with "
                f"`claimtrace build --demo --workdir {self.work.root}`)"
            )
        self._data_dir = data_dir
        self._memo: dict[Any, Any] = {}
        self._locks: dict[Any, threading.Lock] = {}
        self._guard = threading.Lock()

    @property
    def root(self) -> Path:
        return self.work.root

    @property
    def data_dir(self) -> Path:
        """The course data folder (found on first use: the tagging files need none)."""
        return self._once("data_dir", lambda: data_layer.find_data_dir(self._data_dir))

    def _once(self, key, make: Callable[[], Any]):
        """``make()`` once per key (thread-safe); a Missing is remembered and raised again."""
        try:
            value = self._memo[key]
        except KeyError:
            with self._guard:
                lock = self._locks.setdefault(key, threading.Lock())
            with lock:
                if key not in self._memo:
                    try:
                        self._memo[key] = make()
                    except Missing as err:
                        self._memo[key] = err
                value = self._memo[key]
        if isinstance(value, Missing):
            raise value
        return value

    def file_manifest(self) -> FileManifest | None:
        """The build's manifest.json (None: a build made before manifests, read unchecked)."""
        return self._once("file_manifest", lambda: FileManifest.read(self.work))

    def _require(self, stage: str, path: Path) -> Path:
        """``path``, there and of the size the build recorded (a stat, no reading: opening a
        1.2M-passage build must stay fast; ``claimtrace verify`` checks every sha256)."""
        files = self.file_manifest()
        if not path.exists():
            self.manifest()
            if files is not None and files.get(path) is not None:
                raise Missing(stage, path, f"missing (the build wrote it): {REPAIR_HINT}")
            raise Missing(stage, path, f"not built: {_rebuild_hint(self.work)}")
        problem = None if files is None else files.cheap_problem(path)
        if problem is not None:
            raise damaged_file(path, problem)
        return path

    def _check_items(self, path: Path, count: int) -> None:
        """A file of records holds as many as the build wrote: a file cut at a line's end (whole
        lines missing) parses, so the count is what shows it."""
        files = self.file_manifest()
        entry = None if files is None else files.get(path)
        if entry is not None and "items" in entry and entry["items"] != count:
            raise damaged_file(path, f"{count} items, but the build wrote {entry['items']}")

    def file_problems(self, full: bool = False) -> dict[str, str]:
        """Every recorded file that is missing or damaged (relative path -> what is wrong): by
        size alone, or with ``full`` by sha256 and item count too."""
        files = self.file_manifest()
        return {} if files is None else files.problems(full)

    def _load(self, stage: str, path: Path, load: Callable[[Path], Any]) -> Any:
        """``load(path)`` of a file the build must hold: Missing when it is not there, a
        DataError naming it when it cannot be read."""
        self._require(stage, path)
        with damaged(path):
            return load(path)

    # -- the course data -------------------------------------------------------------------------

    def claims(self, split: str) -> dict[str, Claim]:
        return self._once(("claims", split), lambda: data_layer.load_claims(split, self.data_dir))

    def locate(self, claim_id: str) -> tuple[str, int] | None:
        """(split, position in its file) of a course claim, or None."""

        def index():
            out = {}
            for split in C.SPLITS:
                for position, cid in enumerate(self.claims(split)):
                    out.setdefault(cid, (split, position))
            return out

        return self._once("locate", index).get(claim_id)

    def gold_texts(self) -> dict[str, str]:
        """Gold passages of train and dev (rebuilt from CLIMATE-FEVER), id -> text."""
        return self._once("gold", lambda: data_layer.gold_passages(self.data_dir))

    # -- the corpus ------------------------------------------------------------------------------

    def manifest(self) -> dict:
        return self._once("manifest", self.work.read_manifest)

    def passages(self) -> PassageStore:
        return self._once(
            "passages",
            lambda: PassageStore(
                self._require("build", self.work.passage_texts), self._require("build", self.work.passage_index)
            ),
        )

    def passage_text(self, passage_id: str) -> str | None:
        """A passage's text: the build's corpus, else a gold passage rebuilt from CLIMATE-FEVER."""
        text = self.passages().get(passage_id)
        return text if text is not None else self.gold_texts().get(passage_id)

    # -- tagging ---------------------------------------------------------------------------------

    def iter_tags(self) -> Iterator[dict]:
        """Each passage's ``{"id", "tags", "nopad"}`` in the canonical order."""
        n = self.manifest()["corpus"]["passages"]
        for index in range((n + CHUNK - 1) // CHUNK):
            path = self.work.chunk(self.work.tags_dir, index, ".jsonl")
            rows = self._load("tagging", path, _json_lines)
            self._check_items(path, len(rows))
            if len(rows) != min(CHUNK, n - index * CHUNK):  # also without a manifest (an older build)
                raise damaged_file(path, f"{len(rows)} passages, but its chunk holds {min(CHUNK, n - index * CHUNK)}")
            yield from rows

    def tagging_vectorizer(self):
        from . import tagging, tfidf

        return self._once(
            "tagging_vectorizer",
            lambda: self._load("tagging", self.work.vectorizer, lambda path: tfidf.load(path, tagging.restem)),
        )

    def tagging_summary(self) -> dict:
        return self._once("tagging_summary", lambda: read_json(self._require("tagging", self.work.tagging_summary)))

    # -- retrieval -------------------------------------------------------------------------------

    def retriever(self):
        """The fitted retrieval model the build saved (nothing is refitted)."""
        from .retrieval import Retriever

        vectorizer, index = self.work.retrieval_vectorizer, self.work.retrieval_index

        def load():
            self._require("retrieval", vectorizer)
            # Retriever.load reads both files: a failure names the pair
            return self._load("retrieval", index, lambda path: Retriever.load(vectorizer, path))

        return self._once("retriever", load)

    def retrieval(self, split: str) -> dict[str, dict]:
        """Each claim's retrieval record of one split, claim id -> record, in file order."""

        def read():
            path = self.work.retrieval(split)
            records = self._load("retrieval", path, lambda p: {row["claim_id"]: row for row in _json_lines(p)})
            self._check_items(path, len(records))
            if len(records) != len(self.claims(split)):  # cut at a line's end: whole lines, too few
                raise DataError(
                    f"{path}: damaged ({len(records)} records for {len(self.claims(split))} {split} claims): "
                    f"{REPAIR_HINT}"
                )
            return records

        return self._once(("retrieval", split), read)

    def retrieval_summary(self) -> dict:
        return self._once(
            "retrieval_summary", lambda: read_json(self._require("retrieval", self.work.retrieval_summary))
        )

    # -- the classifier --------------------------------------------------------------------------

    def checkpoint_dir(self) -> Path | None:
        """The trained checkpoint folder the build's classifier stage used (None: the shipped one)."""
        recorded = self.manifest().get("checkpoint")
        if recorded is None:
            return None
        if isinstance(recorded, str):  # an older build.json: the folder's absolute path
            return Path(recorded)
        for name in (C.CHECKPOINT_FILE, C.VOCAB_FILE):
            self._require("classifier", self.work.checkpoint_copy / name)
        return self.work.checkpoint_copy

    def classifier(self):
        """The build's classifier: the checkpoint its classifier stage used."""
        from .classifier.predict import load_classifier

        return self._once("classifier", lambda: load_classifier(self.checkpoint_dir()))

    def inputs(self, split: str, source: str):
        """The model inputs of a split for one evidence source (``gold`` or ``retrieved``)."""
        from .classifier.inputs import Encoded

        return self._once(
            ("inputs", split, source), lambda: self._load("classifier", self.work.inputs(split, source), Encoded.load)
        )

    def verdicts(self, split: str) -> dict[str, dict]:
        """claim id -> ``{"label", <source>: {<protocol>: {"logits", "verdict"}}}``."""
        return self._once(
            ("verdicts", split), lambda: read_json(self._require("classifier", self.work.verdicts(split)))
        )

    def classifier_summary(self) -> dict:
        return self._once(
            "classifier_summary", lambda: read_json(self._require("classifier", self.work.classifier_summary))
        )

    def course_predictions(self, split: str, protocol: str = "notebook") -> dict[str, dict]:
        """The build's predictions in the course's shape, as the notebook would submit them:
        ``{claim_id: {claim_text, claim_label, evidences}}`` with the retrieved ids and the
        verdict on retrieved evidence (notebook protocol: batches of 16 in file order)."""
        claims = self.claims(split)
        verdicts = self.verdicts(split)
        return {
            cid: {
                "claim_text": claims[cid].text,
                "claim_label": verdicts[cid]["retrieved"][protocol]["verdict"],
                "evidences": record["evidences"],
            }
            for cid, record in self.retrieval(split).items()
        }

    # -- what each quirk cost: BM25, the quirk variants, the intended model, the scoreboard ------

    def _records(self, stage: str, path: Path) -> dict[str, dict]:
        records = _read_records(self._require(stage, path))
        self._check_items(path, len(records))
        return records

    def bm25_retrieval(self, split: str) -> dict[str, dict]:
        """BM25's retrieval of one split: claim id -> ``{"claim_id", "evidences", "scores"}``
        (at most six ids, best first; fewer when fewer passages share a stem with the claim)."""
        return self._once(("bm25_retrieval", split), lambda: self._records("bm25", self.work.bm25_retrieval(split)))

    def bm25_summary(self) -> dict:
        """The BM25 stage's figures: ``row`` (its line of the variants table), ``splits``, ``seconds``."""
        return self._once("bm25_summary", lambda: read_json(self._require("bm25", self.work.bm25_summary)))

    def variant_retrieval(self, variant: str, split: str) -> dict[str, dict]:
        """A quirk variant's retrieval records (as :meth:`retrieval`'s) of dev or test."""
        return self._once(
            ("variant_retrieval", variant, split),
            lambda: self._records("retrieval", self.work.variant_retrieval(variant, split)),
        )

    def retrieval_variants(self) -> list[dict]:
        """The dev retrieval variants table (one row per variant) and, once the BM25 stage has
        run, BM25's row after them (``"reference": true``: a standard retriever, not a quirk)."""
        rows = list(self.retrieval_summary().get("variants_dev") or [])
        if self.work.bm25_summary.is_file():
            rows.append(self.bm25_summary()["row"])
        return rows

    def evidence_ids(self, split: str, retrieval: str) -> dict[str, list[str]]:
        """claim id -> the evidence ids one retrieval gave: ``notebook`` (the build's own),
        ``bm25``, or a quirk variant's name (dev and test only)."""
        if retrieval == "notebook":
            records = self.retrieval(split)
        elif retrieval == "bm25":
            records = self.bm25_retrieval(split)
        else:
            records = self.variant_retrieval(retrieval, split)
        return {cid: record["evidences"] for cid, record in records.items()}

    def more_verdicts(self, split: str) -> dict[str, dict]:
        """claim id -> ``{model: {source: {protocol: {"logits", "verdict"}}}}``: the verdicts
        :meth:`verdicts` does not hold (the notebook's model on BM25 and quirk-variant evidence;
        the intended model on every source)."""
        return self._once(
            ("more_verdicts", split), lambda: read_json(self._require("classifier", self.work.more_verdicts(split)))
        )

    def verdict_of(self, split: str, model: str, source: str, protocol: str) -> dict[str, str]:
        """claim id -> verdict of one model (``notebook`` or ``intended``) on one evidence source
        (``gold``, ``retrieved``, ``bm25`` or a quirk variant) under one protocol."""
        if model == "notebook" and source in ("gold", "retrieved"):
            return {cid: entry[source][protocol]["verdict"] for cid, entry in self.verdicts(split).items()}
        return {cid: entry[model][source][protocol]["verdict"] for cid, entry in self.more_verdicts(split).items()}

    def predictions(self, split: str, retrieval: str, model: str, protocol: str) -> dict[str, dict]:
        """One scoreboard row's predictions in the course's shape ``{claim_id: {claim_text,
        claim_label, evidences}}``: that retrieval's ids, that model's verdict on them."""
        from .evaluate import evidence_source

        source = evidence_source(retrieval)
        if split == "train" and not (model == "notebook" and source == "retrieved"):
            raise DataError(
                f"train has only the notebook's own rows (notebook+notebook+notebook, notebook+notebook+alone): "
                f"the build computes {retrieval}+{model}+{protocol} for dev and test only"
            )
        claims = self.claims(split)
        verdicts = self.verdict_of(split, model, source, protocol)
        return {
            cid: {"claim_text": claims[cid].text, "claim_label": verdicts[cid], "evidences": ids}
            for cid, ids in self.evidence_ids(split, retrieval).items()
        }

    def scoreboard(self) -> dict:
        """The dev scoreboard the build computed (:func:`claimtrace.evaluate.scoreboard`)."""
        return self._once("scoreboard", lambda: read_json(self._require("classifier", self.work.scoreboard)))
