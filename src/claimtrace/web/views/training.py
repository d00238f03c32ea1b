"""The training logs of the notebook's two models, epoch by epoch: loss and accuracy, train and
dev, of the build's Transformer checkpoint and of the shipped LSTM (their provenance's
``history``), each beside the log the notebook printed for it (``claimtrace.course``: the
Transformer's printed accuracies, the LSTM's printed losses and accuracies). Read, never
recomputed; each accuracy with its Wilson interval (a count of claims); a loss has none: it is
the mean over the epoch's batches, and no per-claim loss was kept."""

from __future__ import annotations

import json

from claimtrace import course
from claimtrace.assets import ASSETS_DIR
from claimtrace.constants import PROVENANCE_FILES
from claimtrace.errors import Missing
from claimtrace.evaluation import statistics as S
from claimtrace.workdir.reader import BuildReader

#: The figures of an epoch: (key, what it is called).
FIGURES = (
    ("train_loss", "train loss"),
    ("dev_loss", "dev loss"),
    ("train_accuracy", "train accuracy"),
    ("dev_accuracy", "dev accuracy"),
)

#: Where the notebook printed each model's log.
PRINTED_TRANSFORMER = "notebook.md §6, the original run's train and dev accuracies"
PRINTED_LSTM = "the notebook's cell “Train the LSTM model”, its losses and accuracies"


def _printed_transformer(epoch: int) -> dict:
    train, dev = course.ORIGINAL_LOG.get(epoch, (None, None))
    return {"train_loss": None, "dev_loss": None, "train_accuracy": train, "dev_accuracy": dev}


def _printed_lstm(epoch: int) -> dict:
    row = course.ORIGINAL_LSTM_LOG.get(epoch)
    if row is None:
        return dict.fromkeys(key for key, _ in FIGURES)
    return dict(zip(("train_loss", "train_accuracy", "dev_loss", "dev_accuracy"), row, strict=True))


def _model(name: str, title: str, provenance: dict, printed, claims: dict[str, int], source: str) -> dict:
    """One model's log: each epoch's figures, the accuracies' Wilson intervals, the printed log's."""
    epochs = []
    for h in provenance["history"]:
        entry = {key: h.get(key) for key, _ in FIGURES} | {"epoch": int(h["epoch"]), "saved": h.get("saved")}
        for split in ("train", "dev"):
            correct = h.get(f"{split}_correct")
            entry[f"{split}_correct"] = correct
            entry[f"{split}_interval"] = None if correct is None else S.wilson(correct, claims[split]).to_dict()
        entry["notebook"] = printed(entry["epoch"])
        epochs.append(entry)
    return {
        "model": name,
        "title": title,
        "best_epoch": provenance.get("best_epoch"),
        "seed": provenance.get("seed"),
        "claims": claims,
        "printed": source,
        "epochs": epochs,
    }


def training_logs(build: BuildReader) -> dict:
    """``{"figures": [[key, name]], "models": [model]}``: the Transformer the build used (its
    checkpoint's provenance; none for a trained checkpoint without one) and the shipped LSTM; a
    model is ``{"model", "title", "best_epoch", "seed", "claims": {"train", "dev"}, "printed",
    "epochs": [{"epoch", "saved", "train_loss", "dev_loss", "train_accuracy", "dev_accuracy",
    "train_correct", "dev_correct", "train_interval", "dev_interval", "notebook": {figure}}]}``."""
    try:
        claims = {split: len(build.claims(split)) for split in ("train", "dev")}
        transformer = course.checkpoint_provenance(build.checkpoint_dir())
    except Missing:
        return {"figures": [list(f) for f in FIGURES], "models": []}
    models = []
    if transformer is not None and transformer.get("history"):
        models.append(
            _model("transformer", "the Transformer", transformer, _printed_transformer, claims, PRINTED_TRANSFORMER)
        )
    lstm_path = ASSETS_DIR / PROVENANCE_FILES["lstm"]
    if lstm_path.is_file():
        lstm = json.loads(lstm_path.read_text(encoding="utf-8"))
        models.append(_model("lstm", "the LSTM", lstm, _printed_lstm, claims, PRINTED_LSTM))
    return {"figures": [list(f) for f in FIGURES], "models": models}
