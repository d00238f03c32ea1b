"""What each quirk cost, after the classifier stage: the verdicts a scoreboard row, the fixes
box or the claim page needs beyond classifier/<split>.json (the intended model and the notebook's
LSTM; BM25's and the quirk variants' evidence), and the dev scoreboard of every retrieval x
classifier x protocol row."""

from __future__ import annotations

import json
from collections.abc import Iterator

from claimtrace.assets import ASSETS_DIR
from claimtrace.constants import CLASSIFIER_VARIANTS, SPLITS, VOCAB_FILE
from claimtrace.errors import DataError
from claimtrace.evaluation.scoreboard import scoreboard
from claimtrace.lib.build_files import read_json, write_atomic
from claimtrace.models.inputs import load_vocab
from claimtrace.models.predict import predict
from claimtrace.pipeline.retrieval import VARIANTS
from claimtrace.workdir.reader import BuildReader
from claimtrace.workdir.stages.classifier import source_inputs
from claimtrace.workdir.stages.retrieval import VARIANT_SPLITS

#: The models beside the build's checkpoint, each with its shipped weights and the shipped vocabulary.
_OTHER_MODELS = ("intended", "lstm")


def _more_sources(split: str) -> Iterator[tuple[str, tuple[str, ...]]]:
    """(evidence source, the models that read it) beyond classifier/<split>.json's: every
    scoreboard row's on dev and test; none on train, the claims every model was trained on
    (their verdicts there score nothing, and a forward call per claim and protocol would double
    the demo build's time)."""
    if split not in VARIANT_SPLITS:
        return
    if split != "test":
        yield "gold", _OTHER_MODELS
    yield "retrieved", _OTHER_MODELS
    yield "bm25", CLASSIFIER_VARIANTS
    for name in VARIANTS:
        if name != "notebook":
            yield name, CLASSIFIER_VARIANTS


def build_more_verdicts(reader: BuildReader) -> None:
    """The verdicts a scoreboard row, the fixes box or the claim page needs beyond
    classifier/<split>.json, dev and test: the intended model and the LSTM on gold, retrieved and
    BM25 evidence, the notebook's model on BM25 evidence, every model on each quirk variant's;
    both protocols (train: an empty entry per claim, :func:`_more_sources`). The intended model
    and the LSTM compute each distinct input once for both protocols and every source
    (:class:`~claimtrace.models.predict.PerClaimClassifier`). One file per split, written when the split is done; the model
    inputs are saved per source, so a killed stage re-encodes only what it had not saved."""
    work = reader.work
    todo = [split for split in SPLITS if not work.more_verdicts(split).is_file()]
    if not todo:
        return
    from claimtrace.models.intended import IntendedClassifier  # torch: only when there is work
    from claimtrace.models.lstm import LSTMVerdicts
    from claimtrace.models.transformer import torch_threads

    with torch_threads(1):  # the forward calls run on worker threads, one PyTorch thread each
        models = {"notebook": reader.classifier(), "intended": IntendedClassifier(), "lstm": LSTMVerdicts()}
        _check_shared_vocabulary(models["notebook"].vocab)
        for split in todo:
            verdicts: dict[str, dict] = {cid: {m: {} for m in CLASSIFIER_VARIANTS} for cid in reader.claims(split)}
            for source, readers in _more_sources(split):
                encoded = source_inputs(reader, split, source, models["notebook"].vocab)
                for model in readers:
                    for cid, entry in predict(models[model], encoded).items():
                        verdicts[cid][model][source] = entry
            write_atomic(work.more_verdicts(split), json.dumps(verdicts, ensure_ascii=False))


def _check_shared_vocabulary(vocab) -> None:
    """The intended model and the LSTM read the shipped vocabulary's ids; the build's inputs are encoded
    with its checkpoint's. They must be the same list for one input to serve both models."""
    shipped = load_vocab(ASSETS_DIR / VOCAB_FILE)
    if shipped.tokens != vocab.tokens:
        raise DataError(
            f"{ASSETS_DIR / VOCAB_FILE}: the intended model's and the LSTM's vocabulary is not the build "
            "checkpoint's: "
            "build the comparison with the shipped checkpoint"
        )


def build_scoreboard(reader: BuildReader) -> dict:
    """Dev F, A and HM of every retrieval x classifier x protocol row (written once)."""
    if reader.work.scoreboard.is_file():
        return read_json(reader.work.scoreboard)
    board = scoreboard(reader, "dev")
    write_atomic(reader.work.scoreboard, json.dumps(board, ensure_ascii=False, indent=1))
    return board
