"""The tagging stage: both preprocessing variants of each distinct passage text, the tagging
vectorizer's fit, what each token of the passages' stems and of the tags becomes when preprocessed
again, each passage's tags, and the stage's figures; every step resumable."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

import numpy as np
from tqdm import tqdm

from claimtrace import course
from claimtrace.constants import TAGS_PER_PASSAGE
from claimtrace.data import files as data_layer
from claimtrace.lib import chunks
from claimtrace.lib.build_files import PackedStrings, read_json, write_atomic, write_npz
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


def _passage_stems(
    work: Workdir,
    passages: dict[str, str],
    distinct: list[str],
    text_index: dict[str, int],
    preprocessor: Preprocessor,
    processes: int,
) -> list[list[str]]:
    """(older, final) stems of each distinct text, made chunk by chunk (the chunks kept), and
    ``tagging/stems.npz`` written from them."""
    _run_chunks(
        work.stems_dir,
        len(distinct),
        ".json",
        lambda a, b: json.dumps(_stems_chunk(preprocessor, distinct[a:b], processes), ensure_ascii=False),
        "preprocess passages",
    )
    stems: list[list[str]] = []
    for chunk in _read_chunks(work.stems_dir, len(distinct), ".json"):
        stems.extend(json.loads(chunk))
    if not work.passage_stems.is_file():
        write_passage_stems(work, passages, text_index, stems)
    return stems


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


# --- the vectorizer and the tags ------------------------------------------------------------------


def _tagging_vectorizer(reader: BuildReader, passages: dict[str, str], stems: list[list[str]], restemmer: Restemmer):
    """The saved tagging vectorizer, else fitted on the claims and the passages' older stems
    and saved; its tokenizer is ``restemmer``'s."""
    work = reader.work
    if work.vectorizer.is_file():
        return tfidf.load(work.vectorizer, restemmer.restem)
    claim_files = [
        data_layer.load_claims(s, reader.data_dir) for s in ("baseline", "dev", "train")
    ]  # the notebook's order
    claim_docs = list(tagging.fit_corpus_claim_rows(claim_files, passages, reader.preprocessor))
    docs = claim_docs + [older for older, _ in stems]
    vectorizer = tagging.tagging_vectorizer(restemmer.restem)
    vectorizer.fit(tqdm(docs, desc="fit tagging vectorizer", unit="doc", disable=None))
    tfidf.save(vectorizer, work.vectorizer)
    return vectorizer


def write_restemmed(work: Workdir, vectorizer, stems: list[list[str]], restemmer: Restemmer) -> None:
    """``tagging/restemmed.npz`` (:class:`~claimtrace.pipeline.tagging.RestemTable`): what every
    distinct token of the passages' final stems (what a trace's tagging vectorizer reads) and
    of the tagging vectorizer's alphabetic features (every tag a passage can have, which the
    retrieval vectorizer reads) becomes when preprocessed again, so that a reader looks them up
    instead. Written once (a build without it gets it on its next run)."""
    if work.restemmed.is_file():
        return
    tokens = {token for _, final in stems for token in final.split()}
    tokens.update(name for name in vectorizer.feature_names.tolist() if name.isalpha())
    RestemTable.of_tokens(tokens, restemmer.terms).save(work.restemmed)


def _write_tags(
    work: Workdir,
    vectorizer,
    passages: dict[str, str],
    text_index: dict[str, int],
    stems: list[list[str]],
    processes: int,
) -> None:
    """Each passage's tags and unpadded tags, one JSON line each, chunk by chunk in the
    canonical order; a duplicate text is transformed from its first copy's stems."""
    ids = list(passages)
    order = tagging.canonical_order(len(ids))

    def tag_chunk(a: int, b: int) -> str:
        positions = order[a:b]
        rows_of = [text_index[passages[ids[p]]] for p in positions]
        rows = vectorizer.transform(stems[r][1] for r in rows_of)
        lines = [
            json.dumps({"id": ids[p], "tags": tagged.tags, "nopad": tagged.nopad}, ensure_ascii=False)
            for p, tagged in zip(positions, tagging.tag_rows(rows, vectorizer.feature_names))
        ]
        return "\n".join(lines) + "\n"

    _run_chunks(work.tags_dir, len(ids), ".jsonl", tag_chunk, "tag passages", processes)


def build_tagging(
    reader: BuildReader,
    passages: dict[str, str],
    processes: int = 2,
    preprocessed: Callable[[], None] | None = None,
) -> dict:
    """Stems, vectorizer fit and passage tags, each resumable; returns the stage's summary.
    ``preprocessed``: called once every passage's stems are made (the build starts BM25
    alongside then)."""
    work = reader.work
    timings: dict[str, float] = {}
    distinct = list(tagging.deduplicated(passages).values())
    text_index = {text: i for i, text in enumerate(distinct)}

    started = time.perf_counter()
    stems = _passage_stems(work, passages, distinct, text_index, reader.preprocessor, processes)
    timings["preprocess_s"] = time.perf_counter() - started
    if preprocessed is not None:
        preprocessed()

    started = time.perf_counter()
    restemmer = Restemmer(reader.preprocessor)  # learns each token of the fit corpus once
    vectorizer = _tagging_vectorizer(reader, passages, stems, restemmer)
    timings["fit_s"] = time.perf_counter() - started
    write_restemmed(work, vectorizer, stems, restemmer)

    started = time.perf_counter()
    _write_tags(work, vectorizer, passages, text_index, stems, processes)
    timings["tag_s"] = time.perf_counter() - started
    if work.tagging_summary.is_file():
        summary = read_json(work.tagging_summary)
        if "padding_example" in summary and "length_buckets" in summary:
            return summary
    summary = summarise_tags(reader, vectorizer, len(passages), len(distinct))
    summary.update(corpus_figures(passages, reader.iter_tags()))
    summary["timings"] = timings
    write_atomic(work.tagging_summary, json.dumps(summary, ensure_ascii=False, indent=1))
    return summary


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
    lengths = dict.fromkeys(course.TABLE1, 0)
    for text in passages.values():
        lengths[course.length_bucket(len(text.split()))] += 1
    per_passage = dict.fromkeys(map(str, range(TAGS_PER_PASSAGE + 1)), 0)
    for row in tag_rows:
        per_passage[str(len(set(row["tags"])))] += 1
    return {"length_buckets": lengths, "tags_per_passage": per_passage}
