"""The retrieval stage: the notebook's retrieval model (saved for readers), every claim's
retrieval per split, the quirk variants' records of dev and test, and the stage's figures."""

from __future__ import annotations

import json
import time

from claimtrace.constants import RETRIEVAL_VECTORIZER, SPLITS
from claimtrace.evaluation.retrieval import variant_f_row
from claimtrace.evaluation.scoreboard import FALLBACK_SHARE, split_figures
from claimtrace.lib.build_files import read_json, write_atomic
from claimtrace.lib.forked_job import ForkedJob
from claimtrace.pipeline import retrieval
from claimtrace.pipeline.retrieval import VARIANTS
from claimtrace.workdir.integrity import log
from claimtrace.workdir.reader import BuildReader

#: The splits whose quirk-variant retrievals are kept (dev is scored; test is predicted).
VARIANT_SPLITS = ("dev", "test")


def build_retrieval(reader: BuildReader, processes: int = 1) -> dict:
    """The retrieval model (saved for readers), every claim's retrieval per split, and the dev
    figures (per-variant F included). With two processes or more, the unpadded-tags retriever
    is fitted, and its variants' records written, alongside (a forked process) while this one
    fits the padded retriever and retrieves every split."""
    work = reader.work
    outputs = [work.retrieval_summary, work.retrieval_index, work.retrieval_vectorizer]
    if all(path.is_file() for path in [*outputs, *(work.retrieval(split) for split in SPLITS)]):
        return read_json(work.retrieval_summary)
    started = time.perf_counter()
    ids, tags, nopad = _tag_strings(reader)
    unpadded_job = None
    if processes > 1 and not work.retrieval_summary.is_file():
        unpadded_job = ForkedJob.start(_unpadded_variants, reader, ids, nopad)
    try:
        retriever = _padded_retriever(reader, ids, tags)
        _write_split_records(reader, retriever)
        if work.retrieval_summary.is_file():
            return read_json(work.retrieval_summary)
        _write_variant_records(reader, {"padded": retriever})
        tagged = {"padded": len(retriever)}
        tagged["unpadded"] = unpadded_job.result() if unpadded_job else _unpadded_variants(reader, ids, nopad)
    finally:
        if unpadded_job is not None:
            unpadded_job.cancel()
    del ids, tags, nopad
    summary = _retrieval_summary(reader, retriever, tagged)
    summary["seconds"] = time.perf_counter() - started
    write_atomic(work.retrieval_summary, json.dumps(summary, ensure_ascii=False, indent=1))
    return summary


def _retrieval_summary(reader: BuildReader, retriever: retrieval.Retriever, tagged: dict[str, int]) -> dict:
    """The stage's figures: the passages left out, each split's fallback share and F, and the
    dev F of every variant (``tagged``: how many passages each retriever retrieves from)."""
    summary: dict = {"excluded_untagged_passages": retriever.excluded, "splits": {}}
    if retriever.vectorizer.cannot_fit_:
        summary["vectorizer_cannot_fit"] = retriever.vectorizer.cannot_fit_
        log(cannot_fit_line(len(retriever)))
    for split in SPLITS:
        records = list(reader.retrieval(split).values())
        summary["splits"][split] = split_figures(records, reader.claims(split), FALLBACK_SHARE, split != "test")
    # The table scores the records the build keeps rather than retrieving dev again.
    summary["variants_dev"] = [
        variant_f_row(
            name,
            list(reader.retrieval_records("dev", name).values()),
            reader.claims("dev"),
            tagged[variant.passage_tags],
        )
        for name, variant in VARIANTS.items()
    ]
    return summary


def _tag_strings(reader: BuildReader) -> tuple[list[str], list[str], list[str]]:
    """Each passage's id, tags and unpadded tags (space-separated, as the retriever reads them),
    canonical order: strings, not the rows' lists, which would hold a string per tag (a GB more
    at 1.2M passages)."""
    ids, tags, nopad = [], [], []
    for row in reader.iter_tags():
        ids.append(row["id"])
        tags.append(" ".join(row["tags"]))
        nopad.append(" ".join(row["nopad"]))
    return ids, tags, nopad


def _padded_retriever(reader: BuildReader, ids: list[str], tags: list[str]) -> retrieval.Retriever:
    """The notebook's retrieval model: the saved one, else fitted and saved."""
    work = reader.work
    if work.retrieval_index.is_file() and work.retrieval_vectorizer.is_file():
        return retrieval.Retriever.load(work.retrieval_vectorizer, work.retrieval_index, reader.restemmer)
    retriever = retrieval.Retriever.fit(ids, tags, reader.restemmer)  # both files are written again: the same bytes
    retriever.save(work.retrieval_vectorizer, work.retrieval_index)
    return retriever


def _write_split_records(reader: BuildReader, retriever: retrieval.Retriever) -> None:
    """Every split's retrieval records that are not written yet, one file per split."""
    for split in SPLITS:
        if not reader.work.retrieval(split).is_file():
            records = retrieval.retrieve_all(retriever, reader.claims(split))
            write_atomic(reader.work.retrieval(split), _record_lines(records))


def _unpadded_variants(reader: BuildReader, ids: list[str], nopad: list[str]) -> int:
    """Fit the retriever over the unpadded tags (the quirk variant's; never saved) and write the
    records of the variants that read it; returns how many passages it retrieves from."""
    retriever = retrieval.Retriever.fit(ids, nopad, reader.restemmer)
    _write_variant_records(reader, {"unpadded": retriever})
    return len(retriever)


def _record_lines(records: list[dict]) -> str:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)


def cannot_fit_line(tagged: int) -> str:
    """What the build says when the notebook's retrieval vectorizer cannot fit the corpus."""
    settings = RETRIEVAL_VECTORIZER
    return (
        f"retrieval: the notebook's vectorizer (max_df={settings['max_df']}, min_df={settings['min_df']}) cannot fit "
        f"{tagged} tagged passage(s), where scikit-learn 1.2.2 raised: no claim term has a weight, so every claim "
        "takes the fallback passages"
    )


# --- the quirk variants' records ------------------------------------------------------------------


def build_variant_records(reader: BuildReader) -> None:
    """Each quirk variant's retrieval records of dev and test, one file each (skipped when
    there): a scoreboard row needs its ids for F and its evidence for A. The retrieval stage
    writes them as it goes; this writes what is missing after (a repair)."""
    todo = _variant_todo(reader)
    if not todo:
        return
    retrievers: dict = {"padded": reader.retriever()}
    if any(VARIANTS[name].passage_tags == "unpadded" for name, _ in todo):
        ids, _, nopad = _tag_strings(reader)  # the unpadded retriever: fitted only if needed
        retrievers["unpadded"] = retrieval.Retriever.fit(ids, nopad, reader.restemmer)
    _write_variant_records(reader, retrievers)


def _variant_todo(reader: BuildReader) -> list[tuple[str, str]]:
    return [
        (name, split)
        for name in VARIANTS
        if name != "notebook"
        for split in VARIANT_SPLITS
        if not reader.work.variant_retrieval(name, split).is_file()
    ]


def _write_variant_records(reader: BuildReader, retrievers: dict) -> None:
    """Write each missing variant record file whose passage tags have a fitted retriever in
    ``retrievers`` (``{"padded": ..., "unpadded": ...}``, either or both)."""
    for name, split in _variant_todo(reader):
        variant = VARIANTS[name]
        if variant.passage_tags in retrievers:
            records = retrieval.retrieve_all(retrievers[variant.passage_tags], reader.claims(split), variant)
            write_atomic(reader.work.variant_retrieval(name, split), _record_lines(records))
