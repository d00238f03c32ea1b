"""The tagging stage: both preprocessing variants of each distinct passage text, the tagging
vectorizer's fit, what each token of the passages' stems and of the tags becomes when preprocessed
again, each passage's tags, and the stage's figures; every step resumable."""

from __future__ import annotations

import itertools
import json
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import numpy as np
from tqdm import tqdm

from claimtrace import course
from claimtrace.constants import TAGS_PER_PASSAGE
from claimtrace.data import files as data_layer
from claimtrace.lib import chunks
from claimtrace.lib.build_files import PackedStrings, load_npz, read_json, write_atomic, write_npz
from claimtrace.lib.forked_job import ForkedJob
from claimtrace.pipeline import tagging, tfidf
from claimtrace.pipeline.preprocess import Preprocessor
from claimtrace.pipeline.tagging import Restemmer, RestemTable
from claimtrace.workdir.layout import Workdir, chunk_spans
from claimtrace.workdir.reader import BuildReader

# --- chunked, resumable steps -------------------------------------------------------------------


def _run_chunks(
    folder: Path, n_items: int, suffix: str, make: Callable[[int, int], str], label: str, processes: int = 1
) -> None:
    """Write one text file per chunk of ``workdir.CHUNK`` items with ``make(start, stop)``;
    skip existing (:func:`claimtrace.lib.chunks.run_chunks`, the runner BM25's chunks share)."""
    chunks.run_chunks(folder, chunk_spans(n_items), suffix, make, _write_text, processes=processes, label=label)


def _write_text(path: Path, text: str) -> None:
    write_atomic(path, text)  # looked up at each call (a test stands in a dying writer)


def _read_chunks(folder: Path, n_items: int, suffix: str) -> Iterator[str]:
    for index in range(len(chunk_spans(n_items))):
        yield Workdir.chunk(folder, index, suffix).read_text(encoding="utf-8")


def stems_items(work: Workdir, distinct: int) -> dict[Path, int]:
    """Each stems chunk's item count (distinct passage texts per chunk): its items are a JSON
    list's, not lines, so the manifest is told them."""
    return {
        Workdir.chunk(work.stems_dir, i, ".json"): stop - start for i, (start, stop) in enumerate(chunk_spans(distinct))
    }


# --- the stems ----------------------------------------------------------------------------------


def _stems_of(preprocessor: Preprocessor, texts: list[str]) -> list[tuple[str, str]]:
    """(older, final) stems of each text, joined."""
    both = (preprocessor.preprocess_both(text) for text in texts)
    return [(older.text(), final.text()) for older, final in both]


def _stems_chunk(preprocessor: Preprocessor, texts: list[str], processes: int) -> list[tuple[str, str]]:
    """:func:`_stems_of` of a chunk's texts, cut in ``processes`` consecutive parts made at once:
    the first here, the others in forked processes (which inherit the preprocessor and its stem
    cache, and send back only their stems)."""
    if processes <= 1 or len(texts) < 2_000:
        return _stems_of(preprocessor, texts)
    parts = chunks.spans(len(texts), -(-len(texts) // processes))
    jobs = [ForkedJob.start(_stems_of, preprocessor, texts[a:b]) for a, b in parts[1:]]
    try:
        made = _stems_of(preprocessor, texts[slice(*parts[0])])
        for job in jobs:
            made.extend(job.result())
    finally:
        for job in jobs:
            job.cancel()  # a part that failed: the others stop (a collected one is left as it is)
    return made


class _StemsRead(NamedTuple):
    """What the stems chunks are read for: each distinct text's keep-stopwords stems (the fit's
    documents), its final stems packed (``tagging/stems.npz``'s ``texts`` and ``offsets``) and
    every token of the final stems; each None when nothing needs it."""

    older: PackedStrings | None
    final: tuple[np.ndarray, np.ndarray] | None
    final_tokens: set[str] | None


def _joined(parts: list[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    """Packed parts (:meth:`PackedStrings.pack`'s) laid end to end: what packing all their
    strings at once gives, byte for byte."""
    buffer = np.concatenate([b for b, _ in parts]) if parts else np.empty(0, np.uint8)
    offsets = np.zeros(1 + sum(len(o) - 1 for _, o in parts), np.int64)
    if parts:
        np.cumsum(np.concatenate([np.diff(o) for _, o in parts]), out=offsets[1:])
    return buffer, offsets


def _read_stems(work: Workdir, n_distinct: int, older: bool, final: bool, tokens: bool) -> _StemsRead:
    """The stems chunks, read one at a time into packed buffers: every passage's stems as Python
    strings at once (a list of pairs) were 360 MB more at 1.2M passages, held through the fit,
    and shared with BM25's process alongside (docs/benchmarks.md)."""
    packed: dict[str, list] = {"older": [], "final": []}
    found: set[str] | None = set() if tokens else None
    if older or final or tokens:
        for chunk in _read_chunks(work.stems_dir, n_distinct, ".json"):
            pairs = json.loads(chunk)
            if older:
                packed["older"].append(PackedStrings.pack(o for o, _ in pairs))
            if final:
                packed["final"].append(PackedStrings.pack(f for _, f in pairs))
            if found is not None:
                for _, f in pairs:
                    found.update(f.split())
    older_strings = None
    if older:
        buffer, offsets = _joined(packed.pop("older"))
        older_strings = PackedStrings(memoryview(buffer), offsets)  # a view: PackedStrings would copy an ndarray
    return _StemsRead(older_strings, _joined(packed["final"]) if final else None, found)


def write_passage_stems(
    work: Workdir, passages: dict[str, str], text_index: dict[str, int], final: tuple[np.ndarray, np.ndarray]
) -> None:
    """``tagging/stems.npz``: the final stems of each distinct text, packed end to end (``texts``
    (bytes,) uint8, ``offsets`` (d + 1,) int64, in the stems chunks' order: ``final``) and each
    passage's distinct-text number in corpus order (``distinct`` (n,) int64, the passage store's
    positions), so that a reader finds a passage's stems with two look-ups."""
    texts, offsets = final
    distinct = np.fromiter((text_index[text] for text in passages.values()), np.int64, len(passages))
    write_npz(work.passage_stems, texts=texts, offsets=offsets, distinct=distinct)


# --- the corpus read once, then let go ------------------------------------------------------------


@dataclass
class TaggingInputs:
    """What the tagging stage needs of the corpus after its stems (:func:`prepare_tagging`), so
    that the build can let go of the corpus before the vectorizer's fit (:func:`finish_tagging`).

    n_passages, n_distinct: the corpus's passages and distinct texts. ids: the passage ids in
    file order, packed. older: each distinct text's keep-stopwords stems, packed, and
    claim_docs: the fit corpus's claim rows (both None when the vectorizer is saved).
    final_tokens: every token of the final stems (None when ``restemmed.npz`` is written).
    length_buckets: the corpus's passage lengths (None when the summary is whole). timings: the
    stage's parts so far.
    """

    n_passages: int
    n_distinct: int
    ids: PackedStrings
    older: PackedStrings | None
    claim_docs: list[str] | None
    final_tokens: set[str] | None
    length_buckets: dict[str, int] | None
    timings: dict[str, float]


def prepare_tagging(
    reader: BuildReader,
    passages: dict[str, str],
    processes: int = 2,
    preprocessed: Callable[[], None] | None = None,
) -> TaggingInputs:
    """The stems (chunk by chunk, resumable) and ``tagging/stems.npz``, and what the rest of the
    stage reads of the corpus (:class:`TaggingInputs`). ``preprocessed``: called once every
    passage's stems are made (the build starts BM25 alongside then)."""
    work = reader.work
    started = time.perf_counter()
    distinct = list(tagging.deduplicated(passages).values())
    text_index = {text: i for i, text in enumerate(distinct)}
    preprocessor = reader.preprocessor
    _run_chunks(
        work.stems_dir,
        len(distinct),
        ".json",
        lambda a, b: json.dumps(_stems_chunk(preprocessor, distinct[a:b], processes), ensure_ascii=False),
        "preprocess passages",
    )
    fit = not work.vectorizer.is_file()
    stems = _read_stems(
        work, len(distinct), older=fit, final=not work.passage_stems.is_file(), tokens=not work.restemmed.is_file()
    )
    if stems.final is not None:
        write_passage_stems(work, passages, text_index, stems.final)
    timings = {"preprocess_s": time.perf_counter() - started}
    if preprocessed is not None:
        preprocessed()
    claim_docs = None
    if fit:  # the notebook's order of claim files
        claim_files = [data_layer.load_claims(s, reader.data_dir) for s in ("baseline", "dev", "train")]
        claim_docs = list(tagging.fit_corpus_claim_rows(claim_files, passages, preprocessor))
    return TaggingInputs(
        n_passages=len(passages),
        n_distinct=len(distinct),
        ids=PackedStrings(*_viewed(PackedStrings.pack(passages))),
        older=stems.older,
        claim_docs=claim_docs,
        final_tokens=stems.final_tokens,
        length_buckets=None if _summary_whole(work) else length_buckets(passages.values()),
        timings=timings,
    )


def _viewed(packed: tuple[np.ndarray, np.ndarray]) -> tuple[memoryview, np.ndarray]:
    return memoryview(packed[0]), packed[1]  # a view: PackedStrings would copy an ndarray's bytes


def _summary_whole(work: Workdir) -> bool:
    """The stage's summary is written with every figure (a rerun reads it back)."""
    if not work.tagging_summary.is_file():
        return False
    summary = read_json(work.tagging_summary)
    return "padding_example" in summary and "length_buckets" in summary


# --- the vectorizer and the tags ------------------------------------------------------------------


def _tagging_vectorizer(reader: BuildReader, inputs: TaggingInputs, restemmer: Restemmer):
    """The saved tagging vectorizer, else fitted on the claims and the passages' older stems
    and saved; its tokenizer is ``restemmer``'s."""
    work = reader.work
    if work.vectorizer.is_file():
        return tfidf.load(work.vectorizer, restemmer.restem)
    if inputs.claim_docs is None or inputs.older is None:
        raise RuntimeError(f"{work.vectorizer}: appeared after the stems were read, without its fit corpus")
    docs = itertools.chain(inputs.claim_docs, inputs.older)
    total = len(inputs.claim_docs) + len(inputs.older)
    vectorizer = tagging.tagging_vectorizer(restemmer.restem)
    vectorizer.fit(tqdm(docs, desc="fit tagging vectorizer", unit="doc", total=total, disable=None))
    tfidf.save(vectorizer, work.vectorizer)
    return vectorizer


def write_restemmed(work: Workdir, vectorizer, final_tokens: set[str] | None, restemmer: Restemmer) -> None:
    """``tagging/restemmed.npz`` (:class:`~claimtrace.pipeline.tagging.RestemTable`): what every
    distinct token of the passages' final stems (what a trace's tagging vectorizer reads,
    ``final_tokens``) and of the tagging vectorizer's alphabetic features (every tag a passage
    can have, which the retrieval vectorizer reads) becomes when preprocessed again, so that a
    reader looks them up instead. Written once (a build without it gets it on its next run)."""
    if work.restemmed.is_file():
        return
    if final_tokens is None:
        raise RuntimeError(f"{work.restemmed}: removed after the stems were read")
    tokens = set(final_tokens)
    tokens.update(name for name in vectorizer.feature_names.tolist() if name.isalpha())
    RestemTable.of_tokens(tokens, restemmer.terms).save(work.restemmed)


def _write_tags(work: Workdir, vectorizer, ids: PackedStrings, processes: int) -> None:
    """Each passage's tags and unpadded tags, one JSON line each, chunk by chunk in the
    canonical order; a duplicate text is transformed from its first copy's stems.

    The chunks read the final stems from ``tagging/stems.npz`` (mapped) and the ids from one
    packed buffer, never the corpus's Python objects: a forked worker that reads an object
    writes its reference count, and so copies the page it is on; reading the corpus's strings
    and lists made the two workers copy most of it (docs/benchmarks.md)."""
    order = tagging.canonical_order(len(ids))
    with load_npz(work.passage_stems) as stored:
        stems = PackedStrings(memoryview(stored["texts"]), stored["offsets"])
        distinct = stored["distinct"]

    def tag_chunk(a: int, b: int) -> str:
        positions = order[a:b]
        rows = vectorizer.transform(stems[r] for r in distinct[positions].tolist())
        lines = [
            json.dumps({"id": ids[p], "tags": tagged.tags, "nopad": tagged.nopad}, ensure_ascii=False)
            for p, tagged in zip(positions.tolist(), tagging.tag_rows(rows, vectorizer.feature_names))
        ]
        return "\n".join(lines) + "\n"

    _run_chunks(work.tags_dir, len(ids), ".jsonl", tag_chunk, "tag passages", processes)


def finish_tagging(reader: BuildReader, inputs: TaggingInputs, processes: int = 2) -> dict:
    """The vectorizer's fit, the restemmed tokens and the passages' tags, each resumable, from
    :func:`prepare_tagging`'s inputs (not the corpus); returns the stage's summary."""
    work = reader.work
    timings = dict(inputs.timings)
    started = time.perf_counter()
    restemmer = Restemmer(reader.preprocessor)  # learns each token of the fit corpus once
    vectorizer = _tagging_vectorizer(reader, inputs, restemmer)
    timings["fit_s"] = time.perf_counter() - started
    write_restemmed(work, vectorizer, inputs.final_tokens, restemmer)

    started = time.perf_counter()
    _write_tags(work, vectorizer, inputs.ids, processes)
    timings["tag_s"] = time.perf_counter() - started
    if _summary_whole(work) or inputs.length_buckets is None:
        return read_json(work.tagging_summary)
    summary = summarise_tags(reader, vectorizer, inputs.n_passages, inputs.n_distinct)
    summary["length_buckets"] = inputs.length_buckets
    summary["tags_per_passage"] = tags_per_passage(reader.iter_tags())
    summary["timings"] = timings
    write_atomic(work.tagging_summary, json.dumps(summary, ensure_ascii=False, indent=1))
    return summary


def build_tagging(
    reader: BuildReader,
    passages: dict[str, str],
    processes: int = 2,
    preprocessed: Callable[[], None] | None = None,
) -> dict:
    """Stems, vectorizer fit and passage tags, each resumable; returns the stage's summary
    (:func:`prepare_tagging` then :func:`finish_tagging`: the build calls them apart, to let go
    of the corpus between them)."""
    return finish_tagging(reader, prepare_tagging(reader, passages, processes, preprocessed), processes)


def summarise_tags(reader: BuildReader, vectorizer, n_passages: int, n_distinct: int) -> dict:
    """The tagging stage's figures, and the padding example the walkthrough shows: the shortest
    passage (up to 60 characters is short enough) whose tags include the last vocabulary entry
    only as zero-weight padding."""
    last = str(vectorizer.feature_names[-1])
    with_last = untagged = padded = 0
    example: tuple[int, str] | None = None
    store = reader.passages()
    for row in reader.iter_tags():
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


def corpus_figures(passages: dict[str, str], tag_rows: Iterable[dict]) -> dict:
    """The corpus at a glance: passage lengths in words (whitespace-separated, as the report's
    Table 1 counts them) in the report's seven buckets, and how many passages carry each number of
    distinct tags (0 to ten).

    Parameters
    ----------
    passages : dict
        passage id -> text, the build's corpus.
    tag_rows : iterable of dict
        Each passage's ``{"id", "tags", ...}`` (:meth:`BuildReader.iter_tags`).

    Returns
    -------
    dict
        ``{"length_buckets": {bucket: passages} in the report's order, "tags_per_passage":
        {str(n): passages} for n = 0..10}``.
    """
    return {"length_buckets": length_buckets(passages.values()), "tags_per_passage": tags_per_passage(tag_rows)}


def length_buckets(texts: Iterable[str]) -> dict[str, int]:
    """Passages per length bucket of the report's Table 1 (:func:`corpus_figures`)."""
    lengths = dict.fromkeys(course.TABLE1, 0)
    for text in texts:
        lengths[course.length_bucket(len(text.split()))] += 1
    return lengths


def tags_per_passage(tag_rows: Iterable[dict]) -> dict[str, int]:
    """Passages per number of distinct tags, 0 to ten (:func:`corpus_figures`)."""
    per_passage = dict.fromkeys(map(str, range(TAGS_PER_PASSAGE + 1)), 0)
    for row in tag_rows:
        per_passage[str(len(set(row["tags"])))] += 1
    return per_passage
