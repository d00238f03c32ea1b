"""Training the classifier as the notebook did (notebook.md section 6), seeded.

The notebook's loop: CrossEntropyLoss, Adam lr 1e-4, 10 epochs, batches of 16 in train-file
order (no shuffle), dropout on; after each epoch, dev accuracy with gold evidence in batches of
16 in file order (eval mode, no gradients); the checkpoint with the best dev accuracy so far
(strictly greater) is kept. Its loss per epoch is the mean of the batch losses; its accuracies
are correct predictions over all examples (train accuracy measured with dropout on, during the
epoch).

What this port adds: a seed (torch, numpy, random) and a fixed number of CPU threads, so that
two runs with the same seed on one machine give identical weights; a JSON log.

Three variants (``constants.CLASSIFIER_VARIANTS``) share that loop, seed and data: ``notebook``
trains the notebook's model, ``intended`` the same model with its two bugs fixed
(``transformer.py``, ``fixed=True``), ``lstm`` the notebook's other model (``lstm.py``), which
the notebook trained with the same ``train_model``. With the same seed the two Transformers start
from the same initial weights.

Files written to the work folder (each variant has its own names, so one folder can hold both):

* ``classifier.safetensors`` / ``classifier_intended.safetensors`` / ``classifier_lstm.safetensors``: the best checkpoint
  (float32, the notebook's tensor names, the variant in its metadata);
* ``classifier_vocab.json``: the vocabulary the ids refer to (5,886 tokens, in id order; the same
  for both variants);
* ``training_log.json`` / ``training_log_intended.json`` / ``training_log_lstm.json``: settings and one record per epoch,
  rewritten after every epoch.
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from torch import nn
from tqdm import tqdm

from claimtrace import constants
from claimtrace.data.files import gold_passages, load_claims
from claimtrace.lib.build_files import write_atomic
from claimtrace.models.inputs import Encoded, Vocabulary, encode, gold_evidence, make_rows, save_vocab
from claimtrace.models.transformer import (
    TransformerClassifier,
    build_model,
    notebook_logits,
    save_checkpoint,
    torch_threads,
)
from claimtrace.pipeline.preprocess import Preprocessor

# --- Inputs ---------------------------------------------------------------------------------------


@dataclass
class TrainingData:
    vocab: Vocabulary
    train: Encoded
    dev: Encoded


def training_data(data_dir: Path) -> TrainingData:
    """Train and dev with gold evidence, and the vocabulary built from the train rows."""
    passages = gold_passages(data_dir)
    train_claims, dev_claims = load_claims("train", data_dir), load_claims("dev", data_dir)
    preprocessor = Preprocessor.of_data_dir(data_dir)
    train_rows = make_rows(train_claims, gold_evidence(train_claims, passages), preprocessor)
    dev_rows = make_rows(dev_claims, gold_evidence(dev_claims, passages), preprocessor)
    vocab = Vocabulary.fit(row.text for row in train_rows)
    return TrainingData(vocab, encode(train_rows, vocab), encode(dev_rows, vocab))


# --- Reproducibility ------------------------------------------------------------------------------


def seed_everything(seed: int) -> None:
    """Seed every generator a run touches and ask torch for deterministic algorithms."""
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    torch.use_deterministic_algorithms(True)


# --- The loop -------------------------------------------------------------------------------------


def evaluate(model: TransformerClassifier, data: Encoded, batch_size: int = constants.BATCH_SIZE) -> tuple[float, int]:
    """The notebook's eval_model: mean batch loss and number correct, batches in file order."""
    logits = notebook_logits(model, torch.from_numpy(data.input_ids), batch_size)
    labels = torch.from_numpy(data.labels)
    loss_fn = nn.CrossEntropyLoss()
    losses = [
        loss_fn(logits[start : start + batch_size], labels[start : start + batch_size]).item()
        for start in range(0, len(data), batch_size)
    ]
    correct = int((logits.argmax(dim=1) == labels).sum())
    return float(np.mean(losses)), correct


def train_epoch(
    model, data: Encoded, loss_fn, optimizer, batch_size: int = constants.BATCH_SIZE, progress: Callable | None = None
) -> tuple[float, int]:
    """The notebook's train_epoch: dropout on, one Adam step per batch of 16 in file order."""
    model.train()
    losses, correct = [], 0
    all_ids, all_labels = torch.from_numpy(data.input_ids), torch.from_numpy(data.labels)
    for start in range(0, len(data), batch_size):
        ids, labels = all_ids[start : start + batch_size], all_labels[start : start + batch_size]
        outputs = model(ids)
        loss = loss_fn(outputs, labels)
        correct += int((outputs.argmax(dim=1) == labels).sum())
        losses.append(loss.item())
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        if progress is not None:
            progress(len(labels), loss.item())
    return float(np.mean(losses)), correct


@dataclass
class TrainResult:
    model: TransformerClassifier  # the weights after the last epoch
    log: dict
    checkpoint: Path | None


def train(
    data: TrainingData,
    workdir: Path | None,
    seed: int = constants.SHIPPED_SEED,
    epochs: int = constants.EPOCHS,
    threads: int = constants.TORCH_THREADS,
    show_progress: bool = True,
    echo: Callable[[str], None] | None = None,
    variant: str = "notebook",
) -> TrainResult:
    """Train from scratch; keep the best dev checkpoint in ``workdir`` (None: keep nothing).

    Parameters
    ----------
    data : TrainingData
        Train and dev encoded: ids (n, 128), labels (n,).
    workdir : Path or None
        Where the checkpoint, vocabulary and log go.
    seed, epochs, threads : int
        The run's seed, number of epochs and torch CPU threads.
    show_progress : bool
        A progress bar per epoch.
    echo : callable, optional
        Receives one line per epoch.
    variant : {"notebook", "intended", "lstm"}
        The notebook's model, the same model with both bugs fixed (``fixed=True``), or the
        notebook's LSTM; the regime is the same.

    Returns
    -------
    TrainResult
        The model after the last epoch, the log, and the best checkpoint's path.
    """
    if variant not in constants.CLASSIFIER_VARIANTS:
        raise ValueError(f"unknown variant {variant!r}: expected one of {', '.join(constants.CLASSIFIER_VARIANTS)}")
    deterministic = torch.are_deterministic_algorithms_enabled()
    try:  # the thread count is pinned: float sums may depend on how work is split between threads
        with torch_threads(threads):
            seed_everything(seed)
            return _train(data, workdir, seed, epochs, threads, show_progress, echo, variant)
    finally:  # leave the process as it was (tests train in the same process as other tests)
        torch.use_deterministic_algorithms(deterministic)


def _train(data, workdir, seed, epochs, threads, show_progress, echo, variant) -> TrainResult:
    model = new_model(variant, len(data.vocab))
    loss_fn = nn.CrossEntropyLoss()
    optimizer = torch.optim.Adam(model.parameters(), lr=constants.LEARNING_RATE)

    workdir = Path(workdir) if workdir is not None else None
    checkpoint = workdir / constants.CHECKPOINT_FILES[variant] if workdir is not None else None
    if workdir is not None:
        save_vocab(data.vocab, workdir / constants.VOCAB_FILE)
    log = _new_log(data, variant, seed, epochs, threads)
    best_correct = 0  # the notebook's best_accuracy = 0 and strict `>`
    started = time.perf_counter()
    for epoch in range(1, epochs + 1):
        epoch_start = time.perf_counter()
        record = _epoch(model, data, loss_fn, optimizer, epoch, epochs, show_progress)
        record["saved"] = record["dev_correct"] > best_correct
        if record["saved"]:
            best_correct = record["dev_correct"]
            log["best_epoch"], log["best_dev_accuracy"] = epoch, record["dev_accuracy"]
            if checkpoint is not None:
                save_checkpoint(
                    model,
                    checkpoint,
                    metadata={
                        "variant": variant,
                        "seed": str(seed),
                        "epoch": str(epoch),
                        "dev_correct": str(record["dev_correct"]),
                        "dev_claims": str(len(data.dev)),
                    },
                )
        record["seconds"] = round(time.perf_counter() - epoch_start, 2)
        log["history"].append(record)
        log["seconds"] = round(time.perf_counter() - started, 2)
        if echo is not None:
            echo(_epoch_line(record, epochs, len(data.dev)))
        if workdir is not None:
            write_atomic(workdir / constants.TRAINING_LOG_FILES[variant], json.dumps(log, indent=1) + "\n")
    return TrainResult(model, log, checkpoint)


def new_model(variant: str, vocab_size: int):
    """A freshly initialised model of ``variant``. Called right after seeding: the two
    Transformers build their modules in the same order, so they start from the same weights."""
    if variant == "lstm":
        from claimtrace.models.lstm import build_lstm

        return build_lstm(vocab_size)
    return build_model(vocab_size, fixed=variant == "intended")


def _new_log(data: TrainingData, variant: str, seed: int, epochs: int, threads: int) -> dict:
    """The run's settings; its epochs are added as they end, and the best one so far."""
    return {
        "variant": variant,
        "seed": seed,
        "epochs": epochs,
        "threads": threads,
        "torch": torch.__version__,
        "train_claims": len(data.train),
        "dev_claims": len(data.dev),
        "vocab_size": len(data.vocab),
        "batch_size": constants.BATCH_SIZE,
        "learning_rate": constants.LEARNING_RATE,
        "history": [],
        "best_epoch": None,
        "best_dev_accuracy": None,
    }


def _epoch(model, data: TrainingData, loss_fn, optimizer, epoch: int, epochs: int, show_progress: bool) -> dict:
    """One epoch of training (a progress bar of its claims), then dev accuracy: the epoch's
    record in the log, but whether it was saved and how long it took."""
    bar = tqdm(
        total=len(data.train), desc=f"epoch {epoch}/{epochs}", unit="claim", disable=not show_progress, leave=False
    )

    def progress(n: int, loss: float) -> None:
        bar.update(n)
        bar.set_postfix(loss=f"{loss:.4f}")

    train_loss, train_correct = train_epoch(model, data.train, loss_fn, optimizer, progress=progress)
    bar.close()
    dev_loss, dev_correct = evaluate(model, data.dev)
    return {
        "epoch": epoch,
        "train_loss": train_loss,
        "train_accuracy": train_correct / len(data.train),
        "train_correct": train_correct,
        "dev_loss": dev_loss,
        "dev_accuracy": dev_correct / len(data.dev),
        "dev_correct": dev_correct,
    }


def _epoch_line(record: dict, epochs: int, dev_claims: int) -> str:
    """What ``claimtrace train`` prints when an epoch ends."""
    return (
        f"epoch {record['epoch']:2d}/{epochs}  train loss {record['train_loss']:.4f} acc {record['train_accuracy']:.4f}  "
        f"dev loss {record['dev_loss']:.4f} acc {record['dev_accuracy']:.4f} ({record['dev_correct']}/{dev_claims})"
        f"{'  saved' if record['saved'] else ''}  {record['seconds']:.0f}s"
    )
