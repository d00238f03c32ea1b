"""Regenerate the shipped classifier files in src/claimtrace/assets/.

    python scripts/train_checkpoint.py                      # train with the shipped seed, export
    python scripts/train_checkpoint.py --seed 3             # another seed
    python scripts/train_checkpoint.py --from-workdir DIR   # export a finished `claimtrace train` run
    python scripts/train_checkpoint.py --variant intended --threads 1   # the intended model

Writes (--variant notebook, the default):
  classifier.safetensors       best-dev checkpoint, float32, the notebook's tensor names
  classifier_vocab.json        the 5,886 tokens its ids refer to
  classifier_table.safetensors g (5,886 x 4) and bias, float64 and float32 (claimtrace.explain.verdict)
  classifier_provenance.json   seed, settings, per-epoch log, best epoch, dev accuracies

Writes (--variant intended: the same model with both bugs fixed, trained the same way):
  classifier_intended.safetensors       best-dev checkpoint, float16 (exactness not claimed)
  classifier_intended_provenance.json   seed, settings, per-epoch log, best epoch, accuracies of
                                        the float16 checkpoint, the notebook model's curve beside
Writes (--variant lstm: the notebook's other model, its LSTM, trained the same way):
  classifier_lstm.safetensors           best-dev checkpoint, float16 (exactness not claimed)
  classifier_lstm_provenance.json       seed, settings, per-epoch log beside the notebook's printed
                                        LSTM log, best epoch, seconds, accuracies of the float16
                                        checkpoint
Both check that the run's vocabulary is the shipped classifier_vocab.json and leave the notebook
model's files alone.

Training is deterministic for a given seed on one machine with the same thread count; another
CPU or thread count may give other weights (float sums in another order).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

from claimtrace import constants  # noqa: E402

os.environ.setdefault("OMP_WAIT_POLICY", constants.OMP_WAIT_POLICY)  # before torch is imported
from claimtrace.course import ORIGINAL_LOG  # noqa: E402  (the one copy of the 2024 log)
from claimtrace.data.files import find_data_dir  # noqa: E402
from claimtrace.lib.build_files import write_atomic  # noqa: E402


def gold_accuracies(classifier, data_dir: Path) -> dict:
    """The classifier's figures with gold evidence on train and dev, per protocol."""
    from claimtrace.data.files import gold_passages, load_claims
    from claimtrace.models.inputs import encode, gold_evidence, make_rows
    from claimtrace.models.predict import predict, protocol_figures
    from claimtrace.pipeline.preprocess import Preprocessor

    passages = gold_passages(data_dir)
    preprocessor = Preprocessor.of_data_dir(data_dir)
    accuracies = {}
    for split in ("train", "dev"):
        claims = load_claims(split, data_dir)
        rows = make_rows(claims, gold_evidence(claims, passages), preprocessor)
        verdicts = predict(classifier, encode(rows, classifier.vocab))
        accuracies[split] = protocol_figures(
            {cid: c.label for cid, c in claims.items()},
            {cid: {p: v[p]["verdict"] for p in constants.PROTOCOLS} for cid, v in verdicts.items()},
        )
    return accuracies


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seed", type=int, default=constants.SHIPPED_SEED)
    parser.add_argument("--epochs", type=int, default=constants.EPOCHS)
    parser.add_argument("--threads", type=int, default=constants.TORCH_THREADS)
    parser.add_argument("--workdir", type=Path, default=REPO / "work" / "classifier")
    parser.add_argument("--from-workdir", type=Path, default=None, help="Skip training: export this run.")
    parser.add_argument("--assets", type=Path, default=REPO / "src" / "claimtrace" / "assets")
    parser.add_argument("--data", type=Path, default=None)
    parser.add_argument("--note", default=None, help="Free text stored in the provenance (e.g. machine load).")
    parser.add_argument(
        "--calibration",
        type=float,
        default=None,
        help="Seconds of ../shared/bench/calibrate.py measured beside the training (stored with its time).",
    )
    parser.add_argument(
        "--variant",
        choices=constants.CLASSIFIER_VARIANTS,
        default="notebook",
        help="notebook (default), intended (both bugs fixed) or lstm (float16 checkpoints).",
    )
    args = parser.parse_args()

    from claimtrace.models.predict import load_classifier
    from claimtrace.models.table import export_table, save_table, sha256_file
    from claimtrace.models.train import train, training_data

    data_dir = find_data_dir(args.data)
    if args.from_workdir is None:
        workdir = args.workdir
        started = time.perf_counter()
        data = training_data(data_dir)
        train(data, workdir, seed=args.seed, epochs=args.epochs, threads=args.threads, echo=print, variant=args.variant)
        print(f"trained in {time.perf_counter() - started:.0f}s (data included)")
    else:
        workdir = args.from_workdir
    log = json.loads((workdir / constants.TRAINING_LOG_FILES[args.variant]).read_text(encoding="utf-8"))
    if args.variant == "intended":
        export_intended(workdir, log, args.assets, data_dir, args.note)
        return
    if args.variant == "lstm":
        export_lstm(workdir, log, args.assets, data_dir, args.note, args.calibration)
        return

    assets = args.assets
    assets.mkdir(parents=True, exist_ok=True)
    for name in (constants.CHECKPOINT_FILE, constants.VOCAB_FILE):
        shutil.copyfile(workdir / name, assets / name)
    classifier = load_classifier(assets)  # loads back what was just copied
    table = export_table(classifier.model)
    save_table(
        table,
        assets / constants.TABLE_FILE,
        metadata={
            "checkpoint_sha256": sha256_file(assets / constants.CHECKPOINT_FILE),
            "vocab_sha256": sha256_file(assets / constants.VOCAB_FILE),
        },
    )

    accuracies = gold_accuracies(classifier, data_dir)
    recorded = log["history"][log["best_epoch"] - 1]["dev_correct"]
    if accuracies["dev"]["notebook"]["correct"] != recorded:
        raise SystemExit(
            f"dev accuracy of the exported checkpoint ({accuracies['dev']['notebook']['correct']}) "
            f"differs from the training log's ({recorded})"
        )

    provenance = {
        "what": "The notebook's Transformer classifier retrained by claimtrace (notebook.md section 6).",
        "regenerate": f"python scripts/train_checkpoint.py --seed {log['seed']} --epochs {log['epochs']} "
        f"--threads {log['threads']}",
        "seed": log["seed"],
        "epochs": log["epochs"],
        "threads": log["threads"],
        "torch": log["torch"],
        "python": platform.python_version(),
        "machine": platform.machine(),
        "processor": platform.processor() or None,
        "training_seconds": log.get("seconds"),
        "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY"),
        "note": args.note,
        "best_epoch": log["best_epoch"],
        "best_dev_accuracy": log["best_dev_accuracy"],
        "history": log["history"],
        "original_run": {str(k): {"train_accuracy": v[0], "dev_accuracy": v[1]} for k, v in ORIGINAL_LOG.items()},
        "explainer_2026_weights": {"dev_gold_notebook": "89/154", "dev_retrieved_notebook": "59/154"},
        "accuracy_with_gold_evidence": accuracies,
        "files": {
            name: sha256_file(assets / name)
            for name in (constants.CHECKPOINT_FILE, constants.VOCAB_FILE, constants.TABLE_FILE)
        },
        "labels": list(constants.LABELS),
    }
    write_atomic(assets / constants.PROVENANCE_FILE, json.dumps(provenance, indent=1) + "\n")
    print(json.dumps({k: provenance[k] for k in ("seed", "best_epoch", "best_dev_accuracy")}))
    for split, by in accuracies.items():
        print(split, {p: f"{v['correct']}/{v['claims']} = {v['accuracy']:.4f}" for p, v in by.items()})


# --- The intended model ---------------------------------------------------------------------------


def library_versions() -> dict[str, str]:
    import numpy
    import safetensors
    import torch

    return {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "numpy": numpy.__version__,
        "safetensors": safetensors.__version__,
    }


def float16_accuracies(model, data) -> dict:
    """Accuracy of a loaded (float16 -> float32) model whose claims never meet their batch-mates
    (the intended one, the LSTM) with gold evidence, train and dev, in both protocols; they
    differ only by float noise."""
    import torch

    from claimtrace.models.predict import accuracy_and_confusion
    from claimtrace.models.transformer import alone_logits, notebook_logits

    out = {}
    for split, encoded in (("train", data.train), ("dev", data.dev)):
        out[split] = {}
        labels = [constants.LABELS[i] for i in encoded.labels.tolist()]
        for protocol, run in (("alone", alone_logits), ("notebook", notebook_logits)):
            with torch.no_grad():
                predicted = run(model, torch.from_numpy(encoded.input_ids)).argmax(1).tolist()
            out[split][protocol] = accuracy_and_confusion(labels, [constants.LABELS[i] for i in predicted])
    return out


def notebook_curve(assets: Path) -> dict:
    """The shipped notebook model's curve, for the comparison."""
    shipped = json.loads((assets / constants.PROVENANCE_FILE).read_text(encoding="utf-8"))
    return {
        "best_epoch": shipped["best_epoch"],
        "best_dev_accuracy": shipped["best_dev_accuracy"],
        "curve": {
            str(h["epoch"]): {"train_accuracy": h["train_accuracy"], "dev_accuracy": h["dev_accuracy"]}
            for h in shipped["history"]
        },
    }


def export_intended(workdir: Path, log: dict, assets: Path, data_dir: Path, note: str | None) -> None:
    """Ship the intended run's best checkpoint in float16 with its provenance."""
    from claimtrace.models.intended import load_intended_model, save_float16_checkpoint
    from claimtrace.models.table import sha256_file
    from claimtrace.models.train import training_data
    from claimtrace.models.transformer import load_state_dict

    check_run(workdir, log, assets, "intended")
    source = workdir / constants.CHECKPOINT_FILES["intended"]
    target = assets / constants.CHECKPOINT_FILES["intended"]
    metadata = {
        "variant": "intended",
        "seed": str(log["seed"]),
        "epoch": str(log["best_epoch"]),
        "exactness": "not claimed: float16 copy of the float32 training checkpoint",
    }
    save_float16_checkpoint(load_state_dict(source), target, metadata=metadata)
    model = load_intended_model(target)  # loads back what was just written
    accuracies = float16_accuracies(model, training_data(data_dir))
    recorded = log["history"][log["best_epoch"] - 1]["dev_correct"]
    shipped_dev = accuracies["dev"]["notebook"]["correct"]
    provenance = {
        "what": "The intended classifier: the notebook's Transformer with its two bugs fixed (batch-first "
        "attention, positional encoding by batch position) and nothing else, trained by claimtrace "
        "exactly as the notebook's model (notebook.md section 6; claimtrace.models.transformer, fixed=True).",
        "exactness": "Not claimed. The checkpoint is a float16 copy of the float32 best-dev weights (half the "
        "size); logits differ from the float32 weights' in the last digits and a near-tie verdict "
        "may flip. The accuracies below are the float16 checkpoint's own, loaded back in float32.",
        "regenerate": f"python scripts/train_checkpoint.py --variant intended --seed {log['seed']} "
        f"--epochs {log['epochs']} --threads {log['threads']}",
        "variant": "intended",
        "dtype": "float16",
        "seed": log["seed"],
        "epochs": log["epochs"],
        "threads": log["threads"],
        "batch_size": log["batch_size"],
        "learning_rate": log["learning_rate"],
        "libraries": library_versions(),
        "machine": platform.machine(),
        "processor": platform.processor() or None,
        "training_seconds": log.get("seconds"),
        "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY"),
        "note": note,
        "best_epoch": log["best_epoch"],
        "best_dev_accuracy": log["best_dev_accuracy"],
        "best_dev_correct_float32": recorded,
        "best_dev_correct_float16": shipped_dev,
        "history": log["history"],
        "accuracy_with_gold_evidence": accuracies,
        "notebook_model": notebook_curve(assets),
        "files": {
            name: sha256_file(assets / name) for name in (constants.CHECKPOINT_FILES["intended"], constants.VOCAB_FILE)
        },
        "labels": list(constants.LABELS),
    }
    write_atomic(assets / constants.PROVENANCE_FILES["intended"], json.dumps(provenance, indent=1) + "\n")
    print(json.dumps({k: provenance[k] for k in ("seed", "best_epoch", "best_dev_accuracy")}))
    print(
        f"dev, float16 checkpoint: {shipped_dev}/{accuracies['dev']['notebook']['claims']} "
        f"(training log, float32: {recorded}); {target.stat().st_size} bytes"
    )


def check_run(workdir: Path, log: dict, assets: Path, variant: str) -> None:
    """The run is of ``variant`` and its ids refer to the shipped vocabulary (every checkpoint's
    do: one input serves them all)."""
    from claimtrace.models.table import sha256_file

    if log.get("variant") != variant:
        raise SystemExit(f"{workdir}: not a run of the {variant} model")
    if sha256_file(workdir / constants.VOCAB_FILE) != sha256_file(assets / constants.VOCAB_FILE):
        raise SystemExit(f"{workdir / constants.VOCAB_FILE} differs from the shipped {constants.VOCAB_FILE}")


# --- The LSTM -------------------------------------------------------------------------------------


def lstm_beside_notebook(history: list[dict]) -> list[dict]:
    """Each epoch of this run beside the notebook's printed LSTM log (course.ORIGINAL_LSTM_LOG)."""
    from claimtrace.course import ORIGINAL_LSTM_LOG

    rows = []
    for record in history:
        printed = ORIGINAL_LSTM_LOG.get(record["epoch"])
        rows.append(
            {
                "epoch": record["epoch"],
                "train_loss": round(record["train_loss"], 4),
                "train_accuracy": round(record["train_accuracy"], 4),
                "dev_accuracy": round(record["dev_accuracy"], 4),
                "notebook": None
                if printed is None
                else dict(zip(("train_loss", "train_accuracy", "dev_loss", "dev_accuracy"), printed, strict=True)),
            }
        )
    return rows


def export_lstm(
    workdir: Path, log: dict, assets: Path, data_dir: Path, note: str | None, calibration: float | None
) -> None:
    """Ship the LSTM run's best checkpoint in float16 with its provenance."""
    from claimtrace.models.intended import save_float16_checkpoint
    from claimtrace.models.lstm import load_lstm_model
    from claimtrace.models.table import sha256_file
    from claimtrace.models.train import training_data
    from claimtrace.models.transformer import load_state_dict

    check_run(workdir, log, assets, "lstm")
    target = assets / constants.CHECKPOINT_FILES["lstm"]
    metadata = {
        "variant": "lstm",
        "seed": str(log["seed"]),
        "epoch": str(log["best_epoch"]),
        "exactness": "not claimed: float16 copy of the float32 training checkpoint",
    }
    save_float16_checkpoint(load_state_dict(workdir / constants.CHECKPOINT_FILES["lstm"]), target, metadata=metadata)
    accuracies = float16_accuracies(load_lstm_model(target), training_data(data_dir))
    recorded = log["history"][log["best_epoch"] - 1]["dev_correct"]
    provenance = {
        "what": "The notebook's LSTM (its cell 'LSTM Classification Model': Embedding, LSTM(256, 256, 4, "
        "batch_first=True, dropout=0.1), dropout, Linear on the last of the 128 positions), trained by "
        "claimtrace with the notebook's train_model regime (claimtrace.models.lstm).",
        "exactness": "Not claimed. The checkpoint is a float16 copy of the float32 best-dev weights; the "
        "accuracies below are the float16 checkpoint's own, loaded back in float32.",
        "regenerate": f"python scripts/train_checkpoint.py --variant lstm --seed {log['seed']} "
        f"--epochs {log['epochs']} --threads {log['threads']}",
        "variant": "lstm",
        "dtype": "float16",
        "seed": log["seed"],
        "epochs": log["epochs"],
        "threads": log["threads"],
        "batch_size": log["batch_size"],
        "learning_rate": log["learning_rate"],
        "libraries": library_versions(),
        "machine": platform.machine(),
        "processor": platform.processor() or None,
        "training_seconds": log.get("seconds"),
        "calibration": {
            "seconds": calibration,
            "command": "NLTK_DATA=../shared/data/nltk_data python ../shared/bench/calibrate.py ../shared/data",
        },
        "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY"),
        "note": note,
        "best_epoch": log["best_epoch"],
        "best_dev_accuracy": log["best_dev_accuracy"],
        "best_dev_correct_float32": recorded,
        "best_dev_correct_float16": accuracies["dev"]["notebook"]["correct"],
        "history": log["history"],
        "beside_the_notebook": lstm_beside_notebook(log["history"]),
        "accuracy_with_gold_evidence": accuracies,
        "files": {
            name: sha256_file(assets / name) for name in (constants.CHECKPOINT_FILES["lstm"], constants.VOCAB_FILE)
        },
        "labels": list(constants.LABELS),
    }
    write_atomic(assets / constants.PROVENANCE_FILES["lstm"], json.dumps(provenance, indent=1) + "\n")
    print(json.dumps({k: provenance[k] for k in ("seed", "best_epoch", "best_dev_accuracy")}))
    print(f"dev, float16 checkpoint: {provenance['best_dev_correct_float16']}/154 (training log: {recorded})")


if __name__ == "__main__":
    main()
