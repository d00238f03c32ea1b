"""The classifier stage: the model inputs (saved for readers) and the verdicts of the build's
checkpoint for every claim, gold and retrieved evidence, alone and in the notebook's batches of
16; resumable per split and evidence source."""

from __future__ import annotations

import json
from collections.abc import Iterator

import numpy as np

from claimtrace.constants import SPLITS
from claimtrace.errors import DataError
from claimtrace.evaluation.significance import verdicts_paired
from claimtrace.lib.build_files import read_json, write_atomic
from claimtrace.models.inputs import Encoded, encode, evidence_texts, make_rows
from claimtrace.models.predict import predict
from claimtrace.models.table import export_table
from claimtrace.workdir.reader import BuildReader, source_figures


def build_classifier(reader: BuildReader) -> dict:
    """The model inputs (saved for readers) and the verdicts of the build's checkpoint for every
    claim: gold and retrieved evidence (gold only where labelled), alone and in the notebook's
    batches of 16; dev and train accuracies."""
    work = reader.work
    outputs = [work.classifier_summary, *(work.verdicts(split) for split in SPLITS)]
    if all(path.is_file() for path in outputs) and all(
        work.inputs(split, source).is_file() for split, source in _classifier_sources()
    ):
        return read_json(work.classifier_summary)
    from claimtrace.models.transformer import torch_threads

    with torch_threads(1):  # the forward calls run on worker threads, one PyTorch thread each
        return _classify_every_split(reader)


def _classifier_sources() -> Iterator[tuple[str, str]]:
    for split in SPLITS:
        yield split, "retrieved"
        if split != "test":
            yield split, "gold"


def _classify_every_split(reader: BuildReader) -> dict:
    """Resumable per split and evidence source: each piece's verdicts are kept in
    classifier/parts/ until its split's file is written, so a killed stage redoes only the pieces
    it had not finished."""
    work = reader.work
    classifier = reader.classifier()
    summary: dict = {"checkpoint": classifier.checkpoint.name}
    for split in SPLITS:
        claims = reader.claims(split)
        sources = [source for s, source in _classifier_sources() if s == split]
        verdicts = _split_verdicts(reader, classifier, split, sources)
        for source in sources:
            work.classifier_part(split, source).unlink(missing_ok=True)
            if split != "test":
                summary.setdefault(split, {})[source] = source_figures(claims, verdicts, source)
        if split != "test":  # the model's two readings of each claim, paired and tested once, here
            on = {s: {cid: v[s]["notebook"]["verdict"] for cid, v in verdicts.items()} for s in ("gold", "retrieved")}
            summary.setdefault("gold_minus_retrieved", {})[split] = verdicts_paired(claims, on["gold"], on["retrieved"])
    if work.classifier_parts.is_dir() and not any(work.classifier_parts.iterdir()):
        work.classifier_parts.rmdir()
    if work.classifier_summary.is_file():
        return read_json(work.classifier_summary)
    summary["table_vs_torch"] = _table_agreement(classifier)
    write_atomic(work.classifier_summary, json.dumps(summary, ensure_ascii=False, indent=1))
    return summary


def _split_verdicts(reader: BuildReader, classifier, split: str, sources: list[str]) -> dict[str, dict]:
    """A split's verdicts (classifier/<split>.json): the written file, with any of its inputs
    that was damaged or lost encoded again; else each source's piece, merged and written."""
    work = reader.work
    if work.verdicts(split).is_file():
        for source in sources:  # the inputs only, where one was damaged or lost
            source_inputs(reader, split, source, classifier.vocab)
        return reader.verdicts(split)
    verdicts = {cid: {"label": c.label} for cid, c in reader.claims(split).items()}
    for source in sources:
        for cid, entry in classify_piece(reader, classifier, split, source).items():
            verdicts[cid][source] = entry  # {protocol: {"logits", "verdict"}}
    write_atomic(work.verdicts(split), json.dumps(verdicts, ensure_ascii=False))
    return verdicts


def _store_forward_calls(classifier, encoded, entries: dict[str, dict]) -> None:
    """Each claim's one real PyTorch forward call on its retrieved evidence (a batch of one), the
    float32 logits every claim page shows beside the exact table's: stored beside the verdicts
    so that pages need no torch. :meth:`~claimtrace.models.predict.Classifier.forward_calls_alone`
    gives every claim's call, bit for bit, from one encoder call per 128 distinct tokens."""
    logits = classifier.forward_calls_alone(encoded.input_ids)
    for cid, row in zip(encoded.claim_ids, logits):
        entries[cid]["alone"]["torch_logits"] = row.tolist()


def classify_piece(reader: BuildReader, classifier, split: str, source: str) -> dict[str, dict]:
    """One split's verdicts on one evidence source (claim id -> {protocol: {"logits",
    "verdict"}}, and on retrieved evidence each claim's forward call under "alone"): the piece
    kept by an earlier, killed run, else predicted and kept."""
    part = reader.work.classifier_part(split, source)
    if part.is_file():
        try:
            return read_json(part)
        except DataError:  # not whole (written aside and renamed, so only a damaged disk): redo it
            part.unlink()
    encoded = source_inputs(reader, split, source, classifier.vocab)
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


def source_inputs(reader: BuildReader, split: str, source: str, vocab) -> Encoded:
    """A split's model inputs for one evidence source (``gold``, ``retrieved``, ``bm25`` or a
    quirk variant's): the saved ones, else encoded and saved."""
    path = reader.work.inputs(split, source)
    if path.is_file():
        return Encoded.load(path)
    claims = reader.claims(split)
    if source == "gold":
        ids = {cid: claim.evidences for cid, claim in claims.items()}
    else:
        ids = reader.evidence_ids(split, "notebook" if source == "retrieved" else source)
    encoded = encode(make_rows(claims, evidence_texts(ids, reader.passage_text), reader.preprocessor), vocab)
    encoded.save(path)
    return encoded
