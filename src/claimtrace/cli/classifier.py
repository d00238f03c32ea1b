"""The classifier's commands: train it (``train``), score its verdicts (``evaluate-classifier``)
and explain one (``explain``)."""

from __future__ import annotations

from pathlib import Path

import click

from claimtrace.cli.options import (
    LABELLED_SPLIT,
    checkpoint_option,
    data_dir,
    open_build,
    print_json,
    split_option,
    workdir_option,
)
from claimtrace.constants import CLASSIFIER_VARIANTS, EPOCHS, LABELS, PROTOCOLS, SHIPPED_SEED, TORCH_THREADS
from claimtrace.errors import DataError

#: Evidence sources the classifier commands accept: the gold passages, or the build's retrieved ones.
_EVIDENCE_SOURCES = ("gold", "retrieved")


@click.command("train")
@checkpoint_option("Where to write the checkpoint, classifier_vocab.json and the training log.", required=True)
@click.option("--seed", type=int, default=None, help="Seed (default: the shipped checkpoint's).")
@click.option("--epochs", type=click.IntRange(min=1), default=None, help="Epochs (default: the notebook's 10).")
@click.option("--threads", type=click.IntRange(min=1), default=None, help="Torch CPU threads (default: 2).")
@click.option("--no-progress", is_flag=True, help="No progress bar.")
@click.option(
    "--variant",
    type=click.Choice(CLASSIFIER_VARIANTS),
    default="notebook",
    show_default=True,
    help="The notebook's model, the intended one (both bugs fixed; writes "
    "classifier_intended.safetensors and training_log_intended.json), or the notebook's LSTM "
    "(classifier_lstm.safetensors, training_log_lstm.json).",
)
@click.pass_context
def train_command(
    ctx: click.Context,
    checkpoint: str,
    seed: int | None,
    epochs: int | None,
    threads: int | None,
    no_progress: bool,
    variant: str,
) -> None:
    """Train the notebook's classifier (gold evidence), or with --variant intended the same model
    with its two bugs fixed, or with --variant lstm the notebook's LSTM, the same way; keep the
    best dev checkpoint."""
    from claimtrace.models.train import train, training_data

    data = training_data(data_dir(ctx))
    result = train(
        data,
        Path(checkpoint),
        seed=SHIPPED_SEED if seed is None else seed,
        epochs=EPOCHS if epochs is None else epochs,
        threads=TORCH_THREADS if threads is None else threads,
        show_progress=not no_progress,
        echo=click.echo,
        variant=variant,
    )
    log = result.log
    click.echo(
        f"best epoch {log['best_epoch']}: dev accuracy {log['best_dev_accuracy']:.4f}; "
        f"{log['seconds']:.0f}s; checkpoint {result.checkpoint}"
    )


@click.command("evaluate-classifier")
@split_option(LABELLED_SPLIT)
@workdir_option()
@checkpoint_option("Evaluate this trained checkpoint on the build's inputs (default: the build's own verdicts).")
@click.option(
    "--evidence",
    "sources",
    type=click.Choice(_EVIDENCE_SOURCES),
    multiple=True,
    help="Evidence sources to report (default: both).",
)
@click.option("--per-claim", is_flag=True, help="Also list every claim's verdicts.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.pass_context
def evaluate_classifier_command(
    ctx: click.Context,
    split: str,
    workdir: str,
    checkpoint: str | None,
    sources: tuple[str, ...],
    per_claim: bool,
    as_json: bool,
) -> None:
    """Classifier accuracy for {evidence} x {alone, notebook}: alone = each claim as a batch of
    one (the exact table); notebook = batches of 16 in file order, as the notebook ran it.
    Evidence: the gold passages, and the passages the build retrieved."""
    from claimtrace.workdir.reader import protocol_verdicts, source_figures

    build = open_build(ctx, workdir)
    claims = build.claims(split)
    sources = sources or _EVIDENCE_SOURCES
    classifier_name, verdicts = _verdicts_of(build, split, checkpoint, sources)
    report = {"split": split, "checkpoint": classifier_name, "labels": list(LABELS), "evidence": {}}
    for source in sources:
        report["evidence"][source] = source_figures(claims, verdicts, source)
        if per_claim:
            report.setdefault("verdicts", {})[source] = {
                cid: {"label": claim.label, **protocol_verdicts(verdicts[cid][source])} for cid, claim in claims.items()
            }
    if as_json:
        print_json(report)
        return
    click.echo(f"{split}: {len(claims)} claims, checkpoint {report['checkpoint']}")
    for source, protocols in report["evidence"].items():
        for protocol, result in protocols.items():
            click.echo(f"  {source:9s} {protocol:8s} {result['correct']}/{result['claims']} = {result['accuracy']:.4f}")


def _verdicts_of(build, split: str, checkpoint: str | None, sources: tuple[str, ...]) -> tuple[str, dict]:
    """(the checkpoint's name, its verdicts in classifier/<split>.json's shape): the build's
    own, or a trained checkpoint's run on the build's inputs of ``sources``."""
    from claimtrace.models.predict import load_classifier, predict

    if checkpoint is None:
        return build.classifier_summary()["checkpoint"], build.verdicts(split)
    classifier = load_classifier(Path(checkpoint))
    if classifier.vocab.tokens != build.classifier().vocab.tokens:
        raise DataError(f"{checkpoint}: its vocabulary is not the build's: build with --checkpoint {checkpoint}")
    verdicts = {cid: {"label": claim.label} for cid, claim in build.claims(split).items()}
    for source in sources:
        for cid, entry in predict(classifier, build.inputs(split, source)).items():
            verdicts[cid][source] = entry
    return str(classifier.checkpoint), verdicts


@click.command("explain")
@click.argument("claim_id")
@workdir_option()
@click.option(
    "--evidence",
    "source",
    type=click.Choice(_EVIDENCE_SOURCES),
    default="retrieved",
    show_default=True,
    help="Where the claim's evidence comes from: the passages the build retrieved (what the "
    "pipeline classifies, and what the site shows), or its gold passages.",
)
@click.option(
    "--model",
    type=click.Choice(("transformer", "lstm")),
    default="transformer",
    show_default=True,
    help="The build's Transformer (each token's exact share), or the notebook's other model, its "
    "LSTM (its logits and where it reads them; dev and test claims).",
)
@click.option("--json", "as_json", is_flag=True, help="Print everything as JSON.")
@click.pass_context
def explain_command(ctx: click.Context, claim_id: str, workdir: str, source: str, model: str, as_json: bool) -> None:
    """Why the classifier gives CLAIM_ID its verdict: the model input, logits and verdict for
    both protocols, the notebook batch's neighbours, and each token's share (--model lstm: the
    LSTM's logits and verdicts, and the position it reads them at)."""
    if model == "lstm":
        _explain_lstm(open_build(ctx, workdir), claim_id, source, as_json)
        return
    from claimtrace.explain.verdict import explain_claim

    result = explain_claim(open_build(ctx, workdir), claim_id, source)
    if as_json:
        print_json(result)
        return
    labels = result["contributions"]["labels"]
    click.echo(f"{claim_id} ({result['split']}): {result['claim_text']}  [{result['label']}]")
    click.echo(f"checkpoint {result['checkpoint']}; {result['real_tokens']} real tokens, {result['pad_tokens']} [PAD]")
    for protocol in PROTOCOLS:
        logits = " ".join(f"{label}={value:+.4f}" for label, value in zip(labels, result[protocol]["logits"]))
        click.echo(f"{protocol:9s}{result[protocol]['verdict']:16s}{logits}")
    neighbours = " ".join(n["id"] for n in result["notebook"]["neighbours"])
    click.echo(f"notebook batch {result['notebook']['batch']}: {neighbours}")
    click.echo("contributions (" + " ".join(labels) + "):")
    click.echo(f"  {'bias':16s}" + " ".join(f"{v:+.4f}" for v in result["contributions"]["bias"]))
    for entry in result["contributions"]["tokens"]:
        click.echo(f"  {entry['token']:16s}" + " ".join(f"{v:+.4f}" for v in entry["contribution"]))
    pad = result["contributions"]["padding"]
    click.echo(f"  {'[PAD] x' + str(pad['count']):16s}" + " ".join(f"{v:+.4f}" for v in pad["contribution"]))


def _explain_lstm(build, claim_id: str, source: str, as_json: bool) -> None:
    from claimtrace.explain.lstm import explain_lstm

    result = explain_lstm(build, claim_id, source)
    if as_json:
        print_json(result)
        return
    click.echo(f"{claim_id} ({result['split']}): {result['claim_text']}  [{result['label']}]")
    last = result["last_position"]
    click.echo(
        f"the notebook's LSTM ({result['checkpoint_name']}); {result['real_tokens']} real tokens, "
        f"{result['pad_tokens']} [PAD]; verdict read at position {last['position']}, a {last['token']}"
    )
    for protocol in PROTOCOLS:
        entry = result[protocol]
        logits = " ".join(f"{label}={value:+.4f}" for label, value in zip(LABELS, entry["logits"]))
        click.echo(f"{protocol:9s}{entry['verdict']:16s}{logits}")
    click.echo(result["note"])


#: What this module adds to the ``claimtrace`` command.
@click.command("attribute")
@workdir_option()
@click.option(
    "--workers", type=click.IntRange(min=1), default=None, help="Worker processes (default: 2, one per core)."
)
@click.option("--limit", type=click.IntRange(min=1), default=None, help="Only the first N dev claims (a quick look).")
@click.option("--json", "as_json", is_flag=True, help="Print the grades as JSON.")
@click.pass_context
def attribute_command(ctx: click.Context, workdir: str, workers: int | None, limit: int | None, as_json: bool) -> None:
    """Grade four attribution methods (occlusion, Integrated Gradients, KernelSHAP, LIME) against
    the exact per-token shares of the Transformer alone, over the build's dev claims, and apply
    the cheapest two to the LSTM's verdicts; writes attribution/claims.jsonl, attribution/lstm.jsonl
    and attribution/grades.json into the build (resumable)."""
    from claimtrace.workdir.stages.attribution import WORKERS, attribute_build

    build = open_build(ctx, workdir)
    grades = attribute_build(
        build, workers=WORKERS if workers is None else workers, limit=limit, progress=lambda m: click.echo(m, err=True)
    )
    if as_json:
        lstm = {key: value for key, value in grades["lstm"].items() if key != "claims"}
        print_json({**{key: value for key, value in grades.items() if key != "claims"}, "lstm": lstm})
        return
    for name in (*grades["methods"], *grades["baselines"]):
        row = grades["grades"][name]
        seconds = f"  {row['cpu_seconds']['per_claim']['estimate']:.2f} CPU s/claim" if "seconds" in row else ""
        click.echo(
            f"{grades['names'][name]:<24} Spearman {row['spearman']['estimate']:.3f}"
            f" [{row['spearman']['lower']:.3f}, {row['spearman']['upper']:.3f}]"
            f"  passed {row['passed']['successes']}/{row['claims']}"
            f" ({'passes' if row['passes'] else 'fails'}){seconds}"
        )
    _echo_lstm(grades)


def _echo_lstm(grades: dict) -> None:
    """The LSTM's part: the methods applied, their agreement, every method's cost on it."""
    lstm = grades["lstm"]
    agreement = lstm["agreement"]
    first, second = (grades["names"][m] for m in agreement["methods"])
    median = agreement["spearman"]
    click.echo(
        f"the LSTM ({agreement['claims']} claims, no exact answer): {first} and {second} applied;"
        f" their Spearman per claim, median {median['estimate']:.3f} [{median['lower']:.3f}, {median['upper']:.3f}]"
    )
    for name, cost in lstm["cost"].items():
        if cost is not None:
            per_claim = cost["cpu_seconds"]["per_claim"]["estimate"]
            left_out = "" if name in lstm["methods"] else " (left out: measured on the first claims only)"
            click.echo(f"  {grades['names'][name]:<24} {per_claim:.2f} CPU s/claim over {cost['claims']}{left_out}")


COMMANDS = (train_command, evaluate_classifier_command, explain_command, attribute_command)
