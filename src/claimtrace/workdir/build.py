"""Build a workdir: run the pipeline's stages over one corpus, chunk by chunk, resumably.

The layout is :mod:`claimtrace.workdir.reader`'s (its :class:`~claimtrace.workdir.reader.Workdir` names
every path; its :class:`~claimtrace.workdir.reader.Build` reads them). Every file is written to a
temporary name and renamed, so a killed build leaves only whole files; running the build again
skips every chunk and file that exists and redoes nothing finished. A build made by an older
claimtrace is completed in place: the files it lacks are written.
"""

from __future__ import annotations

import fcntl
import gc
import json
import multiprocessing
import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
from tqdm import tqdm

from claimtrace import constants as C
from claimtrace.assets import ASSETS_DIR
from claimtrace.data import files as data_layer
from claimtrace.data.evidence import iter_evidence
from claimtrace.errors import DataError
from claimtrace.evaluation.retrieval import variant_f_row
from claimtrace.evaluation.scoreboard import scoreboard
from claimtrace.evaluation.scorer import evidence_f
from claimtrace.lib import chunks
from claimtrace.lib.alongside import Alongside, cpu_seconds
from claimtrace.lib.store import PackedStrings, read_json, write_atomic, write_npz
from claimtrace.models.inputs import Encoded, encode, evidence_texts, load_vocab, make_rows
from claimtrace.models.predict import predict, protocol_figures
from claimtrace.models.table import export_table
from claimtrace.pipeline import bm25, retrieval, tagging, tfidf
from claimtrace.pipeline.preprocess import preprocess_both
from claimtrace.pipeline.retrieval import VARIANTS
from claimtrace.workdir import layout as workdir_module
from claimtrace.workdir.integrity import (
    check_build_record,
    copy_checkpoint,
    log,
    open_file_manifest,
    record_new,
    verify_repairs,
)
from claimtrace.workdir.layout import CHUNK, Workdir, chunk_spans, sha256_of
from claimtrace.workdir.reader import Build, PassageStore, protocol_verdicts

# --- the corpus ----------------------------------------------------------------------------------


def load_corpus(work: Workdir, data_dir: Path, evidence: Path | None) -> tuple[dict[str, str], dict]:
    """The passages of this build (``id -> text`` in file order) and its description: its kind,
    its path relative to the workdir (so that a workdir moved or copied with its corpus still
    finds it), its passage count and the sha256 of its bytes (what the build is of: an edit in
    place changes it)."""
    if evidence is None:
        if not work.demo_evidence.is_file():
            corpus = data_layer.demo_corpus(data_dir)
            write_atomic(work.demo_evidence, json.dumps(corpus, ensure_ascii=False))
        source = work.demo_evidence
        passages = dict(iter_evidence(source, check_md5=False))
        kind = "demo"
    else:
        source = Path(evidence)
        passages = dict(iter_evidence(source))
        kind = "evidence"
    description = {
        "kind": kind,
        "source": os.path.relpath(os.path.abspath(source), os.path.abspath(work.root)).replace(os.sep, "/"),
        "passages": len(passages),
        "sha256": sha256_of(source)[0],
    }
    return passages, description


# --- the manifest: checked before the stages run, completed after each ---------------------------


def build_passage_store(work: Workdir, passages: dict[str, str]) -> None:
    """Every passage's text, found by offset (:class:`claimtrace.workdir.reader.PassageStore`)."""
    if not (work.passage_texts.is_file() and work.passage_index.is_file()):
        PassageStore.write(passages, work.passage_texts, work.passage_index)


# --- chunked, resumable steps -------------------------------------------------------------------


def _run_chunks(
    folder: Path, n_items: int, suffix: str, make: Callable[[int, int], str], label: str, processes: int = 1
) -> None:
    """Write one text file per chunk of ``workdir.CHUNK`` items with ``make(start, stop)``;
    skip existing (:func:`claimtrace.lib.chunks.run_chunks`, the runner BM25's chunks share)."""
    chunks.run_chunks(folder, chunk_spans(n_items), suffix, make, _write_text, processes=processes, label=label)


def _write_text(path: Path, text: str) -> None:
    write_atomic(path, text)  # looked up at each call (a test stands in a dying writer)


def _stems_of(text: str) -> tuple[str, str]:
    older, final = preprocess_both(text)
    return older.text(), final.text()


def _stems_chunk(texts: list[str], processes: int) -> list[tuple[str, str]]:
    if processes <= 1 or len(texts) < 2_000:
        return [_stems_of(t) for t in texts]
    with multiprocessing.get_context("fork").Pool(processes) as pool:
        return pool.map(_stems_of, texts, chunksize=500)


def _read_chunks(folder: Path, n_items: int, suffix: str) -> Iterator[str]:
    for index in range(len(chunk_spans(n_items))):
        yield Workdir.chunk(folder, index, suffix).read_text(encoding="utf-8")


# --- the tagging stage ----------------------------------------------------------------------------


def build_tagging(
    work: Workdir,
    data_dir: Path,
    passages: dict[str, str],
    processes: int = 2,
    preprocessed: Callable[[], None] | None = None,
) -> dict:
    """Stems, vectorizer fit and passage tags, each resumable; returns the stage's summary.
    ``preprocessed``: called once every passage's stems are made (the build starts BM25
    alongside then)."""
    timings: dict[str, float] = {}
    distinct = list(tagging.deduplicated(passages).values())
    text_index = {text: i for i, text in enumerate(distinct)}

    started = time.perf_counter()
    _run_chunks(
        work.stems_dir,
        len(distinct),
        ".json",
        lambda a, b: json.dumps(_stems_chunk(distinct[a:b], processes), ensure_ascii=False),
        "preprocess passages",
    )
    stems: list[list[str]] = []
    for chunk in _read_chunks(work.stems_dir, len(distinct), ".json"):
        stems.extend(json.loads(chunk))
    if not work.passage_stems.is_file():
        write_passage_stems(work, passages, text_index, stems)
    timings["preprocess_s"] = time.perf_counter() - started
    if preprocessed is not None:
        preprocessed()

    started = time.perf_counter()
    if work.vectorizer.is_file():
        vectorizer = tfidf.load(work.vectorizer, tagging.restem)
    else:
        claim_files = [
            data_layer.load_claims(s, data_dir) for s in ("baseline", "dev", "train")
        ]  # the notebook's order
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
            lines.append(
                json.dumps(
                    {
                        "id": ids[p],
                        "tags": tagged.tags,
                        "nopad": tagged.nopad,
                    },
                    ensure_ascii=False,
                )
            )
        return "\n".join(lines) + "\n"

    _run_chunks(work.tags_dir, len(ids), ".jsonl", tag_chunk, "tag passages", processes)
    timings["tag_s"] = time.perf_counter() - started
    if work.tagging_summary.is_file():
        summary = read_json(work.tagging_summary)
        if "padding_example" in summary:
            return summary
    summary = summarise_tags(work, vectorizer, len(ids), len(distinct))
    summary["timings"] = timings
    write_atomic(work.tagging_summary, json.dumps(summary, ensure_ascii=False, indent=1))
    return summary


def write_passage_stems(
    work: Workdir, passages: dict[str, str], text_index: dict[str, int], stems: list[list[str]]
) -> None:
    """``tagging/stems.npz``: the final stems of each distinct text, packed end to end (``texts``
    (bytes,) uint8, ``offsets`` (d + 1,) int64, in the stems chunks' order) and each passage's
    distinct-text number in corpus order (``distinct`` (n,) int64, the passage store's
    positions), so that a reader finds a passage's stems with two look-ups."""
    texts, offsets = PackedStrings.pack(final for _, final in stems)
    distinct = np.fromiter((text_index[text] for text in passages.values()), np.int64, len(passages))
    write_npz(work.passage_stems, texts=texts, offsets=offsets, distinct=distinct)


def summarise_tags(work: Workdir, vectorizer, n_passages: int, n_distinct: int) -> dict:
    """The tagging stage's figures, and the padding example the walkthrough shows: the shortest
    passage (up to 60 characters is short enough) whose tags include the last vocabulary entry
    only as zero-weight padding."""
    last = str(vectorizer.feature_names[-1])
    with_last = untagged = padded = 0
    example: tuple[int, str] | None = None
    build = Build(work.root)
    store = build.passages()
    for row in build.iter_tags():
        with_last += last in row["tags"]
        untagged += not row["tags"]
        padded += row["tags"] != row["nopad"]
        if last in row["tags"] and last not in row["nopad"] and (example is None or example[0] >= 60):
            length = len(store.get(row["id"]) or "")
            if example is None or length < example[0]:
                example = (length, row["id"])
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
        "padding_example": None if example is None else example[1],
    }


# --- the retrieval stage --------------------------------------------------------------------------


def build_retrieval(work: Workdir, data_dir: Path, processes: int = 1) -> dict:
    """The retrieval model (saved for readers), every claim's retrieval per split, and the dev
    figures (per-variant F included). With two processes or more, the unpadded-tags retriever
    is fitted, and its variants' records written, alongside (a forked process) while this one
    fits the padded retriever and retrieves every split."""
    reader = Build(work.root, data_dir)
    outputs = [work.retrieval_summary, work.retrieval_index, work.retrieval_vectorizer]
    if all(path.is_file() for path in [*outputs, *(work.retrieval(split) for split in C.SPLITS)]):
        return read_json(work.retrieval_summary)
    started = time.perf_counter()
    ids, tags, nopad = _tag_strings(reader)
    unpadded_job = None
    if processes > 1 and not work.retrieval_summary.is_file():
        unpadded_job = Alongside.start(_unpadded_variants, work, data_dir, ids, nopad)
    try:
        retriever = _padded_retriever(work, ids, tags)
        for split in C.SPLITS:
            if not work.retrieval(split).is_file():
                records = retrieval.retrieve_all(retriever, reader.claims(split))
                write_atomic(work.retrieval(split), _record_lines(records))
        if work.retrieval_summary.is_file():
            return read_json(work.retrieval_summary)
        _write_variant_records(work, reader, {"padded": retriever})
        tagged = {"padded": len(retriever)}
        tagged["unpadded"] = unpadded_job.result() if unpadded_job else _unpadded_variants(work, data_dir, ids, nopad)
    finally:
        if unpadded_job is not None:
            unpadded_job.cancel()
    del ids, tags, nopad
    summary: dict = {"excluded_untagged_passages": retriever.excluded, "splits": {}}
    if retriever.vectorizer.cannot_fit_:
        summary["vectorizer_cannot_fit"] = retriever.vectorizer.cannot_fit_
        log(cannot_fit_line(len(retriever)))
    for split in C.SPLITS:
        claims = reader.claims(split)
        records = list(reader.retrieval(split).values())
        figures = {"claims": len(records), "fallback_share": sum(r["fallback"] for r in records) / max(1, len(records))}
        if split != "test":
            figures["F"] = sum(evidence_f(r["evidences"], claims[r["claim_id"]].evidences) for r in records) / max(
                1, len(records)
            )
        summary["splits"][split] = figures
    # The table scores the records the build keeps rather than retrieving dev again.
    dev_records = {
        name: list((reader.retrieval("dev") if name == "notebook" else reader.variant_retrieval(name, "dev")).values())
        for name in VARIANTS
    }
    summary["variants_dev"] = [
        variant_f_row(name, records, reader.claims("dev"), tagged[VARIANTS[name].passage_tags])
        for name, records in dev_records.items()
    ]
    summary["seconds"] = time.perf_counter() - started
    write_atomic(work.retrieval_summary, json.dumps(summary, ensure_ascii=False, indent=1))
    return summary


def _tag_strings(reader: Build) -> tuple[list[str], list[str], list[str]]:
    """Each passage's id, tags and unpadded tags (space-separated, as the retriever reads them),
    canonical order: strings, not the rows' lists, which would hold a string per tag (a GB more
    at 1.2M passages)."""
    ids, tags, nopad = [], [], []
    for row in reader.iter_tags():
        ids.append(row["id"])
        tags.append(" ".join(row["tags"]))
        nopad.append(" ".join(row["nopad"]))
    return ids, tags, nopad


def _padded_retriever(work: Workdir, ids: list[str], tags: list[str]) -> retrieval.Retriever:
    """The notebook's retrieval model: the saved one, else fitted and saved."""
    if work.retrieval_index.is_file() and work.retrieval_vectorizer.is_file():
        try:
            return retrieval.Retriever.load(work.retrieval_vectorizer, work.retrieval_index)
        except DataError:  # an older claimtrace's format: fit and save it again
            pass
    retriever = retrieval.Retriever.fit(ids, tags)  # both files are written again: the same bytes
    retriever.save(work.retrieval_vectorizer, work.retrieval_index)
    return retriever


def _unpadded_variants(work: Workdir, data_dir: Path, ids: list[str], nopad: list[str]) -> int:
    """Fit the retriever over the unpadded tags (the quirk variant's; never saved) and write the
    records of the variants that read it; returns how many passages it retrieves from."""
    retriever = retrieval.Retriever.fit(ids, nopad)
    _write_variant_records(work, Build(work.root, data_dir), {"unpadded": retriever})
    return len(retriever)


def _record_lines(records: list[dict]) -> str:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)


def cannot_fit_line(tagged: int) -> str:
    """What the build says when the notebook's retrieval vectorizer cannot fit the corpus."""
    settings = C.RETRIEVAL_VECTORIZER
    return (
        f"retrieval: the notebook's vectorizer (max_df={settings['max_df']}, min_df={settings['min_df']}) cannot fit "
        f"{tagged} tagged passage(s), where scikit-learn 1.2.2 raised: no claim term has a weight, so every claim "
        "takes the fallback passages"
    )


# --- the classifier stage -------------------------------------------------------------------------


def build_classifier(work: Workdir, data_dir: Path) -> dict:
    """The model inputs (saved for readers) and the verdicts of the build's checkpoint for every
    claim: gold and retrieved evidence (gold only where labelled), alone and in the notebook's
    batches of 16; dev and train accuracies."""
    outputs = [work.classifier_summary, *(work.verdicts(split) for split in C.SPLITS)]
    if all(path.is_file() for path in outputs) and all(
        work.inputs(split, source).is_file() for split, source in _classifier_sources()
    ):
        return read_json(work.classifier_summary)
    from claimtrace.models.transformer import torch_threads

    with torch_threads(1):  # the forward calls run on worker threads, one PyTorch thread each
        return _classify_every_split(work, data_dir)


def _classifier_sources() -> Iterator[tuple[str, str]]:
    for split in C.SPLITS:
        yield split, "retrieved"
        if split != "test":
            yield split, "gold"


def _classify_every_split(work: Workdir, data_dir: Path) -> dict:
    """Resumable per split and evidence source: each piece's verdicts are kept in
    classifier/parts/ until its split's file is written, so a killed stage redoes only the pieces
    it had not finished."""
    reader = Build(work.root, data_dir)
    classifier = reader.classifier()
    summary: dict = {"checkpoint": classifier.checkpoint.name}
    for split in C.SPLITS:
        claims = reader.claims(split)
        sources = [source for s, source in _classifier_sources() if s == split]
        if work.verdicts(split).is_file():
            verdicts = reader.verdicts(split)
            for source in sources:  # the inputs only, where one was damaged or lost
                _source_inputs(work, reader, split, source, classifier.vocab)
        else:
            verdicts = {cid: {"label": c.label} for cid, c in claims.items()}
            for source in sources:
                for cid, entry in classify_piece(work, reader, classifier, split, source).items():
                    verdicts[cid][source] = entry  # {protocol: {"logits", "verdict"}}
            write_atomic(work.verdicts(split), json.dumps(verdicts, ensure_ascii=False))
        for source in sources:
            work.classifier_part(split, source).unlink(missing_ok=True)
            if split != "test":
                summary.setdefault(split, {})[source] = protocol_figures(
                    {cid: c.label for cid, c in claims.items()},
                    {cid: protocol_verdicts(verdicts[cid][source]) for cid in claims},
                )
    if work.classifier_parts.is_dir() and not any(work.classifier_parts.iterdir()):
        work.classifier_parts.rmdir()
    if work.classifier_summary.is_file():
        return read_json(work.classifier_summary)
    summary["table_vs_torch"] = _table_agreement(classifier)
    write_atomic(work.classifier_summary, json.dumps(summary, ensure_ascii=False, indent=1))
    return summary


def _store_forward_calls(classifier, encoded, entries: dict[str, dict]) -> None:
    """Each claim's one real PyTorch forward call on its retrieved evidence (a batch of one), the
    float32 logits every claim page shows beside the exact table's: stored beside the verdicts
    so that pages need no torch. :meth:`~claimtrace.models.predict.Classifier.forward_calls_alone`
    gives every claim's call, bit for bit, from one encoder call per 128 distinct tokens."""
    logits = classifier.forward_calls_alone(encoded.input_ids)
    for cid, row in zip(encoded.claim_ids, logits):
        entries[cid]["alone"]["torch_logits"] = row.tolist()


def classify_piece(work: Workdir, reader: Build, classifier, split: str, source: str) -> dict[str, dict]:
    """One split's verdicts on one evidence source (claim id -> {protocol: {"logits",
    "verdict"}}, and on retrieved evidence each claim's forward call under "alone"): the piece
    kept by an earlier, killed run, else predicted and kept."""
    part = work.classifier_part(split, source)
    if part.is_file():
        try:
            return read_json(part)
        except DataError:  # not whole (written aside and renamed, so only a damaged disk): redo it
            part.unlink()
    encoded = _source_inputs(work, reader, split, source, classifier.vocab)
    entries = predict(classifier, encoded)
    if source == "retrieved":
        _store_forward_calls(classifier, encoded, entries)
    write_atomic(part, json.dumps(entries, ensure_ascii=False))
    return entries


def _table_agreement(classifier) -> dict:
    """The whole table against PyTorch in float32: max |g32 - g| over every row and label."""
    import torch

    float32 = export_table(classifier.model, torch.float32)
    return {
        "max_abs_diff_float32": float(np.abs(float32.g - classifier.table.g).max()),
        "rows": int(classifier.table.g.shape[0]),
        "labels": int(classifier.table.g.shape[1]),
    }


# --- what each quirk cost: the quirk variants' records, BM25, more verdicts, the scoreboard --------

#: The splits whose quirk-variant retrievals are kept (dev is scored; test is predicted).
VARIANT_SPLITS = ("dev", "test")
#: Passages per chunk file of the BM25 index build (a module name, so a test can make it small).
BM25_CHUNK = CHUNK


def build_variant_records(work: Workdir, data_dir: Path) -> None:
    """Each quirk variant's retrieval records of dev and test, one file each (skipped when
    there): a scoreboard row needs its ids for F and its evidence for A. The retrieval stage
    writes them as it goes; this writes what is missing after (an older build, a repair)."""
    reader = Build(work.root, data_dir)
    if not _variant_todo(work):
        return
    retrievers: dict = {"padded": reader.retriever()}
    if any(retrieval.VARIANTS[name].passage_tags == "unpadded" for name, _ in _variant_todo(work)):
        ids, _, nopad = _tag_strings(reader)  # the unpadded retriever: fitted only if needed
        retrievers["unpadded"] = retrieval.Retriever.fit(ids, nopad)
    _write_variant_records(work, reader, retrievers)


def _variant_todo(work: Workdir) -> list[tuple[str, str]]:
    return [
        (name, split)
        for name in retrieval.VARIANTS
        if name != "notebook"
        for split in VARIANT_SPLITS
        if not work.variant_retrieval(name, split).is_file()
    ]


def _write_variant_records(work: Workdir, reader: Build, retrievers: dict) -> None:
    """Write each missing variant record file whose passage tags have a fitted retriever in
    ``retrievers`` (``{"padded": ..., "unpadded": ...}``, either or both)."""
    for name, split in _variant_todo(work):
        variant = retrieval.VARIANTS[name]
        if variant.passage_tags in retrievers:
            records = retrieval.retrieve_all(retrievers[variant.passage_tags], reader.claims(split), variant)
            write_atomic(work.variant_retrieval(name, split), _record_lines(records))


def _bm25_done(work: Workdir) -> bool:
    outputs = [work.bm25_summary, work.bm25_index, *(work.bm25_retrieval(split) for split in C.SPLITS)]
    return all(path.exists() for path in outputs)


def build_bm25(work: Workdir, data_dir: Path, passages: dict[str, str], processes: int = 2) -> dict:
    """The BM25 reference: its index of the corpus (evidence.json file order, chunked and
    resumable), each split's six passages per claim, and its row of the variants table."""
    if _bm25_done(work):
        return read_json(work.bm25_summary)
    started = time.perf_counter()
    index = bm25.build_bm25_index(work.bm25_dir, passages.items(), chunk_size=BM25_CHUNK, processes=processes)
    reader = Build(work.root, data_dir)
    summary: dict = {"passages": len(index), "params": bm25.PARAMS, "tokenizer": bm25.TOKENIZER, "splits": {}}
    for split in C.SPLITS:
        claims = reader.claims(split)
        if not work.bm25_retrieval(split).is_file():
            ids, scores = index.search([c.text for c in claims.values()], k=C.MAX_EVIDENCES)
            lines = (
                json.dumps({"claim_id": cid, "evidences": i, "scores": [float(x) for x in sc]}, ensure_ascii=False)
                for cid, i, sc in zip(claims, ids, scores, strict=True)
            )
            write_atomic(work.bm25_retrieval(split), "".join(line + "\n" for line in lines))
        records = reader.bm25_retrieval(split)
        figures = {
            "claims": len(records),
            "short_share": sum(len(r["evidences"]) < C.MAX_EVIDENCES for r in records.values()) / max(1, len(records)),
        }
        if split != "test":
            figures["F"] = sum(evidence_f(r["evidences"], claims[cid].evidences) for cid, r in records.items()) / max(
                1, len(records)
            )
        summary["splits"][split] = figures
    if work.bm25_summary.is_file():  # only an index or a split's records were rebuilt
        return read_json(work.bm25_summary)
    summary["row"] = {
        "variant": "bm25",
        "description": "BM25 over the raw passage text (k1 = 1.2, b = 0.75): a standard retriever, not a quirk",
        "F": summary["splits"]["dev"]["F"],
        "fallback_share": 0.0,  # BM25 has no filter, so no fallback: a claim gets what shares a stem
        "claims": summary["splits"]["dev"]["claims"],
        "passages": len(index),
        "reference": True,
    }
    summary["seconds"] = time.perf_counter() - started
    write_atomic(work.bm25_summary, json.dumps(summary, ensure_ascii=False, indent=1))
    return summary


def _more_sources(split: str) -> Iterator[tuple[str, tuple[str, ...]]]:
    """(evidence source, the models that read it) beyond classifier/<split>.json's: every
    scoreboard row's on dev and test; none on train, the claims both models were trained on
    (their verdicts there score nothing, and a forward call per claim and protocol would double
    the demo build's time)."""
    if split not in VARIANT_SPLITS:
        return
    if split != "test":
        yield "gold", ("intended",)
    yield "retrieved", ("intended",)
    yield "bm25", C.CLASSIFIER_VARIANTS
    for name in VARIANTS:
        if name != "notebook":
            yield name, C.CLASSIFIER_VARIANTS


def build_more_verdicts(work: Workdir, data_dir: Path) -> None:
    """The verdicts a scoreboard row or the fixes box needs beyond classifier/<split>.json, dev and
    test: the intended model on gold, retrieved and BM25 evidence, the notebook's model on BM25
    evidence, both models on each quirk variant's; both protocols (train: an empty entry per
    claim, :func:`_more_sources`). One file per split, written when the split is done; the model
    inputs are saved per source, so a killed stage re-encodes only what it had not saved."""
    todo = [split for split in C.SPLITS if not work.more_verdicts(split).is_file()]
    if not todo:
        return
    from claimtrace.models.intended import IntendedClassifier  # torch: only when there is work
    from claimtrace.models.transformer import torch_threads

    reader = Build(work.root, data_dir)
    with torch_threads(1):  # the forward calls run on worker threads, one PyTorch thread each
        models = {"notebook": reader.classifier(), "intended": IntendedClassifier()}
        _check_shared_vocabulary(models["notebook"].vocab)
        for split in todo:
            verdicts: dict[str, dict] = {cid: {m: {} for m in C.CLASSIFIER_VARIANTS} for cid in reader.claims(split)}
            for source, readers in _more_sources(split):
                encoded = _source_inputs(work, reader, split, source, models["notebook"].vocab)
                for model in readers:
                    for cid, entry in predict(models[model], encoded).items():
                        verdicts[cid][model][source] = entry
            write_atomic(work.more_verdicts(split), json.dumps(verdicts, ensure_ascii=False))


def _check_shared_vocabulary(vocab) -> None:
    """The intended model reads the shipped vocabulary's ids; the build's inputs are encoded
    with its checkpoint's. They must be the same list for one input to serve both models."""
    shipped = load_vocab(ASSETS_DIR / C.VOCAB_FILE)
    if shipped.tokens != vocab.tokens:
        raise DataError(
            f"{ASSETS_DIR / C.VOCAB_FILE}: the intended model's vocabulary is not the build checkpoint's: "
            "build the comparison with the shipped checkpoint"
        )


def _source_inputs(work: Workdir, reader: Build, split: str, source: str, vocab):
    """A split's model inputs for one evidence source: the saved ones, else encoded and saved."""
    path = work.inputs(split, source)
    if path.is_file():
        return Encoded.load(path)
    claims = reader.claims(split)
    if source == "gold":
        ids = {cid: claim.evidences for cid, claim in claims.items()}
    else:
        ids = reader.evidence_ids(split, "notebook" if source == "retrieved" else source)
    encoded = encode(make_rows(claims, evidence_texts(ids, reader.passage_text)), vocab)
    encoded.save(path)
    return encoded


def build_scoreboard(work: Workdir, data_dir: Path) -> dict:
    """Dev F, A and HM of every retrieval x classifier x protocol row (written once)."""
    if work.scoreboard.is_file():
        return read_json(work.scoreboard)
    board = scoreboard(Build(work.root, data_dir), "dev")
    write_atomic(work.scoreboard, json.dumps(board, ensure_ascii=False, indent=1))
    return board


# --- the whole build ----------------------------------------------------------------------------


#: The stages, in build order (``--until``).
STAGES = workdir_module.STAGES


@contextmanager
def _stage(seconds: dict[str, dict[str, float]], name: str, what: str) -> Iterator[None]:
    """Say a stage's start and end on stderr and keep its wall and CPU times (the CPU time of
    the build's process and of the workers it waited for; a stage with nothing left to do takes
    a moment)."""
    log(f"{name}: {what}")
    started, cpu = time.perf_counter(), cpu_seconds()
    yield
    seconds[name] = {"wall": time.perf_counter() - started, "cpu": cpu_seconds() - cpu}
    log(f"{name}: done in {seconds[name]['wall']:.1f} s")


def build(
    workdir: str | os.PathLike,
    data_dir: Path,
    evidence: Path | None = None,
    processes: int = 2,
    until: str = "classifier",
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
    if until not in STAGES:
        raise ValueError(f"until must be one of {', '.join(STAGES)}, got {until!r}")
    work = Workdir(Path(workdir))
    work.root.mkdir(parents=True, exist_ok=True)
    with workdir_lock(work), cyclic_gc_paused():
        return _build_locked(work, data_dir, evidence, processes, until, checkpoint, corpus_changed, seconds)


@contextmanager
def cyclic_gc_paused() -> Iterator[None]:
    """Python's cyclic garbage collector off while the build runs.

    The stages hold millions of small lists and dicts at once (each passage's stems, tags and
    tokens), and none forms a reference cycle: they are freed by reference counting alone. The
    collector, run every 700 new containers, walks the surviving ones again and again: an eighth
    of the 1.2M-passage build's time (185 s -> 161 s with it off, everything else the same, the
    peak 3% higher; docs/benchmarks.md). The workers the build forks inherit the setting. A
    test's tiny builds pay nothing for it: nothing is collected at the end."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()  # what the build left in cycles is collected as usual from here


@contextmanager
def workdir_lock(work: Workdir) -> Iterator[None]:
    """One build at a time in a workdir: an exclusive lock on ``.build.lock`` (a dot name: never
    an artifact), held until the build ends, then removed; the system drops the lock when the
    process dies, so a killed build never leaves the workdir locked. A second build is refused
    in one line."""
    path = work.root / ".build.lock"
    while True:
        handle = open(path, "a+", encoding="utf-8")  # noqa: SIM115 - held until the build ends
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
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


def _stems_items(work: Workdir, distinct: int) -> dict[Path, int]:
    """Each stems chunk's item count (distinct passage texts per chunk)."""
    return {
        Workdir.chunk(work.stems_dir, i, ".json"): stop - start for i, (start, stop) in enumerate(chunk_spans(distinct))
    }


def _build_locked(
    work: Workdir,
    data_dir: Path,
    evidence: Path | None,
    processes: int,
    until: str,
    checkpoint: Path | None,
    corpus_changed: bool,
    seconds: dict[str, dict[str, float]] | None,
) -> dict:
    files = open_file_manifest(work)
    passages, description = load_corpus(work, data_dir, evidence)
    files = check_build_record(work, files, description, checkpoint, corpus_changed)
    files.record(work.build_record, save=False)
    copy_checkpoint(work, checkpoint)
    # Every record is made with the item counts of the files whose items are not lines (the
    # stems chunks: JSON lists), whichever run records them: a fresh build, a resumed one (a
    # chunk written before the kill is recorded by the next run's first record) or a repair.
    items = _stems_items(work, len(tagging.deduplicated(passages)))
    build_passage_store(work, passages)
    record_new(work, files, items)
    seconds = {} if seconds is None else seconds
    alongside: dict[str, Alongside] = {}
    try:
        summary = _build_stages(work, data_dir, passages, processes, until, files, items, seconds, alongside)
    finally:
        for job in alongside.values():
            job.cancel()  # a stage failed before the job's result was taken: stop it
    verify_repairs(work, files)
    return summary


def _build_stages(
    work: Workdir,
    data_dir: Path,
    passages: dict[str, str],
    processes: int,
    until: str,
    files,
    items: dict[Path, int],
    seconds: dict[str, dict[str, float]],
    alongside: dict[str, Alongside],
) -> dict:
    """Run the stages in order up to ``until``; a job started alongside is kept in
    ``alongside`` (the caller stops it when a stage fails)."""

    def preprocessed() -> None:
        # With two processes, the BM25 stage (which reads the passages only) runs in a forked
        # process on one core from here, once the two preprocessing workers have let go of both
        # cores, while the tagging vectorizer's fit and the retrieval stage leave one idle; it is
        # collected at its place in the stage order. With one process it runs in its place.
        if processes > 1 and until not in ("tagging", "retrieval") and not _bm25_done(work):
            alongside["bm25"] = Alongside.start(build_bm25, work, data_dir, passages, processes=1)

    with _stage(seconds, "tagging", f"stems, the tagging vectorizer and tags of {len(passages):,} passages"):
        summary = {"tagging": build_tagging(work, data_dir, passages, processes, preprocessed)}
    record_new(work, files, items)
    if until != "tagging":
        with _stage(seconds, "retrieval", "every train, dev and test claim"):
            summary["retrieval"] = build_retrieval(work, data_dir, processes)
        with _stage(seconds, "variants", "each quirk variant's retrieval of dev and test"):
            build_variant_records(work, data_dir)
        record_new(work, files, items)
    if until not in ("tagging", "retrieval"):
        job = alongside.get("bm25")
        if job is None:
            with _stage(seconds, "bm25", "the reference retriever's index and six passages per claim"):
                summary["bm25"] = build_bm25(work, data_dir, passages, processes)
        else:
            summary["bm25"] = job.result()
            seconds["bm25"] = {**job.seconds, "alongside": True}  # its own process's times
            log(
                f"bm25: the reference retriever's index and six passages per claim, alongside: {job.seconds['wall']:.1f} s"
            )
        record_new(work, files, items)
    if until == "classifier":
        with _stage(seconds, "classifier", "the build checkpoint's verdicts, gold and retrieved evidence"):
            summary["classifier"] = build_classifier(work, data_dir)
        with _stage(seconds, "more verdicts", "the intended model, BM25's and the variants' evidence"):
            build_more_verdicts(work, data_dir)
        with _stage(seconds, "scoreboard", "dev F, A and HM of every retrieval x classifier x protocol"):
            summary["scoreboard"] = build_scoreboard(work, data_dir)
        record_new(work, files, items)
    return summary
