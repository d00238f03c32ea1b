"""The BM25 stage: the reference retriever's index of the corpus, its six passages per claim of
every split, and its figures and row of the retrieval variants table."""

from __future__ import annotations

import json
import time

from claimtrace.constants import MAX_EVIDENCES, SPLITS
from claimtrace.evaluation.scoreboard import SHORT_SHARE, bm25_variant_row, split_figures
from claimtrace.lib.build_files import read_json, write_atomic
from claimtrace.pipeline import bm25
from claimtrace.workdir.layout import CHUNK
from claimtrace.workdir.reader import BuildReader

#: Passages per chunk file of the BM25 index build (a module name, so a test can make it small).
BM25_CHUNK = CHUNK


def bm25_done(reader: BuildReader) -> bool:
    """Whether every file of the stage is there (nothing left to start alongside)."""
    work = reader.work
    outputs = [work.bm25_summary, work.bm25_index, *(work.bm25_retrieval(split) for split in SPLITS)]
    return all(path.exists() for path in outputs)


def build_bm25(reader: BuildReader, passages: dict[str, str], processes: int = 2) -> dict:
    """The BM25 reference: its index of the corpus (evidence.json file order, chunked and
    resumable), each split's six passages per claim, and its row of the variants table."""
    work = reader.work
    if bm25_done(reader):
        return read_json(work.bm25_summary)
    started = time.perf_counter()
    words = bm25.BM25Words(reader.preprocessor)
    index = bm25.build_bm25_index(work.bm25_dir, passages.items(), words, chunk_size=BM25_CHUNK, processes=processes)
    summary: dict = {"passages": len(index), "params": bm25.PARAMS, "tokenizer": bm25.TOKENIZER, "splits": {}}
    for split in SPLITS:
        _write_split_records(reader, index, split)
        records = list(reader.bm25_retrieval(split).values())
        summary["splits"][split] = split_figures(records, reader.claims(split), SHORT_SHARE, split != "test")
    if work.bm25_summary.is_file():  # only an index or a split's records were rebuilt
        return read_json(work.bm25_summary)
    summary["row"] = bm25_variant_row(summary["splits"]["dev"], len(index))
    summary["seconds"] = time.perf_counter() - started
    write_atomic(work.bm25_summary, json.dumps(summary, ensure_ascii=False, indent=1))
    return summary


def _write_split_records(reader: BuildReader, index: bm25.BM25Index, split: str) -> None:
    """A split's six passages per claim, ``{claim_id, evidences, scores}`` per line in file order
    (skipped when written)."""
    path = reader.work.bm25_retrieval(split)
    if path.is_file():
        return
    claims = reader.claims(split)
    ids, scores = index.search([c.text for c in claims.values()], k=MAX_EVIDENCES)
    lines = (
        json.dumps({"claim_id": cid, "evidences": i, "scores": [float(x) for x in sc]}, ensure_ascii=False)
        for cid, i, sc in zip(claims, ids, scores, strict=True)
    )
    write_atomic(path, "".join(line + "\n" for line in lines))
