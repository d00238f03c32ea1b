"""Build a workdir: run the pipeline's stages over one corpus, chunk by chunk, resumably.

Layout of a workdir::

    build.json                  what was built from what (corpus, md5, counts)
    evidence.json               the demo corpus (``--demo`` only)
    tagging/stems/NNNNN.json    both preprocessing variants of each distinct passage text
    tagging/vectorizer.npz      the fitted 20,000-feature tagging vectorizer
    tagging/tags/NNNNN.jsonl    each passage's tags, in the canonical passage order
    tagging/summary.json        figures of the tagging stage
    retrieval/<split>.jsonl     each claim's retrieval (train, dev, test), in file order
    retrieval/summary.json      fallback shares, dev F, the per-variant F table
    classifier/<split>.json     per claim: label and {gold, retrieved} x {alone, notebook} logits, verdict
    classifier/summary.json     accuracies and confusion matrices (dev), the checkpoint used

Every file is written to a temporary name and renamed, so a killed build leaves only whole
files; running the build again skips every chunk that exists and redoes nothing finished.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

import numpy as np
from tqdm import tqdm

from . import constants as C
from . import data as data_layer
from . import tagging, tfidf
from .data import DataError, write_atomic
from .preprocess import preprocess_both

CHUNK = 50_000


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
    def demo_evidence(self) -> Path:
        return self.root / "evidence.json"

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

    def retrieval(self, split: str) -> Path:
        return self.root / "retrieval" / f"{split}.jsonl"

    @property
    def retrieval_summary(self) -> Path:
        return self.root / "retrieval" / "summary.json"

    def verdicts(self, split: str) -> Path:
        return self.root / "classifier" / f"{split}.json"

    @property
    def classifier_summary(self) -> Path:
        return self.root / "classifier" / "summary.json"

    def read_manifest(self) -> dict:
        if not self.manifest.is_file():
            raise DataError(f"{self.root}: not a claimtrace build (no build.json): run `claimtrace build` first")
        return json.loads(self.manifest.read_text(encoding="utf-8"))


def _log(message: str) -> None:
    tqdm.write(message, file=sys.stderr)


# --- the corpus ----------------------------------------------------------------------------------


def load_corpus(work: Workdir, data_dir: Path, evidence: Path | None) -> tuple[dict[str, str], dict]:
    """The passages of this build (``id -> text`` in file order) and its description."""
    if evidence is None:
        if not work.demo_evidence.is_file():
            corpus = data_layer.demo_corpus(data_dir)
            write_atomic(work.demo_evidence, json.dumps(corpus, ensure_ascii=False))
        source = work.demo_evidence
        passages = dict(data_layer.iter_evidence(source, check_md5=False))
        kind = "demo"
    else:
        source = Path(evidence)
        passages = dict(data_layer.iter_evidence(source))
        kind = "evidence"
    description = {"kind": kind, "source": str(source.resolve()), "passages": len(passages)}
    return passages, description


def build_passages(work: Workdir) -> dict[str, str]:
    """The passages a finished build was made of (``id -> text``, file order)."""
    source = Path(work.read_manifest()["corpus"]["source"])
    if not source.is_file():
        raise DataError(f"{source}: the evidence file this build was made of is gone")
    return dict(data_layer.iter_evidence(source, check_md5=False))


def _check_manifest(work: Workdir, description: dict) -> None:
    if work.manifest.is_file():
        previous = json.loads(work.manifest.read_text(encoding="utf-8"))["corpus"]
        if previous != description:
            raise DataError(
                f"{work.root}: this workdir was built from {previous['source']} "
                f"({previous['passages']} passages), not {description['source']} "
                f"({description['passages']}): use another --workdir"
            )
    else:
        write_atomic(work.manifest, json.dumps({"corpus": description}, indent=1))


# --- chunked, resumable steps -------------------------------------------------------------------


def _chunk_path(folder: Path, index: int, suffix: str) -> Path:
    return folder / f"{index:05d}{suffix}"


def _run_chunks(folder: Path, n_items: int, suffix: str, make: Callable[[int, int], str], label: str) -> None:
    """Write one file per chunk of ``CHUNK`` items with ``make(start, stop)``; skip existing."""
    n_chunks = (n_items + CHUNK - 1) // CHUNK
    todo = [i for i in range(n_chunks) if not _chunk_path(folder, i, suffix).is_file()]
    if not todo:
        return
    done = min(n_items, (n_chunks - len(todo)) * CHUNK)
    with tqdm(total=n_items, desc=label, unit="passage", initial=done, disable=None) as bar:
        for index in todo:
            start, stop = index * CHUNK, min(n_items, (index + 1) * CHUNK)
            write_atomic(_chunk_path(folder, index, suffix), make(start, stop))
            bar.update(stop - start)


def _stems_of(text: str) -> tuple[str, str]:
    older, final = preprocess_both(text)
    return older.text(), final.text()


def _stems_chunk(texts: list[str], processes: int) -> list[tuple[str, str]]:
    if processes <= 1 or len(texts) < 2_000:
        return [_stems_of(t) for t in texts]
    with multiprocessing.get_context("fork").Pool(processes) as pool:
        return pool.map(_stems_of, texts, chunksize=500)


def _read_chunks(folder: Path, n_items: int, suffix: str) -> Iterator[str]:
    for index in range((n_items + CHUNK - 1) // CHUNK):
        yield _chunk_path(folder, index, suffix).read_text(encoding="utf-8")


# --- the tagging stage ----------------------------------------------------------------------------


def build_tagging(work: Workdir, data_dir: Path, passages: dict[str, str], processes: int = 2) -> dict:
    """Stems, vectorizer fit and passage tags, each resumable; returns the stage's summary."""
    timings: dict[str, float] = {}
    distinct = list(tagging.deduplicated(passages).values())
    text_index = {text: i for i, text in enumerate(distinct)}

    started = time.perf_counter()
    _run_chunks(
        work.stems_dir, len(distinct), ".json",
        lambda a, b: json.dumps(_stems_chunk(distinct[a:b], processes), ensure_ascii=False),
        "preprocess passages",
    )
    stems: list[list[str]] = []
    for chunk in _read_chunks(work.stems_dir, len(distinct), ".json"):
        stems.extend(json.loads(chunk))
    timings["preprocess_s"] = time.perf_counter() - started

    started = time.perf_counter()
    if work.vectorizer.is_file():
        vectorizer = tfidf.load(work.vectorizer, tagging.restem)
    else:
        claim_files = [data_layer.load_claims(s, data_dir) for s in ("baseline", "dev", "train")]
        claim_docs = list(tagging.fit_corpus_claim_rows(claim_files, passages))
        docs = claim_docs + [older for older, _ in stems]
        vectorizer = tagging.tagging_vectorizer(tokenizer=tagging.restem)
        vectorizer.fit(tqdm(docs, desc="fit tagging vectorizer", unit="doc", disable=None))
        tfidf.save(vectorizer, work.vectorizer)
    timings["fit_s"] = time.perf_counter() - started

    started = time.perf_counter()
    ids = list(passages)
    order = tagging.canonical_order(len(ids))

    def tag_chunk(a: int, b: int) -> str:
        positions = order[a:b]
        rows_of = [text_index[passages[ids[p]]] for p in positions]
        rows = vectorizer.transform(stems[r][1] for r in rows_of)
        lines = []
        for p, tagged in zip(positions, tagging.tag_rows(rows, vectorizer.feature_names)):
            lines.append(json.dumps({
                "id": ids[p],
                "tags": tagged.tags,
                "nopad": tagged.nopad,
            }, ensure_ascii=False))
        return "\n".join(lines) + "\n"

    _run_chunks(work.tags_dir, len(ids), ".jsonl", tag_chunk, "tag passages")
    timings["tag_s"] = time.perf_counter() - started
    summary = summarise_tags(work, vectorizer, len(ids), len(distinct))
    summary["timings"] = timings
    write_atomic(work.tagging_summary, json.dumps(summary, ensure_ascii=False, indent=1))
    return summary


def iter_tags(work: Workdir) -> Iterator[dict]:
    """Each passage's ``{"id", "tags", "nopad"}`` in the canonical order."""
    n = work.read_manifest()["corpus"]["passages"]
    for chunk in _read_chunks(work.tags_dir, n, ".jsonl"):
        for line in chunk.splitlines():
            yield json.loads(line)


def summarise_tags(work: Workdir, vectorizer, n_passages: int, n_distinct: int) -> dict:
    last = str(vectorizer.feature_names[-1])
    with_last = untagged = padded = 0
    for row in iter_tags(work):
        with_last += last in row["tags"]
        untagged += not row["tags"]
        padded += row["tags"] != row["nopad"]
    return {
        "passages": n_passages,
        "distinct_texts": n_distinct,
        "fit_documents": vectorizer.n_docs_,
        "features": len(vectorizer.feature_names),
        "max_features_cut": vectorizer.cut_,
        "last_feature": last,
        "passages_with_last_feature": with_last,
        "share_with_last_feature": with_last / n_passages if n_passages else 0.0,
        "untagged_passages": untagged,
        "passages_whose_tags_include_padding": padded,
    }


# --- the retrieval stage --------------------------------------------------------------------------

SPLITS = ("train", "dev", "test")


def build_retrieval(work: Workdir, data_dir: Path) -> dict:
    """Every claim's retrieval, per split, and the dev figures (per-variant F included)."""
    from . import retrieval
    from .evaluate import evidence_f

    if work.retrieval_summary.is_file():
        return json.loads(work.retrieval_summary.read_text(encoding="utf-8"))
    started = time.perf_counter()
    rows = list(iter_tags(work))
    ids = [r["id"] for r in rows]
    tags = [r["tags"] for r in rows]
    retriever = retrieval.Retriever(ids, tags)
    summary: dict = {"excluded_untagged_passages": len(ids) - len(retriever.ids), "splits": {}}
    for split in SPLITS:
        claims = data_layer.load_claims(split, data_dir)
        if work.retrieval(split).is_file():
            records = list(iter_retrieval(work, split))
        else:
            records = retrieval.retrieve_all(ids, tags, claims, retriever=retriever)
            write_atomic(work.retrieval(split), "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records))
        figures = {"claims": len(records), "fallback_share": sum(r["fallback"] for r in records) / max(1, len(records))}
        if split != "test":
            figures["F"] = sum(evidence_f(r["evidences"], claims[r["claim_id"]].evidences) for r in records) / max(1, len(records))
        summary["splits"][split] = figures
    dev = data_layer.load_claims("dev", data_dir)
    summary["variants_dev"] = retrieval.variant_f_table(ids, tags, dev, unpadded_tags=[r["nopad"] for r in rows],
                                                         retriever=retriever)
    summary["seconds"] = time.perf_counter() - started
    write_atomic(work.retrieval_summary, json.dumps(summary, ensure_ascii=False, indent=1))
    return summary


def iter_retrieval(work: Workdir, split: str) -> Iterator[dict]:
    """Each claim's retrieval record of one split, in file order."""
    path = work.retrieval(split)
    if not path.is_file():
        raise DataError(f"{path}: retrieval not built: run `claimtrace build` first")
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            yield json.loads(line)


# --- the classifier stage -------------------------------------------------------------------------


def build_classifier(work: Workdir, data_dir: Path, passages: dict[str, str]) -> dict:
    """Verdicts of the shipped checkpoint for every claim: gold and retrieved evidence (gold
    only where labelled), alone and in the notebook's batches of 16; dev accuracies."""
    if work.classifier_summary.is_file():
        return json.loads(work.classifier_summary.read_text(encoding="utf-8"))
    import torch

    # Batches of 16 x 128 are too small to gain from a second thread; on a busy machine two
    # threads were 2-3x slower than one.
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        return _classify_every_split(work, data_dir, passages)
    finally:
        torch.set_num_threads(threads)


def _classify_every_split(work: Workdir, data_dir: Path, passages: dict[str, str]) -> dict:
    from .explain import evidence_texts, load_classifier, predict

    classifier = load_classifier()
    summary: dict = {"checkpoint": classifier.checkpoint.name}
    for split in SPLITS:
        claims = data_layer.load_claims(split, data_dir)
        retrieved = {r["claim_id"]: r["evidences"] for r in iter_retrieval(work, split)}
        sources = {"retrieved": evidence_texts(retrieved, passages)}
        if split != "test":
            sources["gold"] = evidence_texts({cid: c.evidences for cid, c in claims.items()}, passages)
        verdicts: dict[str, dict] = {cid: {"label": c.label} for cid, c in claims.items()}
        for source, evidence in sources.items():
            for cid, entry in predict(classifier, claims, evidence).items():
                verdicts[cid][source] = {p: entry[p] for p in C.PROTOCOLS}  # {"logits", "verdict"}
            if split != "test":
                summary.setdefault(split, {})[source] = protocol_figures(verdicts, source)
        write_atomic(work.verdicts(split), json.dumps(verdicts, ensure_ascii=False))
    write_atomic(work.classifier_summary, json.dumps(summary, ensure_ascii=False, indent=1))
    return summary


def protocol_figures(verdicts: dict[str, dict], source: str) -> dict:
    """Accuracy and 4x4 confusion (rows: label, columns: verdict, in LABELS order) per protocol."""
    figures = {}
    for protocol in C.PROTOCOLS:
        confusion = np.zeros((len(C.LABELS), len(C.LABELS)), dtype=int)
        for entry in verdicts.values():
            confusion[C.LABEL_IDS[entry["label"]], C.LABEL_IDS[entry[source][protocol]["verdict"]]] += 1
        correct = int(np.trace(confusion))
        figures[protocol] = {"accuracy": correct / max(1, len(verdicts)), "correct": correct,
                             "claims": len(verdicts), "confusion": confusion.tolist()}
    return figures


def course_predictions(work: Workdir, split: str, data_dir: Path, protocol: str = "notebook") -> dict[str, dict]:
    """The build's predictions in the course's shape, as the notebook would submit them:
    ``{claim_id: {claim_text, claim_label, evidences}}`` with the retrieved ids and the verdict
    on retrieved evidence (notebook protocol: batches of 16 in file order)."""
    claims = data_layer.load_claims(split, data_dir)
    verdicts = read_verdicts(work, split)
    return {
        record["claim_id"]: {
            "claim_text": claims[record["claim_id"]].text,
            "claim_label": verdicts[record["claim_id"]]["retrieved"][protocol]["verdict"],
            "evidences": record["evidences"],
        }
        for record in iter_retrieval(work, split)
    }


def read_verdicts(work: Workdir, split: str) -> dict[str, dict]:
    path = work.verdicts(split)
    if not path.is_file():
        raise DataError(f"{path}: classifier verdicts not built: run `claimtrace build` first")
    return json.loads(path.read_text(encoding="utf-8"))


# --- the whole build ----------------------------------------------------------------------------


STAGES = ("tagging", "retrieval", "classifier")


def build(workdir: str | os.PathLike, data_dir: Path, evidence: Path | None = None, processes: int = 2,
          until: str = "classifier") -> dict:
    """Run the stages over the corpus (the demo corpus when ``evidence`` is None), from tagging
    up to and including ``until``."""
    if until not in STAGES:
        raise ValueError(f"until must be one of {', '.join(STAGES)}, got {until!r}")
    work = Workdir(Path(workdir))
    work.root.mkdir(parents=True, exist_ok=True)
    passages, description = load_corpus(work, data_dir, evidence)
    _check_manifest(work, description)
    summary = {"tagging": build_tagging(work, data_dir, passages, processes)}
    if until == "tagging":
        return summary
    _log("retrieval: every train, dev and test claim")
    summary["retrieval"] = build_retrieval(work, data_dir)
    if until == "retrieval":
        return summary
    _log("classifier: verdicts of the shipped checkpoint")
    summary["classifier"] = build_classifier(work, data_dir, passages)
    return summary
