"""The threshold sweep, after the classifier's verdicts: dev F, A, HM and the fallback share by
cosine threshold, overlap threshold and top-n under both scoring rules
(:func:`claimtrace.evaluation.sweep.sweep`), from the saved retrieval model, each claim's tags as
retrieval recorded them and the build's classifier. One file, written whole (the site reads it
through :meth:`claimtrace.workdir.reader.BuildReader.sweep`, never recomputing it)."""

from __future__ import annotations

import json

from claimtrace.evaluation.baselines import majority_label
from claimtrace.evaluation.sweep import sweep
from claimtrace.lib.build_files import read_json, write_atomic
from claimtrace.workdir.reader import BuildReader


def build_sweep(reader: BuildReader) -> dict:
    """The dev sweep (written once; a killed run writes nothing and the next one computes it)."""
    path = reader.work.sweep
    if path.is_file():
        return read_json(path)
    claims = reader.claims("dev")
    records = reader.retrieval("dev")
    classifier = reader.classifier()
    preprocess = reader.preprocessor.preprocess

    def stems(passage_id: str) -> str:
        found = reader.passage_stems(passage_id)  # a build without stems.npz: the same stems, made again
        return found if found is not None else preprocess(reader.passage_text(passage_id) or "").text()

    result = sweep(
        reader.retriever(),
        claims,
        {cid: records[cid]["tags"] for cid in claims},
        {cid: preprocess(claim.text).text() for cid, claim in claims.items()},
        stems,
        classifier.vocab,
        classifier.table,
        majority_label(reader.claims("train")),
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, json.dumps(result, ensure_ascii=False))
    return result
