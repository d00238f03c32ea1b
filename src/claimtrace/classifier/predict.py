"""Classifier inference: a checkpoint with its vocabulary and exact table, both protocols over a
split, and the one accuracy-and-confusion helper.

Two protocols (``constants.PROTOCOLS``):

* ``alone``: every claim as a batch of one, which is what the exact table computes
  (:mod:`claimtrace.classifier.table`);
* ``notebook``: batches of 16 in file order, the full model, as the notebook evaluated dev and
  predicted test. A claim's verdict then also depends on its 15 neighbours in the file.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from .. import constants as C
from ..artifacts import damaged
from ..data import DataError
from .inputs import Encoded, Vocabulary, load_vocab
from .model import TransformerClassifier, load_model, notebook_logits
from .table import Table, export_table, load_table, sha256_file, table_metadata

#: The shipped checkpoint, its vocabulary, its exact table and its provenance.
ASSETS_DIR = Path(__file__).resolve().parents[1] / "assets"


@dataclass
class Classifier:
    """A checkpoint, the vocabulary its ids refer to, and its exact table."""

    model: TransformerClassifier
    vocab: Vocabulary
    table: Table
    checkpoint: Path

    def logits(self, input_ids: np.ndarray, protocol: str) -> np.ndarray:
        """(n, 4) float64 logits for ids (n, 128) in file order under one protocol."""
        if protocol == "alone":
            return self.table.logits(np.asarray(input_ids))
        if protocol == "notebook":
            with torch.no_grad():
                return notebook_logits(self.model, torch.as_tensor(np.asarray(input_ids))).double().numpy()
        raise ValueError(f"unknown protocol {protocol!r}: expected one of {', '.join(C.PROTOCOLS)}")


def load_classifier(checkpoint_dir: Path | None = None) -> Classifier:
    """The checkpoint trained into ``checkpoint_dir`` (``claimtrace train``), else the shipped one.

    The shipped table is read from ``assets/`` when its recorded checkpoint hash is the shipped
    checkpoint's; otherwise the table is computed from the checkpoint in float64 (a second).
    """
    folder = ASSETS_DIR if checkpoint_dir is None else Path(checkpoint_dir)
    checkpoint, vocab_path = folder / C.CHECKPOINT_FILE, folder / C.VOCAB_FILE
    hint = f"train it again with `claimtrace train --checkpoint {folder}`" if checkpoint_dir else "reinstall claimtrace"
    for path in (checkpoint, vocab_path):
        if not path.is_file():
            raise DataError(f"{path}: file is missing ({hint})")
    with damaged(checkpoint, hint):
        model = load_model(checkpoint)
    with damaged(vocab_path, hint):
        vocab = load_vocab(vocab_path)
    if len(vocab) != model.embedding.num_embeddings:
        raise DataError(f"{vocab_path}: {len(vocab)} tokens but {checkpoint} embeds {model.embedding.num_embeddings}")
    table_path = folder / C.TABLE_FILE
    with damaged(table_path, hint):
        recorded = table_metadata(table_path).get("checkpoint_sha256") if table_path.is_file() else None
        table = load_table(table_path) if recorded == sha256_file(checkpoint) else export_table(model)
    return Classifier(model, vocab, table, checkpoint)


def predict(classifier: Classifier, encoded: Encoded) -> dict[str, dict]:
    """Per claim (file order): for each protocol, ``{"logits", "verdict"}``."""
    by_protocol = {p: classifier.logits(encoded.input_ids, p) for p in C.PROTOCOLS}
    out = {}
    for i, cid in enumerate(encoded.claim_ids):
        out[cid] = {
            protocol: {"logits": logits[i].tolist(), "verdict": C.LABELS[int(np.argmax(logits[i]))]}
            for protocol, logits in by_protocol.items()
        }
    return out


def accuracy_and_confusion(labels: Sequence[str], verdicts: Sequence[str]) -> dict:
    """Accuracy and the 4 x 4 confusion matrix (rows: gold label, columns: verdict, both in
    ``LABELS`` order) of aligned label and verdict lists: the one place these are counted."""
    matrix = np.zeros((len(C.LABELS), len(C.LABELS)), dtype=int)
    for label, verdict in zip(labels, verdicts, strict=True):
        matrix[C.LABEL_IDS[label], C.LABEL_IDS[verdict]] += 1
    correct = int(np.trace(matrix))
    return {
        "accuracy": correct / len(labels) if len(labels) else 0.0,
        "correct": correct,
        "claims": len(labels),
        "confusion": matrix.tolist(),
    }


def protocol_figures(labels: Mapping[str, str], verdicts: Mapping[str, Mapping[str, str]]) -> dict:
    """:func:`accuracy_and_confusion` per protocol. ``labels``: claim id -> gold label;
    ``verdicts``: claim id -> {protocol: verdict}."""
    ids = list(labels)
    return {
        protocol: accuracy_and_confusion([labels[c] for c in ids], [verdicts[c][protocol] for c in ids])
        for protocol in C.PROTOCOLS
    }
