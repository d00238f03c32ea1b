"""Classifier inference: a checkpoint with its vocabulary and exact table, both protocols over a
split, and the one accuracy-and-confusion helper.

Two protocols (``constants.PROTOCOLS``):

* ``alone``: every claim as a batch of one, which is what the exact table computes
  (:mod:`claimtrace.classifier.table`);
* ``notebook``: batches of 16 in file order, the full model, as the notebook evaluated dev and
  predicted test. A claim's verdict then also depends on its 15 neighbours in the file.
"""

from __future__ import annotations

import functools
import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from .. import constants as C
from ..assets import ASSETS_DIR
from ..errors import DataError, damaged
from .inputs import Encoded, Vocabulary, load_vocab
from .table import Table, export_table, load_table, sha256_file, table_metadata

#: The checkpoint's tensors that are not parameters: the positional table is a buffer.
_BUFFERS = frozenset({"pos_encoder.pe"})


class Classifier:
    """A checkpoint, the vocabulary its ids refer to, and its exact table.

    The PyTorch model is loaded on first use (:attr:`model`): the table answers the protocol
    "alone" and every token's share without it, and a build stores each claim's one real forward
    call, so a page of a course claim needs no torch (importing it and loading the model take
    about 2 s of a server's start).
    """

    def __init__(self, vocab: Vocabulary, table: Table, checkpoint: Path, hint: str, model=None):
        self.vocab = vocab
        self.table = table
        self.checkpoint = checkpoint
        self._hint = hint
        self._model = model
        self._lock = threading.Lock()
        self._forward_calls: OrderedDict[bytes, np.ndarray] = OrderedDict()

    @property
    def model(self):
        """The checkpoint as a :class:`~claimtrace.classifier.model.TransformerClassifier` in
        eval mode (loaded once, on first use)."""
        if self._model is None:
            with self._lock:
                if self._model is None:
                    self._model = _load_model(self.checkpoint, self._hint, len(self.vocab), self.vocab_path)
        return self._model

    @property
    def vocab_path(self) -> Path:
        return self.checkpoint.parent / C.VOCAB_FILE

    #: Forward calls kept, by input: a call is a function of its 128 ids alone, and typed claims
    #: often repeat an input (made-up words are all ``<unk>``; the same passages come back).
    FORWARD_CACHE = 4096

    def forward_alone(self, ids) -> np.ndarray:
        """One real PyTorch forward call: the claim as a batch of one, in eval mode, on one
        thread (a small call gains nothing from more); (4,) float64 holding the float32 logits.
        Kept by input (:attr:`FORWARD_CACHE` most recent)."""
        key = np.asarray(ids, dtype=np.int64).tobytes()
        with self._lock:
            cached = self._forward_calls.get(key)
            if cached is not None:
                self._forward_calls.move_to_end(key)
                return cached.copy()
        import torch

        from .model import alone_logits, torch_threads

        model = self.model
        with torch_threads(1):
            logits = alone_logits(model, torch.tensor([[int(i) for i in ids]]))[0].double().numpy()
        with self._lock:
            self._forward_calls[key] = logits
            while len(self._forward_calls) > self.FORWARD_CACHE:
                self._forward_calls.popitem(last=False)
        return logits.copy()

    @functools.cached_property
    def parameter_count(self) -> int:
        """The model's number of parameters, read once from the checkpoint's header (no torch)."""
        from safetensors import safe_open

        with damaged(self.checkpoint, self._hint), safe_open(str(self.checkpoint), "np") as handle:
            shapes = [handle.get_slice(name).get_shape() for name in handle.keys() if name not in _BUFFERS]
        return int(sum(int(np.prod(shape)) for shape in shapes))

    def logits(self, input_ids: np.ndarray, protocol: str) -> np.ndarray:
        """(n, 4) float64 logits for ids (n, 128) in file order under one protocol."""
        if protocol == "alone":
            return self.table.logits(np.asarray(input_ids))
        if protocol == "notebook":
            import torch

            from .model import notebook_logits

            with torch.no_grad():
                return notebook_logits(self.model, torch.as_tensor(np.asarray(input_ids))).double().numpy()
        raise ValueError(f"unknown protocol {protocol!r}: expected one of {', '.join(C.PROTOCOLS)}")


def _load_model(checkpoint: Path, hint: str, vocab_size: int, vocab_path: Path):
    from .model import load_model

    with damaged(checkpoint, hint):
        model = load_model(checkpoint)
    if vocab_size != model.embedding.num_embeddings:
        raise DataError(f"{vocab_path}: {vocab_size} tokens but {checkpoint} embeds {model.embedding.num_embeddings}")
    return model


def load_classifier(checkpoint_dir: Path | None = None) -> Classifier:
    """The checkpoint trained into ``checkpoint_dir`` (``claimtrace train``), else the shipped one.

    The table is read from the folder's table file when its recorded checkpoint hash is the
    checkpoint's (the model itself is then loaded only when first used); otherwise the model
    is loaded now and the table computed from it in float64 (a second).
    """
    folder = ASSETS_DIR if checkpoint_dir is None else Path(checkpoint_dir)
    checkpoint, vocab_path = folder / C.CHECKPOINT_FILE, folder / C.VOCAB_FILE
    hint = f"train it again with `claimtrace train --checkpoint {folder}`" if checkpoint_dir else "reinstall claimtrace"
    for path in (checkpoint, vocab_path):
        if not path.is_file():
            raise DataError(f"{path}: file is missing ({hint})")
    with damaged(vocab_path, hint):
        vocab = load_vocab(vocab_path)
    table_path = folder / C.TABLE_FILE
    with damaged(table_path, hint):
        recorded = table_metadata(table_path).get("checkpoint_sha256") if table_path.is_file() else None
        table = load_table(table_path) if recorded == sha256_file(checkpoint) else None
    if table is not None:
        with damaged(checkpoint, hint):
            _check_header(checkpoint)
        if len(vocab) != table.g.shape[0]:
            raise DataError(f"{vocab_path}: {len(vocab)} tokens but {table_path} has {table.g.shape[0]} rows")
        return Classifier(vocab, table, checkpoint, hint)

    model = _load_model(checkpoint, hint, len(vocab), vocab_path)
    return Classifier(vocab, export_table(model), checkpoint, hint, model=model)


def _check_header(checkpoint: Path) -> None:
    """Read the checkpoint's header (names and shapes): a truncated or garbage file fails here,
    at load, not at the first forward call."""
    from safetensors import safe_open

    with safe_open(str(checkpoint), "np") as handle:
        list(handle.keys())


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
