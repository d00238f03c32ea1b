"""Classifier inference: a checkpoint with its vocabulary and exact table, both protocols over a
split, and the one accuracy-and-confusion helper.

Two protocols (``constants.PROTOCOLS``):

* ``alone``: every claim as a batch of one, which is what the exact table computes
  (:mod:`claimtrace.models.table`);
* ``notebook``: batches of 16 in file order, the full model, as the notebook evaluated dev and
  predicted test. A claim's verdict then also depends on its 15 neighbours in the file.

A build makes thousands of forward calls; they run at the hardware's speed without changing a
bit of what one call gives:

* :func:`notebook_batches`: each batch of 16 is still its own call, exactly the notebook's; the
  calls run :data:`FORWARD_WORKERS` at a time, each on one PyTorch thread, so a batch's logits do
  not depend on how many run beside it;
* :meth:`Classifier.forward_calls_alone`: each claim's one real forward call alone, from one
  encoder call per 128 distinct tokens (the notebook's model, alone, transforms each position on
  its own); every call has the shape of a claim's own call, so the bits are that call's.
"""

from __future__ import annotations

import functools
import math
import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from claimtrace import constants
from claimtrace.assets import ASSETS_DIR
from claimtrace.errors import DataError, damaged
from claimtrace.lib.lru import LRU
from claimtrace.models.inputs import Encoded, Vocabulary, load_vocab
from claimtrace.models.table import Table, export_table, load_table, sha256_file, table_metadata

#: The checkpoint's tensors that are not parameters: the positional table is a buffer.
_BUFFERS = frozenset({"pos_encoder.pe"})

#: Forward calls in flight at once in a build: one per core of a 2-core machine, each on one
#: PyTorch thread (measured against one worker and against one call on two threads:
#: docs/benchmarks.md, "The build"). Each call is the same single-threaded computation whatever
#: runs beside it, so no logit depends on this number.
FORWARD_WORKERS = 2


def run_calls(call: Callable, inputs: Sequence, workers: int = FORWARD_WORKERS) -> list:
    """``[call(x) for x in inputs]``, ``workers`` calls at a time, each thread on one PyTorch
    thread and in no-grad mode (both are per thread in PyTorch: a new thread would start with
    every core's threads and with gradients on)."""
    import torch

    def run(x):
        with torch.no_grad():
            return call(x)

    previous = torch.get_num_threads()
    try:
        if workers <= 1 or len(inputs) <= 1:
            torch.set_num_threads(1)
            return [run(x) for x in inputs]
        with ThreadPoolExecutor(workers, initializer=torch.set_num_threads, initargs=(1,)) as pool:
            return list(pool.map(run, inputs))
    finally:  # a worker's setting reaches MKL's process-wide count: the caller's is put back
        torch.set_num_threads(previous)


def notebook_batches(model, input_ids: np.ndarray, workers: int = FORWARD_WORKERS) -> np.ndarray:
    """Protocol "notebook" (:func:`claimtrace.models.transformer.notebook_logits`): consecutive
    batches of 16 in file order, one forward call each, ``workers`` calls at a time; (n, 4)
    float32, bit for bit the single-threaded calls one after the other.

    Parameters
    ----------
    model : TransformerClassifier
        Either variant, put in eval mode.
    input_ids : np.ndarray
        Token ids (n, 128) in file order.
    workers : int
        Calls run at once (each on one thread; the result does not depend on it).
    """
    import torch

    model.eval()
    ids = torch.as_tensor(np.asarray(input_ids))
    batches = [ids[start : start + constants.BATCH_SIZE] for start in range(0, len(ids), constants.BATCH_SIZE)]
    if not batches:
        return np.zeros((0, len(constants.LABELS)), dtype=np.float32)
    return torch.cat(run_calls(model, batches, workers)).numpy()


class Classifier:
    """A checkpoint, the vocabulary its ids refer to, and its exact table.

    The PyTorch model is loaded on first use (:attr:`model`): the table answers the protocol
    "alone" and every token's share without it, and a build stores each claim's one real forward
    call, so a page of a course claim needs no torch (importing it and loading the model were
    most of a server's start: docs/benchmarks.md, "The site over a course-scale build").
    """

    def __init__(self, vocab: Vocabulary, table: Table, checkpoint: Path, hint: str, model=None):
        self.vocab = vocab
        self.table = table
        self.checkpoint = checkpoint
        self._hint = hint
        self._model = model
        self._lock = threading.Lock()
        self._forward_lock = threading.Lock()
        self._forward_calls: LRU[bytes, np.ndarray] = LRU(self.FORWARD_CACHE)
        self._rows = None  # (input length, the encoder's output per vocabulary entry alone)
        self._rows_checked = False  # prepare_typed found them equal to real calls on this CPU

    @property
    def model(self):
        """The checkpoint as a :class:`~claimtrace.models.transformer.TransformerClassifier` in
        eval mode (loaded once, on first use)."""
        if self._model is None:
            with self._lock:
                if self._model is None:
                    self._model = _load_model(self.checkpoint, self._hint, len(self.vocab), self.vocab_path)
        return self._model

    @property
    def vocab_path(self) -> Path:
        return self.checkpoint.parent / constants.VOCAB_FILE

    #: Forward calls kept, by input: a call is a function of its 128 ids alone, and typed claims
    #: often repeat an input (made-up words are all ``<unk>``; the same passages come back).
    FORWARD_CACHE = 4096

    def forward_alone(self, ids) -> np.ndarray:
        """The claim's one real PyTorch forward call: the claim as a batch of one, in eval mode,
        on one thread (a small call gains nothing from more); (4,) float64 holding the float32
        logits. Kept by input (:attr:`FORWARD_CACHE` most recent). Once :meth:`prepare_typed`
        has checked them on this CPU, the call's own operations on the encoder's rows give its
        bits (:meth:`forward_calls_alone`) at a fraction of its cost."""
        key = np.asarray(ids, dtype=np.int64).tobytes()
        cached = self._forward_calls.get(key)
        if cached is not None:
            return cached.copy()
        logits = self._from_rows(np.asarray([ids]))[0] if self._rows_checked else self._real_call(ids)
        self._forward_calls.put(key, logits)
        return logits.copy()

    def _real_call(self, ids) -> np.ndarray:
        """One real PyTorch forward call of the whole model, (4,) float64 of the float32 logits."""
        import torch

        from claimtrace.models.transformer import alone_logits, torch_threads

        model = self.model
        claim = torch.tensor([[int(i) for i in ids]])
        if torch.get_num_threads() == 1:
            # A server's process is on one thread for good (its start-up settings,
            # web.process_settings): calls on several request threads run side by side, each on
            # its own thread, the same sums.
            return alone_logits(model, claim)[0].double().numpy()
        # One call at a time: the thread count is the process's, and a call made while another
        # restores it could run on more threads (and sum in another order).
        with self._forward_lock, torch_threads(1):
            return alone_logits(model, claim)[0].double().numpy()

    def prepare_typed(self, length: int = constants.MAX_LEN, probes: int = 3) -> bool:
        """Make the encoder's rows (:meth:`_encoder_rows`, about 50 encoder calls: a server does
        it once at start) and check them against real calls on ``probes`` inputs of every kind a
        typed claim makes (words, ``<unk>``s, padding), bit for bit; from then on
        :meth:`forward_alone` reads them. False (and real calls kept) on a CPU where they differ."""
        rows = self._encoder_rows(length, 1)
        rng = np.random.default_rng(0)
        inputs = [rng.integers(0, rows.shape[0], length) for _ in range(probes)]
        inputs[0][length // 3 :] = self.vocab.index[constants.PAD]  # a short claim: padding
        inputs[1][::2] = self.vocab.index[constants.UNK]  # made-up words
        self._rows_checked = all(
            np.array_equal(self._from_rows(np.asarray([x]))[0], self._real_call(x)) for x in inputs
        )
        return self._rows_checked

    def _from_rows(self, input_ids: np.ndarray) -> np.ndarray:
        """Each claim's call alone from the encoder's rows, (n, 4) float64 of the float32 logits:
        a claim's (1, 128, 256) rows -> mean over the positions -> (1, 256) -> ``fc_out`` -> (1, 4),
        the operations of its own call on the same values, in the same shapes."""
        import torch

        rows = self._encoder_rows(input_ids.shape[1], FORWARD_WORKERS)
        fc_out = self.model.fc_out
        with torch.no_grad():
            logits = [fc_out(rows[claim].unsqueeze(0).mean(dim=1)) for claim in torch.as_tensor(input_ids)]
        return torch.cat(logits).double().numpy()

    def forward_calls_alone(self, input_ids: np.ndarray, workers: int = FORWARD_WORKERS) -> np.ndarray:
        """Every claim's one real forward call alone (what :meth:`forward_alone` returns), (n, 4)
        float64 holding the float32 logits, without a call per claim.

        Alone, the notebook's encoder sees a sequence of length one and a "batch" of 128
        positions (the batch-first bug), so each position is transformed on its own: its output
        is a function of its token. :attr:`_encoder_rows` holds that output for every vocabulary
        entry, made by calls shaped exactly as a claim's own, (1, 128) ids in, 128 distinct
        tokens side by side where a claim has its words; each claim's mean over its 128 rows and
        ``fc_out`` are then the operations of its own call on the same values, in the same
        shapes. The float32 sums are the same bits (tests/models/test_predict.py checks them against
        one call per claim); :meth:`_check_forward_calls` checks a few claims here too, and on a
        CPU whose kernels would differ the calls are made one by one.
        """
        ids = np.asarray(input_ids)
        if len(ids) == 0:
            return np.zeros((0, len(constants.LABELS)))
        self._encoder_rows(ids.shape[1], workers)
        out = self._from_rows(ids)
        if not self._check_forward_calls(ids, out):
            return np.stack([self._real_call(row) for row in ids])
        return out

    def _encoder_rows(self, length: int, workers: int):
        """The encoder's output for each vocabulary entry alone, (vocab, 256) float32: calls of
        ``length`` distinct tokens each (the last one completed with the first tokens again), made
        once."""
        if self._rows is not None and self._rows[0] == length:
            return self._rows[1]
        import torch

        model = self.model
        vocab = model.config.vocab_size
        tokens = torch.arange(math.ceil(vocab / length) * length) % vocab
        calls = [chunk.unsqueeze(0) for chunk in tokens.split(length)]  # (1, length) each: a claim's shape
        rows = torch.cat([out[0] for out in run_calls(model.encoder_output, calls, workers)])[:vocab]
        self._rows = (length, rows)
        return rows

    def _check_forward_calls(self, ids: np.ndarray, logits: np.ndarray) -> bool:
        """The first, middle and last claims' logits against their own forward calls, bit for bit."""
        return all(np.array_equal(logits[i], self._real_call(ids[i])) for i in {0, len(ids) // 2, len(ids) - 1})

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
            return notebook_batches(self.model, input_ids).astype(np.float64)
        raise ValueError(f"unknown protocol {protocol!r}: expected one of {', '.join(constants.PROTOCOLS)}")


class PerClaimClassifier:
    """A model whose claims never meet their batch-mates (the intended Transformer, the LSTM)
    behind :func:`predict`'s interface, ``logits(input_ids, protocol)``: each distinct input
    computed once, in batches of :attr:`BATCH`.

    "alone" (a batch of one) and "notebook" (batches of 16 in file order) are then the same
    function of the claim, so one computation serves both protocols and every evidence source
    that gives the same input; only the float32 sums' shape differs from a batch of one or of 16
    (each model's tests hold the logits within ``constants.FLOAT32_AGREEMENT`` of both calls).
    """

    #: Claims per forward call: as fast a claim as batches of 64 and faster than larger batches or
    #: one at a time, in half the memory of 64's, and no demo verdict moved from 64's
    #: (docs/benchmarks.md, "The build").
    BATCH = 16

    def __init__(self, model):
        self.model = model
        self._logits: dict[bytes, np.ndarray] = {}

    def logits(self, input_ids, protocol: str) -> np.ndarray:
        """(n, 4) float64 (float32 values) for ids (n, 128), the same under both protocols."""
        if protocol not in constants.PROTOCOLS:
            raise ValueError(f"unknown protocol {protocol!r}: expected one of {', '.join(constants.PROTOCOLS)}")
        ids = np.ascontiguousarray(np.asarray(input_ids, dtype=np.int64))
        keys = [row.tobytes() for row in ids]
        first = {}  # each input not computed yet -> its first row
        for row, key in enumerate(keys):
            if key not in self._logits:
                first.setdefault(key, row)
        new = list(first)
        if new:
            import torch

            rows = torch.from_numpy(ids[list(first.values())])
            self.model.eval()
            batches = list(rows.split(self.BATCH))
            computed = torch.cat(run_calls(self.model, batches)).double().numpy()
            self._logits.update(zip(new, computed, strict=True))
        if not keys:
            return np.zeros((0, len(constants.LABELS)))
        return np.stack([self._logits[k] for k in keys])


def _load_model(checkpoint: Path, hint: str, vocab_size: int, vocab_path: Path):
    from claimtrace.models.transformer import load_model

    with damaged(checkpoint, hint):
        model = load_model(checkpoint)
    if vocab_size != model.config.vocab_size:
        raise DataError(f"{vocab_path}: {vocab_size} tokens but {checkpoint} embeds {model.config.vocab_size}")
    return model


def load_classifier(checkpoint_dir: Path | None = None) -> Classifier:
    """The checkpoint trained into ``checkpoint_dir`` (``claimtrace train``), else the shipped one.

    The table is read from the folder's table file when its recorded checkpoint hash is the
    checkpoint's (the model itself is then loaded only when first used); otherwise the model
    is loaded now and the table computed from it in float64 (a second).
    """
    folder = ASSETS_DIR if checkpoint_dir is None else Path(checkpoint_dir)
    checkpoint, vocab_path = folder / constants.CHECKPOINT_FILE, folder / constants.VOCAB_FILE
    hint = f"train it again with `claimtrace train --checkpoint {folder}`" if checkpoint_dir else "reinstall claimtrace"
    for path in (checkpoint, vocab_path):
        if not path.is_file():
            raise DataError(f"{path}: file is missing ({hint})")
    with damaged(vocab_path, hint):
        vocab = load_vocab(vocab_path)
    table_path = folder / constants.TABLE_FILE
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
    by_protocol = {p: classifier.logits(encoded.input_ids, p) for p in constants.PROTOCOLS}
    out = {}
    for i, cid in enumerate(encoded.claim_ids):
        out[cid] = {
            protocol: {"logits": logits[i].tolist(), "verdict": constants.LABELS[int(np.argmax(logits[i]))]}
            for protocol, logits in by_protocol.items()
        }
    return out


def accuracy_and_confusion(labels: Sequence[str], verdicts: Sequence[str]) -> dict:
    """Accuracy and the 4 x 4 confusion matrix (rows: gold label, columns: verdict, both in
    ``LABELS`` order) of aligned label and verdict lists: the one place these are counted."""
    matrix = np.zeros((len(constants.LABELS), len(constants.LABELS)), dtype=int)
    for label, verdict in zip(labels, verdicts, strict=True):
        matrix[constants.LABEL_IDS[label], constants.LABEL_IDS[verdict]] += 1
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
        for protocol in constants.PROTOCOLS
    }
