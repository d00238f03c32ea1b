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

import json
import mmap
import os
import threading
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from . import constants as C
from . import data as data_layer
from . import store, tagging, tfidf
from .classifier.inputs import Encoded
from .classifier.predict import load_classifier
from .data import Claim
from .errors import REPAIR_HINT, DataError, Missing, damaged, damaged_file
from .retrieval import Retriever
from .scoreboard import evidence_source
from .store import read_json
from .workdir import FileManifest, Workdir, chunk_spans


def _json_lines(path: Path) -> list[dict]:
    """Every line of a JSON-lines file, each a JSON object; a damaged line raises a ValueError
    saying which (:func:`damaged` turns it into a DataError naming the file)."""
    rows = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        try:
            row = json.loads(line)
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
            except json.JSONDecodeError:
                raise DataError(f"{path}: line {number} is damaged: run `claimtrace build` to repair") from None
            records[record["claim_id"]] = record
    return records


def _rebuild_hint(work: Workdir) -> str:
    return f"run `claimtrace build --workdir {work.root}` (it completes a build made by an older claimtrace)"


# --- the manifest: what the build wrote, to be checked against what is there ---------------------


# --- passage texts by offset ----------------------------------------------------------------------


class PassageStore:
    """Every passage's text, found by id: a UTF-8 file of the texts end to end
    (:class:`~claimtrace.data.PackedStrings`, memory-mapped) and an index of the ids sorted
    (:class:`~claimtrace.data.StringIndex`) with the texts' byte offsets. The texts stay on disk;
    a look-up is a binary search and one slice."""

    def __init__(self, texts_path: Path, index_path: Path):
        with damaged(index_path), store.load_npz(index_path) as stored:
            self._index = store.StringIndex(stored["ids"], stored["rank"])
            offsets = stored["offsets"]  # (n + 1,) byte offsets, file order
        with damaged(texts_path), open(texts_path, "rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            buffer = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) if size else b""
        if size != int(offsets[-1]):
            raise DataError(
                f"{texts_path}: {size} bytes but its index says {int(offsets[-1])}: run `claimtrace build` to repair"
            )
        self._texts = store.PackedStrings(buffer, offsets)

    @staticmethod
    def write(passages: Mapping[str, str], texts_path: Path, index_path: Path) -> None:
        """Write the store for ``passages`` (id -> text, file order), each file atomically."""
        buffer, offsets = store.PackedStrings.pack(passages.values())
        index = store.StringIndex.of(passages)
        with store.atomic_output(texts_path) as temporary:
            temporary.write_bytes(buffer.tobytes())
        store.write_npz(index_path, ids=index.sorted_keys, rank=index.rank, offsets=offsets)

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
        for index, (start, stop) in enumerate(chunk_spans(n)):
            path = self.work.chunk(self.work.tags_dir, index, ".jsonl")
            rows = self._load("tagging", path, _json_lines)
            self._check_items(path, len(rows))
            if len(rows) != stop - start:  # also without a manifest (an older build)
                raise damaged_file(path, f"{len(rows)} passages, but its chunk holds {stop - start}")
            yield from rows

    def tagging_vectorizer(self):
        return self._once(
            "tagging_vectorizer",
            lambda: self._load("tagging", self.work.vectorizer, lambda path: tfidf.load(path, tagging.restem)),
        )

    def tagging_summary(self) -> dict:
        return self._once("tagging_summary", lambda: read_json(self._require("tagging", self.work.tagging_summary)))

    # -- retrieval -------------------------------------------------------------------------------

    def retriever(self):
        """The fitted retrieval model the build saved (nothing is refitted)."""
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
        return self._once("classifier", lambda: load_classifier(self.checkpoint_dir()))

    def inputs(self, split: str, source: str):
        """The model inputs of a split for one evidence source (``gold`` or ``retrieved``)."""
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
        claims = self.claims(split)
        verdicts = self.verdict_of(split, model, evidence_source(retrieval), protocol)
        return {
            cid: {"claim_text": claims[cid].text, "claim_label": verdicts[cid], "evidences": ids}
            for cid, ids in self.evidence_ids(split, retrieval).items()
        }

    def scoreboard(self) -> dict:
        """The dev scoreboard the build computed (:func:`claimtrace.evaluate.scoreboard`)."""
        return self._once("scoreboard", lambda: read_json(self._require("classifier", self.work.scoreboard)))
