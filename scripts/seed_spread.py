"""One seed is not the model: retrain the notebook's Transformer and its LSTM under several seeds
and write how far their dev accuracies spread to src/claimtrace/assets/seed_spread.json.

    python scripts/seed_spread.py --workdir DIR                  # both models, seeds 42 1 2 3 4
    python scripts/seed_spread.py --workdir DIR --models lstm --seeds 42 1 --epochs 10

Each model x seed is trained from scratch by ``claimtrace.models.train`` (the notebook's regime:
10 epochs, Adam 1e-4, batches of 16 in file order, the best dev epoch kept), one at a time. Its
best checkpoint is then scored on dev with gold evidence and with the evidence the build in
``--workdir`` retrieved, alone and in the notebook's batches of 16. The file is rewritten after
every model x seed, so a killed run resumes where it stopped (a pair already in the file with
the same epochs is not trained again). The seeds are the 2024 site's (42, 1, 2, 3, 4).

The file holds, per model: each seed's run (``best_epoch``, ``seconds``, ``curve``: train
loss and accuracy and dev accuracy per epoch, and ``dev``: ``{evidence: {protocol: {"correct",
"claims", "accuracy", "interval"}}}``, the interval Wilson's) and ``spread``: min, max, mean and
SD over the seeds present of each dev accuracy, with the seeds it is over. Training takes about
1-2 minutes an epoch for either model on a shared 2-core machine: the whole run is hours.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

from claimtrace import constants  # noqa: E402

os.environ.setdefault("OMP_WAIT_POLICY", constants.OMP_WAIT_POLICY)  # before torch is imported
from claimtrace.evaluation.seed_spread import EVIDENCE, SEED_SPREAD_PATH, SEEDS, describe  # noqa: E402
from claimtrace.lib.build_files import write_atomic  # noqa: E402

#: The models retrained, by the name the file uses -> the training variant.
MODELS = {"transformer": "notebook", "lstm": "lstm"}
#: The file the site reads (claimtrace.evaluation.seed_spread), where the seeds (the 2024
#: site's, its web/data/seed-spread.json) are named too.
OUTPUT = SEED_SPREAD_PATH


def score(model, encoded) -> dict:
    """Dev accuracy of a trained model on one evidence source, both protocols, each with its
    Wilson interval: ``{protocol: {"correct", "claims", "accuracy", "interval"}}``."""
    import torch

    from claimtrace.evaluation.statistics import wilson
    from claimtrace.models.transformer import alone_logits, notebook_logits, torch_threads

    ids, labels = torch.from_numpy(encoded.input_ids), encoded.labels
    out = {}
    with torch_threads(1):
        for protocol, run in (("alone", alone_logits), ("notebook", notebook_logits)):
            correct = int((run(model, ids).argmax(1).numpy() == labels).sum())
            interval = wilson(correct, len(labels))
            out[protocol] = {
                "correct": correct,
                "claims": len(labels),
                "accuracy": correct / len(labels),
                "interval": [interval.lower, interval.upper],
            }
    return out


def run_one(data, retrieved, name: str, seed: int, epochs: int, threads: int) -> dict:
    """Train one model under one seed, keep its best dev epoch, score it on both evidences."""
    from claimtrace.models.lstm import load_lstm_model
    from claimtrace.models.train import train
    from claimtrace.models.transformer import load_model

    variant = MODELS[name]
    with tempfile.TemporaryDirectory(prefix="seed-spread-") as folder:
        result = train(
            data, Path(folder), seed=seed, epochs=epochs, threads=threads, show_progress=False, variant=variant
        )
        log = result.log
        best = result.checkpoint
        if best is None or not best.is_file():  # no epoch beat 0 correct: the last weights
            model = result.model.eval()
        else:
            model = load_lstm_model(best) if variant == "lstm" else load_model(best)
        dev = {"gold": score(model, data.dev), "retrieved": score(model, retrieved)}
    return {
        "seed": seed,
        "epochs": epochs,
        "threads": threads,
        "best_epoch": log["best_epoch"],
        "seconds": log["seconds"],
        "curve": [
            {
                "epoch": h["epoch"],
                "train_loss": h["train_loss"],
                "train_accuracy": h["train_accuracy"],
                "dev_accuracy": h["dev_accuracy"],
                "seconds": h["seconds"],
            }
            for h in log["history"]
        ],
        "dev": dev,
    }


def spread(runs: list[dict]) -> dict:
    """min, max, mean and SD (n - 1; 0 for one seed) over the runs of each dev accuracy, as the
    reader recomputes them (:func:`claimtrace.evaluation.seed_spread.describe`):
    ``{evidence: {protocol: {"min", "max", "mean", "sd", "seeds"}}}``."""
    out: dict = {}
    for evidence in EVIDENCE:
        for protocol in constants.PROTOCOLS:
            described = describe([run["dev"][evidence][protocol]["accuracy"] for run in runs])
            out.setdefault(evidence, {})[protocol] = {
                **{key: value for key, value in described.items() if key != "n"},
                "seeds": [run["seed"] for run in runs],
            }
    return out


def load(path: Path) -> dict:
    if path.is_file():
        return json.loads(path.read_text(encoding="utf-8"))
    return {}


def write(path: Path, document: dict) -> None:
    """Each model's spread over the seeds present, then the file, atomically."""
    for entry in document["models"].values():
        runs = [entry["runs"][key] for key in sorted(entry["runs"], key=int)]
        entry["spread"] = spread(runs) if runs else None
    write_atomic(path, json.dumps(document, indent=1) + "\n")


def new_document(workdir: Path) -> dict:
    import torch

    return {
        "what": "The notebook's Transformer and its LSTM retrained under several seeds by claimtrace "
        "(scripts/seed_spread.py): dev accuracy of each run's best epoch with gold evidence and with "
        "the evidence a build retrieved, alone and in the notebook's batches of 16.",
        "regenerate": "python scripts/seed_spread.py --workdir BUILD",
        # relative to the repository whatever the folder the script ran in: no machine's path kept
        "retrieved_from": os.path.relpath(Path(workdir).resolve(), REPO),
        "libraries": {"python": platform.python_version(), "torch": torch.__version__},
        "machine": platform.machine(),
        "models": {},
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workdir", type=Path, required=True, help="A finished build (its retrieved dev inputs).")
    parser.add_argument("--models", nargs="+", choices=tuple(MODELS), default=list(MODELS))
    parser.add_argument("--seeds", nargs="+", type=int, default=list(SEEDS))
    parser.add_argument("--epochs", type=int, default=constants.EPOCHS)
    parser.add_argument("--threads", type=int, default=constants.TORCH_THREADS)
    parser.add_argument("--output", type=Path, default=OUTPUT)
    parser.add_argument("--data", type=Path, default=None)
    args = parser.parse_args(argv)

    from claimtrace.data.files import find_data_dir
    from claimtrace.models.train import training_data
    from claimtrace.workdir.reader import BuildReader

    data_dir = find_data_dir(args.data)
    data = training_data(data_dir)
    retrieved = BuildReader(args.workdir, data_dir).inputs("dev", "retrieved")
    run_all(data, retrieved, args.models, args.seeds, args.epochs, args.threads, args.output, args.workdir)


def run_all(data, retrieved, models, seeds, epochs: int, threads: int, output: Path, workdir: Path) -> dict:
    """Every model x seed not yet in ``output`` with these epochs, one at a time, the file
    rewritten after each."""
    if data.dev.claim_ids != retrieved.claim_ids:
        raise SystemExit(f"{workdir}: its dev claims are not the training data's")
    document = load(output) or new_document(workdir)
    for name in models:
        entry = document["models"].setdefault(name, {"variant": MODELS[name], "runs": {}})
        for seed in seeds:
            done = entry["runs"].get(str(seed))
            if done is not None and done["epochs"] == epochs:
                continue
            started = time.perf_counter()
            entry["runs"][str(seed)] = run_one(data, retrieved, name, seed, epochs, threads)
            write(output, document)
            dev = entry["runs"][str(seed)]["dev"]
            print(
                f"{name} seed {seed}: best epoch {entry['runs'][str(seed)]['best_epoch']}, dev gold "
                f"{dev['gold']['notebook']['correct']}, retrieved {dev['retrieved']['notebook']['correct']} "
                f"(notebook protocol); {time.perf_counter() - started:.0f}s",
                flush=True,
            )
    return document


if __name__ == "__main__":
    main()
