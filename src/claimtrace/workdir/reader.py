"""The build reader: the one place that knows a workdir's layout, and opens what is in it.

Stages write a workdir (:mod:`claimtrace.workdir.stages`, run by :mod:`claimtrace.workdir.builder`,
each reading what the earlier ones wrote through one :class:`BuildReader`); the command line,
:mod:`claimtrace.explain.verdict` and the site read it through :class:`BuildReader`, lazily, each piece
once, and never re-derive what a stage computed. No other module builds a workdir path:
:class:`~claimtrace.workdir.layout.Workdir` names them all.

The layout of a workdir is :mod:`claimtrace.workdir.layout`'s (its docstring lists every file).
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from claimtrace.constants import CHECKPOINT_FILE, PROTOCOLS, SPLITS, VOCAB_FILE
from claimtrace.data import files as data_layer
from claimtrace.data.files import Claim
from claimtrace.errors import REPAIR_HINT, DataError, Missing, damaged, damaged_file
from claimtrace.evaluation.scoreboard import evidence_source
from claimtrace.lib import build_files
from claimtrace.lib.build_files import read_json
from claimtrace.models.inputs import Encoded
from claimtrace.models.predict import load_classifier, protocol_figures
from claimtrace.pipeline import tfidf
from claimtrace.pipeline.preprocess import Preprocessor
from claimtrace.pipeline.retrieval import Retriever
from claimtrace.pipeline.tagging import Restemmer, RestemTable
from claimtrace.workdir.layout import FileManifest, Workdir, chunk_spans
from claimtrace.workdir.passages import PassageStore


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


# --- the reader -----------------------------------------------------------------------------------


def protocol_verdicts(entry: Mapping[str, dict]) -> dict[str, str]:
    """``{protocol: verdict}`` of one claim's ``{protocol: {"logits", "verdict"}}`` entry."""
    return {protocol: entry[protocol]["verdict"] for protocol in PROTOCOLS}


def source_figures(claims: Mapping[str, Claim], verdicts: Mapping[str, dict], source: str) -> dict:
    """The classifier's figures on one evidence source of a labelled split, per protocol
    (:func:`~claimtrace.models.predict.protocol_figures`: accuracy and confusion), from verdicts
    in classifier/<split>.json's shape, ``{claim id: {source: {protocol: {"verdict", ...}}}}``."""
    labels = {cid: claim.label for cid, claim in claims.items()}
    return protocol_figures(labels, {cid: protocol_verdicts(verdicts[cid][source]) for cid in claims})


class BuildReader:
    """A workdir, read lazily: each piece is opened once, on first use, and kept.

    root: a ``claimtrace build`` workdir. data_dir: the course data (default: found as the CLI
    finds it, once, on first use). Every method raises :class:`Missing` (a :class:`DataError`)
    naming the file that is not there and what to run.
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
        self._verified: dict[Path, tuple[int, int, int]] = {}  # files whose sha256 was checked
        self._locks: dict[Any, threading.Lock] = {}
        self._guard = threading.Lock()

    @property
    def root(self) -> Path:
        return self.work.root

    @property
    def data_dir(self) -> Path:
        """The course data folder (found on first use: the tagging files need none)."""
        return self.once("data_dir", lambda: data_layer.find_data_dir(self._data_dir))

    def once(self, key, make: Callable[[], Any]):
        """``make()`` once per key (thread-safe). A failure is not remembered: a piece not built
        yet (Missing) or damaged is looked for again on the next call, so that a server notices a
        build that completes or is repaired while it runs (a stat: cheap)."""
        try:
            return self._memo[key]
        except KeyError:
            with self._guard:
                lock = self._locks.setdefault(key, threading.Lock())
            with lock:
                if key not in self._memo:
                    self._memo[key] = make()
                return self._memo[key]

    def file_manifest(self) -> FileManifest | None:
        """The build's manifest.json (None: a build made before manifests, read unchecked)."""
        try:  # read again when it changes: a build completing or repaired while a server runs
            status = self.work.file_manifest.stat()
            stamp = (status.st_size, status.st_mtime_ns, status.st_ino)
        except OSError:
            stamp = None
        return self.once(("file_manifest", stamp), lambda: FileManifest.read(self.work))

    def _require(self, stage: str, path: Path) -> Path:
        """``path``, there and as the build wrote it: its size, and at its first read by this
        reader its sha256 against the manifest's (every byte a page shows is checked once per
        process, the cost spread over the first reads: docs/benchmarks.md, "The site over a
        course-scale build"), or a DataError naming it. A folder (the BM25 index) is checked file
        by file."""
        files = self.file_manifest()
        if not path.exists():
            self.build_record()
            if files is not None and files.get(path) is not None:
                raise Missing(stage, path, f"missing (the build wrote it): {REPAIR_HINT}")
            raise Missing(stage, path, self.work.not_built_hint())
        if files is None:  # a build made before manifests: read unchecked
            return path
        for member in self._recorded_under(files, path):
            problem = files.cheap_problem(member)
            if problem is None:
                problem = self._content_problem(files, member)
            if problem is not None:
                raise damaged_file(member, problem)
        return path

    def _recorded_under(self, files: FileManifest, path: Path) -> list[Path]:
        """The recorded files that are ``path`` or lie in it (a folder)."""
        if files.get(path) is not None or not path.is_dir():
            return [path]
        prefix = self.work.relative(path) + "/"
        return [self.work.at(name) for name in files.files if name.startswith(prefix)]

    def _content_problem(self, files: FileManifest, path: Path) -> str | None:
        """The file's sha256 and item count against the manifest, once per file while it stays
        the same (size and modification time): a repaired file is checked again."""
        try:
            status = path.stat()
        except OSError as err:
            return f"cannot be read ({err.strerror or err})"
        stamp = (status.st_size, status.st_mtime_ns, status.st_ino)
        if self._verified.get(path) == stamp:
            return None
        problem = files.full_problem(path)
        if problem is None:
            self._verified[path] = stamp
        return problem

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

    @property
    def preprocessor(self) -> Preprocessor:
        """The preprocessing, with the data folder's stopword list (every trace preprocesses)."""
        return self.once("preprocessor", lambda: Preprocessor.of_data_dir(self.data_dir))

    def claims(self, split: str) -> dict[str, Claim]:
        return self.once(("claims", split), lambda: data_layer.load_claims(split, self.data_dir))

    def locate(self, claim_id: str) -> tuple[str, int] | None:
        """(split, position in its file) of a course claim, or None."""

        def index():
            out = {}
            for split in SPLITS:
                for position, cid in enumerate(self.claims(split)):
                    out.setdefault(cid, (split, position))
            return out

        return self.once("locate", index).get(claim_id)

    def gold_texts(self) -> dict[str, str]:
        """Gold passages of train and dev (rebuilt from CLIMATE-FEVER), id -> text."""
        return self.once("gold", lambda: data_layer.gold_passages(self.data_dir))

    # -- the corpus ------------------------------------------------------------------------------

    def build_record(self) -> dict:
        return self.once("build_record", self.work.read_build_record)

    def passages(self) -> PassageStore:
        return self.once(
            "passages",
            lambda: PassageStore(
                self._require("build", self.work.passage_texts), self._require("build", self.work.passage_index)
            ),
        )

    def passage_text(self, passage_id: str) -> str | None:
        """A passage's text: the build's corpus, else a gold passage rebuilt from CLIMATE-FEVER."""
        text = self.passages().get(passage_id)
        return text if text is not None else self.gold_texts().get(passage_id)

    def passage_stems(self, passage_id: str) -> str | None:
        """A corpus passage's final stems, joined, as the build preprocessed its text (read from
        ``tagging/stems.npz``, never recomputed); None for a passage outside the corpus, or a
        build made before that file (the caller preprocesses the text: the same stems)."""
        if not self._memo.get("has_passage_stems"):  # a stat for every passage a trace showed: once there, remembered
            if not self.work.passage_stems.exists():
                return None
            self._memo["has_passage_stems"] = True
        position = self.passages().position(passage_id)
        if position is None:
            return None
        texts, distinct = self.once("passage_stems", self._load_passage_stems)
        return texts[int(distinct[position])]

    def _load_passage_stems(self) -> tuple[build_files.PackedStrings, np.ndarray]:
        path = self._require("tagging", self.work.passage_stems)
        with damaged(path), build_files.load_npz(path) as stored:
            # a memoryview, not the array: PackedStrings would copy an ndarray's bytes
            texts = build_files.PackedStrings(memoryview(stored["texts"]), stored["offsets"])
            return texts, stored["distinct"]

    # -- tagging ---------------------------------------------------------------------------------

    def iter_tags(self) -> Iterator[dict]:
        """Each passage's ``{"id", "tags", "nopad"}`` in the canonical order."""
        n = self.build_record()["corpus"]["passages"]
        for index, (start, stop) in enumerate(chunk_spans(n)):
            path = self.work.chunk(self.work.tags_dir, index, ".jsonl")
            rows = self._load("tagging", path, _json_lines)
            self._check_items(path, len(rows))
            if len(rows) != stop - start:  # also without a manifest (an older build)
                raise damaged_file(path, f"{len(rows)} passages, but its chunk holds {stop - start}")
            yield from rows

    @property
    def restemmer(self) -> Restemmer:
        """The quirk "stems of stems" with the build's table of what each token of its passages'
        stems and of its tags becomes (``tagging/restemmed.npz``): only other tokens are
        preprocessed again."""
        return self.once(
            "restemmer",
            lambda: Restemmer(self.preprocessor, self._load("tagging", self.work.restemmed, RestemTable.load)),
        )

    def tagging_vectorizer(self):
        return self.once(
            "tagging_vectorizer",
            lambda: self._load("tagging", self.work.vectorizer, lambda path: tfidf.load(path, self.restemmer.restem)),
        )

    def tagging_summary(self) -> dict:
        return self.once("tagging_summary", lambda: read_json(self._require("tagging", self.work.tagging_summary)))

    # -- retrieval -------------------------------------------------------------------------------

    def retriever(self):
        """The fitted retrieval model the build saved (nothing is refitted)."""
        vectorizer, index = self.work.retrieval_vectorizer, self.work.retrieval_index

        def load():
            self._require("retrieval", vectorizer)
            # Retriever.load reads both files: a failure names the pair
            restemmer = self.restemmer
            return self._load("retrieval", index, lambda path: Retriever.load(vectorizer, path, restemmer))

        return self.once("retriever", load)

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

        return self.once(("retrieval", split), read)

    def retrieval_summary(self) -> dict:
        return self.once(
            "retrieval_summary", lambda: read_json(self._require("retrieval", self.work.retrieval_summary))
        )

    # -- the classifier --------------------------------------------------------------------------

    def checkpoint_dir(self) -> Path | None:
        """The trained checkpoint folder the build's classifier stage used (None: the shipped one)."""
        recorded = self.build_record().get("checkpoint")
        if recorded is None:
            return None
        if isinstance(recorded, str):  # an older build.json: the folder's absolute path
            return Path(recorded)
        for name in (CHECKPOINT_FILE, VOCAB_FILE):
            self._require("classifier", self.work.checkpoint_copy / name)
        return self.work.checkpoint_copy

    def classifier(self):
        """The build's classifier: the checkpoint its classifier stage used."""
        return self.once("classifier", lambda: load_classifier(self.checkpoint_dir()))

    def inputs(self, split: str, source: str):
        """The model inputs of a split for one evidence source (``gold`` or ``retrieved``)."""
        return self.once(
            ("inputs", split, source), lambda: self._load("classifier", self.work.inputs(split, source), Encoded.load)
        )

    def verdicts(self, split: str) -> dict[str, dict]:
        """claim id -> ``{"label", <source>: {<protocol>: {"logits", "verdict"}}}``."""
        return self.once(("verdicts", split), lambda: read_json(self._require("classifier", self.work.verdicts(split))))

    def classifier_summary(self) -> dict:
        return self.once(
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
        return self.once(("bm25_retrieval", split), lambda: self._records("bm25", self.work.bm25_retrieval(split)))

    def bm25_summary(self) -> dict:
        """The BM25 stage's figures: ``row`` (its line of the variants table), ``splits``, ``seconds``."""
        return self.once("bm25_summary", lambda: read_json(self._require("bm25", self.work.bm25_summary)))

    def variant_retrieval(self, variant: str, split: str) -> dict[str, dict]:
        """A quirk variant's retrieval records (as :meth:`retrieval`'s) of dev or test."""
        return self.once(
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

    def retrieval_records(self, split: str, retrieval: str) -> dict[str, dict]:
        """claim id -> the record of one retrieval: ``notebook`` (the build's own), ``bm25``, or
        a quirk variant's name (dev and test only)."""
        if retrieval == "notebook":
            return self.retrieval(split)
        if retrieval == "bm25":
            return self.bm25_retrieval(split)
        return self.variant_retrieval(retrieval, split)

    def evidence_ids(self, split: str, retrieval: str) -> dict[str, list[str]]:
        """claim id -> the evidence ids one retrieval gave (:meth:`retrieval_records`)."""
        return {cid: record["evidences"] for cid, record in self.retrieval_records(split, retrieval).items()}

    def more_verdicts(self, split: str) -> dict[str, dict]:
        """claim id -> ``{model: {source: {protocol: {"logits", "verdict"}}}}``: the verdicts
        :meth:`verdicts` does not hold (the notebook's model on BM25 and quirk-variant evidence;
        the intended model and the LSTM on every source; dev and test only)."""
        return self.once(
            ("more_verdicts", split), lambda: read_json(self._require("classifier", self.work.more_verdicts(split)))
        )

    def verdict_table(self, split: str, source: str = "retrieved") -> dict[str, dict[str, str]]:
        """claim id -> ``{protocol: verdict}`` of the build's model on one evidence source
        (``gold`` or ``retrieved``), in file order."""
        return self.once(
            ("verdict_table", split, source),
            lambda: {cid: protocol_verdicts(entry[source]) for cid, entry in self.verdicts(split).items()},
        )

    def verdict_of(self, split: str, model: str, source: str, protocol: str) -> dict[str, str]:
        """claim id -> verdict of one model (``notebook``, ``intended`` or ``lstm``) on one evidence source
        (``gold``, ``retrieved``, ``bm25`` or a quirk variant) under one protocol."""
        if model == "notebook" and source in ("gold", "retrieved"):
            return {cid: entry[source][protocol]["verdict"] for cid, entry in self.verdicts(split).items()}
        return {cid: entry[model][source][protocol]["verdict"] for cid, entry in self.more_verdicts(split).items()}

    def predictions(self, split: str, retrieval: str, model: str, protocol: str) -> dict[str, dict]:
        """One scoreboard row's predictions in the course's shape ``{claim_id: {claim_text,
        claim_label, evidences}}``: that retrieval's ids, that model's verdict on them."""
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
        """The dev scoreboard the build computed (:func:`claimtrace.evaluation.scoreboard.scoreboard`)."""
        return self.once("scoreboard", lambda: read_json(self._require("classifier", self.work.scoreboard)))

    def sweep(self) -> dict:
        """The dev threshold sweep the build computed (:func:`claimtrace.evaluation.sweep.sweep`)."""
        return self.once("sweep", lambda: read_json(self._require("classifier", self.work.sweep)))

    # -- attribution methods graded (``claimtrace attribute``, not part of the build) --------------

    def attribution_grades(self) -> dict:
        """The methods' grades over the dev claims (``claimtrace attribute``), or Missing."""
        return self.once("attribution_grades", lambda: read_json(self._attribution(self.work.attribution_grades)))

    def attribution_claims(self, model: str = "transformer") -> dict[str, dict]:
        """claim id -> the Transformer's attributions beside the exact shares (``lstm``: the LSTM's), or Missing."""
        path = self.work.attribution_claims if model == "transformer" else self.work.attribution_lstm
        return self.once(("attribution_claims", model), lambda: _read_records(self._attribution(path)))

    # -- counterfactuals (``claimtrace counterfactual --all``, not part of the build) -------------

    def counterfactuals(self, split: str | None = None) -> dict:
        """A split's claim id -> the smallest edits that change its verdict (dev, test); without a
        split, the shares of dev claims one edit of each kind changes. Missing before the command."""
        path = self.work.counterfactuals(split) if split else self.work.counterfactuals_summary
        if not path.is_file():
            hint = f"not computed yet: run `claimtrace counterfactual --all --workdir {self.root}`"
            raise Missing("counterfactuals", path, hint)
        self._require("counterfactuals", path)
        return self.once(("counterfactuals", split), lambda: (_read_records if split else read_json)(path))

    def _attribution(self, path: Path) -> Path:
        if not path.is_file():
            raise Missing("attribution", path, f"not computed yet: run `claimtrace attribute --workdir {self.root}`")
        return self._require("attribution", path)
