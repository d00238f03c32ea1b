"""claimtrace.models.predict: each claim's own forward call, the notebook's batches at any worker or
thread count, and the protocols' figures."""

from __future__ import annotations

import json

import numpy as np
import torch

from claimtrace.assets import ASSETS_DIR
from claimtrace.constants import CHECKPOINT_FILE, LABELS, MAX_LEN, PROTOCOLS, PROVENANCE_FILE, VOCAB_SIZE
from claimtrace.models.inputs import encode, make_rows
from claimtrace.models.predict import load_classifier, predict, protocol_figures
from claimtrace.models.transformer import (
    alone_logits,
    load_model,
    notebook_logits,
)

SHIPPED = ASSETS_DIR / CHECKPOINT_FILE


# --- the build's forward calls at the hardware's speed, bit for bit ------------------------------


def _claims_and_random_inputs(data, n_random: int = 40) -> np.ndarray:
    """Every dev claim's gold input, and random inputs (any vocabulary entry, any length)."""
    generator = np.random.default_rng(0)
    rows = generator.integers(0, VOCAB_SIZE, size=(n_random, MAX_LEN))
    for row, length in zip(rows, generator.integers(1, MAX_LEN + 1, size=n_random)):
        row[length:] = 3  # [PAD]
    return np.concatenate([data.dev.input_ids, rows]).astype(np.int64)


def test_forward_calls_alone_are_each_claims_own_call_bit_for_bit(data):
    """The stored "torch_logits": one encoder call per 128 distinct tokens gives every claim's
    own forward call alone exactly, the same bits, at one or two workers."""
    from claimtrace.models.transformer import torch_threads

    classifier = load_classifier()
    ids = _claims_and_random_inputs(data)
    with torch_threads(1):
        literal = alone_logits(classifier.model, torch.from_numpy(ids)).double().numpy()
    for workers in (1, 2):
        classifier._rows = None  # the encoder rows made again with this many workers
        assert np.array_equal(classifier.forward_calls_alone(ids, workers=workers), literal)


def test_notebook_batches_are_the_notebooks_calls_at_any_worker_or_thread_count(data):
    """Protocol "notebook" at the build's speed: each batch of 16 is its own call, so the logits
    are the single-threaded calls' bits whatever the workers and the caller's thread count."""
    from claimtrace.models.predict import notebook_batches
    from claimtrace.models.transformer import torch_threads

    model = load_model(SHIPPED)
    ids = data.dev.input_ids[:90]  # five batches of 16 and one of 10
    with torch_threads(1):
        literal = notebook_logits(model, torch.from_numpy(ids)).numpy()
    for workers, threads in ((1, 1), (2, 1), (2, 2)):
        with torch_threads(threads):
            assert np.array_equal(notebook_batches(model, ids, workers=workers), literal), (workers, threads)


def test_forward_calls_alone_fall_back_to_one_call_each_where_bits_would_differ(data):
    """On a CPU whose kernels gave other bits for the encoder rows than for a claim's own call,
    the check fails and every claim gets its own call (here: rows made wrong on purpose)."""
    from claimtrace.models.transformer import torch_threads

    classifier = load_classifier()
    ids = data.dev.input_ids[:20].astype(np.int64)
    rows = classifier._encoder_rows(ids.shape[1], 1)
    classifier._rows = (ids.shape[1], rows + 1e-3)  # not the encoder's output: the check notices
    with torch_threads(1):
        literal = alone_logits(classifier.model, torch.from_numpy(ids)).double().numpy()
    assert np.array_equal(classifier.forward_calls_alone(ids), literal)


def test_a_typed_claims_call_from_the_checked_rows_is_its_own_call_bit_for_bit(data, monkeypatch):
    """A server's typed claims (prepare_typed, then forward_alone): the encoder's rows, checked
    once against real calls, give every input's own call exactly; no real call is made after."""
    from claimtrace.models.transformer import torch_threads

    classifier = load_classifier()
    ids = _claims_and_random_inputs(data, n_random=60)[-80:]
    with torch_threads(1):
        literal = alone_logits(classifier.model, torch.from_numpy(ids)).double().numpy()
    assert classifier.prepare_typed() is True
    monkeypatch.setattr(classifier, "_real_call", lambda ids: (_ for _ in ()).throw(AssertionError("a real call")))
    assert np.array_equal(np.stack([classifier.forward_alone(row) for row in ids]), literal)


def test_typed_claims_keep_real_calls_where_the_rows_would_differ(data):
    classifier = load_classifier()
    rows = classifier._encoder_rows(MAX_LEN, 1)
    classifier._rows = (MAX_LEN, rows + 1e-3)  # not the encoder's output: the check notices
    assert classifier.prepare_typed() is False
    row = data.dev.input_ids[0].astype(np.int64)
    assert np.array_equal(classifier.forward_alone(row), classifier._real_call(row))


def test_protocol_figures_reproduce_the_shipped_checkpoints_provenance(classifier, splits, preprocessor):
    claims, evidence = splits["dev"]
    verdicts = predict(classifier, encode(make_rows(claims, evidence, preprocessor), classifier.vocab))
    report = protocol_figures(
        {cid: c.label for cid, c in claims.items()},
        {cid: {p: v[p]["verdict"] for p in PROTOCOLS} for cid, v in verdicts.items()},
    )
    provenance = json.loads((ASSETS_DIR / PROVENANCE_FILE).read_text(encoding="utf-8"))
    for protocol in PROTOCOLS:
        result = report[protocol]
        confusion = np.array(result["confusion"])
        assert confusion.shape == (4, 4) and confusion.sum() == 154
        assert np.trace(confusion) == result["correct"] and result["accuracy"] == result["correct"] / 154
        # rows are gold labels
        gold_counts = [sum(c.label == label for c in claims.values()) for label in LABELS]
        assert confusion.sum(axis=1).tolist() == gold_counts
        assert provenance["accuracy_with_gold_evidence"]["dev"][protocol]["correct"] == result["correct"]
    assert report["notebook"]["accuracy"] == provenance["best_dev_accuracy"]
