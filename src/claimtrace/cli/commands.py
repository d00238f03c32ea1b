"""The ``claimtrace`` command: build, inspect and serve the pipeline, stage by stage.

Every command that reads course data takes ``--data DIR`` (before the command name); a bad
input file ends the command with one message naming the file and exit status 2.
"""

from __future__ import annotations

import json
import os
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path

import click

from claimtrace import constants as C
from claimtrace.data import files as data_layer
from claimtrace.data.files import parse_claims
from claimtrace.errors import REPAIR_HINT, DataError, Missing
from claimtrace.evaluation.scorer import evaluate, evaluate_file
from claimtrace.lib import store
from claimtrace.lib.alongside import AlongsideDied
from claimtrace.workdir.integrity import recorded_inputs
from claimtrace.workdir.layout import FileManifest, Workdir


def _os_error_message(err: OSError) -> str:
    """``path: No space left on device``: the file, then what the system said."""
    what = err.strerror or str(err) or type(err).__name__
    files = [str(name) for name in (err.filename, err.filename2) if name is not None]
    return f"{' -> '.join(files)}: {what}" if files else what


class _Group(click.Group):
    """One line on stderr instead of a traceback: a bad input (DataError) or a file the system
    would not read or write (OSError: disk full, permission, not a folder) exits 2; anything else
    is a bug in claimtrace and exits 1 (CLAIMTRACE_DEBUG=1 shows its traceback)."""

    def main(self, args=None, prog_name=None, complete_var=None, standalone_mode=True, **extra):
        """Click's own errors in one line too: a usage error (exit 2) names the command's help."""
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        try:
            code = super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        except click.exceptions.UsageError as err:
            where = err.ctx.command_path if err.ctx is not None else "claimtrace"
            click.echo(f"claimtrace: error: {err.format_message()} (see `{where} --help`)", err=True)
            sys.exit(err.exit_code)
        except click.ClickException as err:
            click.echo(f"claimtrace: error: {err.format_message()}", err=True)
            sys.exit(err.exit_code)
        except click.exceptions.Abort:
            click.echo("claimtrace: aborted", err=True)
            sys.exit(1)
        sys.exit(code if isinstance(code, int) else 0)

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except DataError as err:
            click.echo(f"claimtrace: error: {err}", err=True)
            ctx.exit(2)
        except OSError as err:
            click.echo(f"claimtrace: error: {_os_error_message(err)}", err=True)
            ctx.exit(2)
        except AlongsideDied as err:  # killed from outside: not a bug of claimtrace's
            click.echo(f"claimtrace: error: {err}", err=True)
            ctx.exit(1)
        except (click.exceptions.ClickException, click.exceptions.Exit, click.exceptions.Abort):
            raise
        except Exception as err:  # noqa: BLE001 - the last resort: a bug, said in one line
            if os.environ.get("CLAIMTRACE_DEBUG") or ctx.parent is not None:
                raise  # the outer group reports it once (nested groups: data, export)
            click.echo(
                f"claimtrace: internal error ({type(err).__name__}: {err}); please report it "
                "(CLAIMTRACE_DEBUG=1 shows the traceback)",
                err=True,
            )
            ctx.exit(1)


def _data_dir(ctx: click.Context) -> Path:
    """The data folder (``--data``, else the default), made the folder every stage finds
    until the command ends: the preprocessing reads its stopword list there too."""
    path = data_layer.find_data_dir(ctx.obj.get("data"))
    ctx.with_resource(data_layer.use_data_dir(path))
    return path


def _print_json(value: object) -> None:
    click.echo(json.dumps(value, ensure_ascii=False))


@click.group(cls=_Group, name="claimtrace")
@click.option(
    "--data",
    "data",
    type=click.Path(file_okay=False),
    default=None,
    help="Data folder (default: $CLAIMTRACE_DATA, ./data, ../shared/data).",
)
@click.pass_context
def main(ctx: click.Context, data: str | None) -> None:
    """claimtrace: one claim through every stage of the 2024 COMP90042 notebook."""
    ctx.ensure_object(dict)
    ctx.obj["data"] = data
    warnings.showwarning = _show_warning
    _before_torch()


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    click.echo(f"claimtrace: warning: {message}", err=True)


# --- data -------------------------------------------------------------------------------------


@main.group(cls=_Group)
def data() -> None:
    """Check the course files; write the demo corpus."""


@data.command("check")
@click.pass_context
def data_check(ctx: click.Context) -> None:
    """Check every course file (presence, JSON, shape, md5) and the gold reconstruction."""
    for line in data_layer.check(_data_dir(ctx)):
        click.echo(line)


@data.command("demo-corpus")
@click.option("--out", type=click.Path(dir_okay=False), required=True, help="Where to write the JSON.")
@click.pass_context
def data_demo_corpus(ctx: click.Context, out: str) -> None:
    """Write the demo corpus (every distinct CLIMATE-FEVER sentence) as an evidence.json."""
    corpus = data_layer.demo_corpus(_data_dir(ctx))
    store.write_atomic(out, json.dumps(corpus, ensure_ascii=False, indent=0))
    click.echo(f"wrote {len(corpus)} passages to {out}", err=True)


# --- preprocess -------------------------------------------------------------------------------


@main.command("preprocess")
@click.argument("text")
@click.option("--keep-stopwords", is_flag=True, help="The older variant that built the tagging corpus.")
@click.option("--json", "as_json", is_flag=True, help="Print {tokens, kept, stems} as JSON.")
@click.pass_context
def preprocess_command(ctx: click.Context, text: str, keep_stopwords: bool, as_json: bool) -> None:
    """Run the notebook's preprocessing on TEXT."""
    from claimtrace.pipeline.preprocess import preprocess

    result = preprocess(text, keep_stopwords=keep_stopwords, data_dir=_data_dir(ctx))
    if as_json:
        _print_json({"tokens": result.tokens, "kept": result.kept, "stems": result.stems})
    else:
        click.echo(f"tokens  {' '.join(result.tokens)}")
        click.echo(f"kept    {' '.join(result.kept)}")
        click.echo(f"stems   {' '.join(result.stems)}")


# --- vocab ------------------------------------------------------------------------------------


@main.command("vocab")
@click.option("--json", "as_json", is_flag=True, help="Print {size, head} as JSON.")
@click.pass_context
def vocab_command(ctx: click.Context, as_json: bool) -> None:
    """The classifier's vocabulary, built from train claims and their gold passages."""
    from claimtrace.models.inputs import training_vocabulary  # nltk: the preprocessing

    data_dir = _data_dir(ctx)
    vocab = training_vocabulary(data_layer.load_claims("train", data_dir), data_layer.gold_passages(data_dir))
    if as_json:
        _print_json({"size": len(vocab), "head": vocab.tokens[:20]})
    else:
        click.echo(f"{len(vocab)} entries: {' '.join(vocab.tokens[:20])} ...")


# --- the two folder options: one meaning each --------------------------------------------------

#: Where a build lives when --workdir is not given: $CLAIMTRACE_WORKDIR, else this.
DEFAULT_WORKDIR = "work/demo"


def _default_workdir() -> str:
    return os.environ.get("CLAIMTRACE_WORKDIR") or DEFAULT_WORKDIR


def workdir_option(help_text: str = "The build (default: $CLAIMTRACE_WORKDIR, else ./work/demo).") -> Callable:
    """``--workdir DIR``: always a ``claimtrace build`` folder."""
    return click.option(
        "--workdir",
        type=click.Path(file_okay=False),
        default=_default_workdir,
        show_default="$CLAIMTRACE_WORKDIR or work/demo",
        help=help_text,
    )


def checkpoint_option(help_text: str, required: bool = False) -> Callable:
    """``--checkpoint DIR``: always a trained classifier folder (``claimtrace train``)."""
    return click.option(
        "--checkpoint", "checkpoint", type=click.Path(file_okay=False), default=None, required=required, help=help_text
    )


def _open_build(ctx: click.Context, workdir: str):
    """The build in ``workdir``, read through the one reader; a clear error naming the path."""
    from claimtrace.workdir.reader import Build

    build = Build(Path(workdir), _data_dir(ctx))
    build.build_record()
    return build


# --- build and export -------------------------------------------------------------------------


@main.command("build")
@click.option("--demo", is_flag=True, help="Build over the demo corpus (every CLIMATE-FEVER sentence).")
@click.option(
    "--evidence",
    type=click.Path(dir_okay=False),
    default=None,
    help="Build over your own evidence.json (the course's: 1,208,827 passages).",
)
@workdir_option("Where the build lives (default: $CLAIMTRACE_WORKDIR, else ./work/demo).")
@checkpoint_option("The classifier stage's checkpoint (default: the shipped one).")
@click.option(
    "--processes",
    type=click.IntRange(min=1),
    default=2,
    show_default=True,
    help="Processes at once: preprocessing and tagging workers, BM25 and the unpadded-tags retriever alongside (1: none).",
)
@click.option(
    "--until",
    type=click.Choice(["tagging", "retrieval", "bm25", "classifier"]),
    default="classifier",
    show_default=True,
    help="The last stage to run.",
)
@click.option(
    "--corpus-changed",
    is_flag=True,
    help="The corpus file was edited in place since the workdir was built: rebuild every stage over it.",
)
@click.option("--json", "as_json", is_flag=True, help="Print every stage's whole summary as JSON.")
@click.pass_context
def build_command(
    ctx: click.Context,
    demo: bool,
    evidence: str | None,
    workdir: str,
    checkpoint: str | None,
    processes: int,
    until: str,
    corpus_changed: bool,
    as_json: bool,
) -> None:
    """Run the pipeline's stages over a corpus, resumably (a killed build picks up where it was).

    Over an existing workdir, every file is first checked against its manifest and each damaged
    one is rebuilt; without --demo or --evidence the workdir's own corpus and checkpoint are used.
    The stages' progress goes to stderr; a short report (passages, time per stage, dev scores
    beside the course's, where the site is) to stdout, or with --json every stage's summary."""
    from claimtrace.workdir.build import build

    if demo and evidence is not None:
        raise click.UsageError("give exactly one of --demo and --evidence FILE")
    if not demo and evidence is None:
        recorded = recorded_inputs(Path(workdir), checkpoint)
        if recorded is None:
            raise click.UsageError(f"{workdir} holds no build yet: give exactly one of --demo and --evidence FILE")
        demo, evidence, checkpoint = recorded
    if checkpoint is not None:  # a damaged checkpoint fails now, not after the first stages' minutes or hours
        from claimtrace.models.predict import load_classifier

        load_classifier(Path(checkpoint))
    started, seconds = time.perf_counter(), {}
    summary = build(
        workdir,
        _data_dir(ctx),
        None if demo else Path(evidence),
        processes=processes,
        until=until,
        checkpoint=None if checkpoint is None else Path(checkpoint),
        corpus_changed=corpus_changed,
        seconds=seconds,
    )
    if as_json:
        _print_json({**summary, "seconds": seconds})
    else:
        click.echo(_build_report(summary, seconds, workdir, time.perf_counter() - started))


def _build_report(summary: dict, seconds: dict, workdir: str, total: float) -> str:
    """A build's few lines: passages, each stage's wall time, the notebook's own dev row of the
    scoreboard beside the course's Table 2, and the command that serves the site."""
    lines = [f"built {workdir}: {summary['tagging']['passages']:,} passages in {total:.1f} s"]
    lines += [
        f"  {stage:<14}{took['wall']:7.1f} s"
        + ("  (alongside the stages above, on the other core)" if took.get("alongside") else "")
        for stage, took in seconds.items()
    ]
    board = summary.get("scoreboard")
    if board is not None:
        own, anchor = board["rows"][0], board.get("anchor")  # the notebook's own row comes first
        figures = ", ".join(f"{m} {own[m]:.4f}" for m in ("F", "A", "HM"))
        course = (
            f" (the course's Table 2: {', '.join(f'{m} {anchor[m]:.4f}' for m in ('F', 'A', 'HM'))})" if anchor else ""
        )
        lines.append(f"dev: {figures}{course}")
        lines.append(f"site: claimtrace serve --workdir {workdir}  (then http://127.0.0.1:8000/)")
    return "\n".join(lines)


@main.command("verify")
@workdir_option()
@click.option("--json", "as_json", is_flag=True, help="Print {workdir, files, damaged} as JSON.")
def verify_command(workdir: str, as_json: bool) -> None:
    """Check every file of a build against its manifest (size, sha256, item count); exit 2 naming
    each damaged or missing file."""

    work = Workdir(Path(workdir))
    if not work.build_record.is_file() and not work.file_manifest.is_file():
        raise DataError(f"{work.root}: not a claimtrace build (no build.json): run `claimtrace build` first")
    files = FileManifest.read(work)
    if files is None:
        raise DataError(
            f"{work.file_manifest}: missing (a build made before claimtrace kept a manifest): "
            f"run `claimtrace build --workdir {work.root}` to check and record its files"
        )
    problems = files.problems(full=True)
    not_built = work.stages_not_built()
    changed = _corpus_change(work, files)
    if as_json:
        _print_json(
            {
                "workdir": str(work.root),
                "files": len(files.files),
                "damaged": problems,
                "not_built": not_built,
                "corpus_changed": changed,
            }
        )
    else:
        for name, problem in problems.items():
            click.echo(f"{work.at(name)}: {problem}", err=True)
        if not problems:
            click.echo(f"{len(files.files)} files as the build wrote them", err=True)
        if not_built:
            click.echo(
                f"{work.root}: incomplete: stage{'s' if len(not_built) > 1 else ''} {', '.join(not_built)} not built "
                f"(run `claimtrace build --workdir {work.root}` to complete it)",
                err=True,
            )
    if problems:
        raise DataError(f"{len(problems)} of {len(files.files)} files damaged or missing: {REPAIR_HINT}")
    if changed:
        raise DataError(changed)


def _corpus_change(work: Workdir, files: FileManifest) -> str | None:
    """What verify says when the corpus the build was made from changed since (an edit in
    place: the build is stale), or None."""
    from claimtrace.lib.store import read_json
    from claimtrace.workdir.layout import sha256_of

    try:
        recorded = (
            read_json(work.build_record)["corpus"] if work.build_record.is_file() else (files.build or {})["corpus"]
        )
    except (DataError, KeyError, TypeError):
        return None
    place = (
        work.demo_evidence if recorded.get("kind") == "demo" else work.corpus_path(recorded.get("source", "")).resolve()
    )
    if "sha256" not in recorded or not place.is_file():
        return None
    now = sha256_of(place)[0]
    if now == recorded["sha256"]:
        return None
    return (
        f"{place}: corpus changed since this workdir was built from it (sha256 {now[:12]}..., the build read "
        f"{recorded['sha256'][:12]}...): run `claimtrace build --workdir {work.root} --corpus-changed` to rebuild over it"
    )


@main.group("export", cls=_Group)
def export() -> None:
    """Print a build's artifacts as JSON lines."""


@export.command("tags")
@workdir_option()
@click.pass_context
def export_tags(ctx: click.Context, workdir: str) -> None:
    """Each passage's tags, in the canonical passage order: {"id", "tags"} per line."""
    for row in _open_build(ctx, workdir).iter_tags():
        _print_json({"id": row["id"], "tags": row["tags"]})


@export.command("retrieval")
@workdir_option()
@click.option("--split", type=click.Choice(C.SPLITS), default="dev", show_default=True)
@click.pass_context
def export_retrieval(ctx: click.Context, workdir: str, split: str) -> None:
    """Each claim's retrieval: {"claim_id", "tags", "evidences", "fallback", "passed", "kept"}."""
    for record in _open_build(ctx, workdir).retrieval(split).values():
        _print_json(record)


# --- classifier: train ------------------------------------------------------------------------


def _before_torch() -> None:
    """Let torch's OpenMP threads sleep at barriers instead of spinning (constants.OMP_WAIT_POLICY):
    much faster on a shared CPU, same numbers. Only effective before torch is first imported."""
    os.environ.setdefault("OMP_WAIT_POLICY", C.OMP_WAIT_POLICY)


@main.command("train")
@checkpoint_option("Where to write the checkpoint, classifier_vocab.json and the training log.", required=True)
@click.option("--seed", type=int, default=None, help="Seed (default: the shipped checkpoint's).")
@click.option("--epochs", type=click.IntRange(min=1), default=None, help="Epochs (default: the notebook's 10).")
@click.option("--threads", type=click.IntRange(min=1), default=None, help="Torch CPU threads (default: 2).")
@click.option("--no-progress", is_flag=True, help="No progress bar.")
@click.option(
    "--variant",
    type=click.Choice(C.CLASSIFIER_VARIANTS),
    default="notebook",
    show_default=True,
    help="The notebook's model, or the intended one (both bugs fixed; writes "
    "classifier_intended.safetensors and training_log_intended.json).",
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
    with its two bugs fixed, the same way; keep the best dev checkpoint."""
    from claimtrace.models.train import train, training_data

    data = training_data(_data_dir(ctx))
    result = train(
        data,
        Path(checkpoint),
        seed=C.SHIPPED_SEED if seed is None else seed,
        epochs=C.EPOCHS if epochs is None else epochs,
        threads=C.TORCH_THREADS if threads is None else threads,
        show_progress=not no_progress,
        echo=click.echo,
        variant=variant,
    )
    log = result.log
    click.echo(
        f"best epoch {log['best_epoch']}: dev accuracy {log['best_dev_accuracy']:.4f}; "
        f"{log['seconds']:.0f}s; checkpoint {result.checkpoint}"
    )


# --- classifier: evaluate and explain ---------------------------------------------------------

#: Evidence sources the classifier commands accept: the gold passages, or the build's retrieved ones.
_EVIDENCE_SOURCES = ("gold", "retrieved")


@main.command("evaluate-classifier")
@click.option("--split", type=click.Choice(["train", "dev"]), default="dev", show_default=True)
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
    from claimtrace.models.predict import load_classifier, predict, protocol_figures
    from claimtrace.workdir.reader import protocol_verdicts

    build = _open_build(ctx, workdir)
    claims = build.claims(split)
    labels = {cid: claim.label for cid, claim in claims.items()}
    if checkpoint is None:
        classifier_name = build.classifier_summary()["checkpoint"]
        verdicts = build.verdicts(split)
    else:
        classifier = load_classifier(Path(checkpoint))
        if classifier.vocab.tokens != build.classifier().vocab.tokens:
            raise DataError(f"{checkpoint}: its vocabulary is not the build's: build with --checkpoint {checkpoint}")
        classifier_name = str(classifier.checkpoint)
        verdicts = {cid: {"label": label} for cid, label in labels.items()}
        for source in sources or _EVIDENCE_SOURCES:
            for cid, entry in predict(classifier, build.inputs(split, source)).items():
                verdicts[cid][source] = entry
    report = {"split": split, "checkpoint": classifier_name, "labels": list(C.LABELS), "evidence": {}}
    for source in sources or _EVIDENCE_SOURCES:
        chosen = {cid: protocol_verdicts(verdicts[cid][source]) for cid in claims}
        report["evidence"][source] = protocol_figures(labels, chosen)
        if per_claim:
            report.setdefault("verdicts", {})[source] = {cid: {"label": labels[cid], **chosen[cid]} for cid in claims}
    if as_json:
        _print_json(report)
        return
    click.echo(f"{split}: {len(claims)} claims, checkpoint {report['checkpoint']}")
    for source, protocols in report["evidence"].items():
        for protocol, result in protocols.items():
            click.echo(f"  {source:9s} {protocol:8s} {result['correct']}/{result['claims']} = {result['accuracy']:.4f}")


@main.command("explain")
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
@click.option("--json", "as_json", is_flag=True, help="Print everything as JSON.")
@click.pass_context
def explain_command(ctx: click.Context, claim_id: str, workdir: str, source: str, as_json: bool) -> None:
    """Why the classifier gives CLAIM_ID its verdict: the model input, logits and verdict for
    both protocols, the notebook batch's neighbours, and each token's share."""
    from claimtrace.explain.verdict import explain_claim

    result = explain_claim(_open_build(ctx, workdir), claim_id, source)
    if as_json:
        _print_json(result)
        return
    labels = result["contributions"]["labels"]
    click.echo(f"{claim_id} ({result['split']}): {result['claim_text']}  [{result['label']}]")
    click.echo(f"checkpoint {result['checkpoint']}; {result['real_tokens']} real tokens, {result['pad_tokens']} [PAD]")
    for protocol in C.PROTOCOLS:
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


# --- evaluate (the course's scoring) -----------------------------------------------------------


@main.command("evaluate")
@click.option(
    "--predictions",
    "predictions",
    type=click.Path(dir_okay=False),
    default=None,
    help="Prediction file in the course's shape {claim_id: {claim_text, claim_label, evidences}}; "
    "without it, the build's own predictions are scored.",
)
@workdir_option(
    "The build to report on when no --predictions is given (default: $CLAIMTRACE_WORKDIR, else ./work/demo)."
)
@click.option(
    "--split",
    type=click.Choice(["dev", "train"]),
    default="dev",
    show_default=True,
    help="The labelled claims to score against.",
)
@click.option(
    "--skip-missing",
    is_flag=True,
    help="With --predictions: leave out gold claims without a prediction, as the course's eval.py does "
    "(default: error).",
)
@click.option(
    "--per-claim", is_flag=True, help="With --predictions: also print each claim's precision, recall, F and label."
)
@click.option("--json", "as_json", is_flag=True, help="Print {F, A, HM, claims, ...} as JSON.")
@click.pass_context
def evaluate_command(
    ctx: click.Context,
    predictions: str | None,
    workdir: str,
    split: str,
    skip_missing: bool,
    per_claim: bool,
    as_json: bool,
) -> None:
    """Score predictions: evidence F, label accuracy A, harmonic mean (the course's eval.py).

    With --predictions, that file. Without, the build in --workdir: its own predictions (retrieved
    evidence, notebook protocol), its fallback share and per-variant F table, and the classifier's
    accuracy and confusion for {gold, retrieved} x {alone, notebook}."""

    if predictions is None:
        for flag, given in (("--skip-missing", skip_missing), ("--per-claim", per_claim)):
            if given:
                raise click.UsageError(f"{flag} applies to --predictions FILE, not to a build's report")
        _evaluate_build(_open_build(ctx, workdir), split, as_json)
        return
    result = evaluate_file(predictions, split, _data_dir(ctx), skip_missing=skip_missing)
    if as_json:
        out = {"predictions": predictions, "split": split, **result.summary()}
        if per_claim:
            out["per_claim"] = result.per_claim
        _print_json(out)
        return
    if per_claim:
        for row in result.per_claim:
            click.echo(
                f"{row['claim_id']:12s} P={row['precision']:.4f} R={row['recall']:.4f} F={row['F']:.4f} "
                f"{row['label']}{'' if row['correct'] else ' (gold ' + row['gold_label'] + ')'}"
            )
    click.echo(f"Evidence Retrieval F-score (F)    = {result.F}")
    click.echo(f"Claim Classification Accuracy (A) = {result.A}")
    click.echo(f"Harmonic Mean of F and A          = {result.HM}")
    if result.skipped:
        click.echo(f"({len(result.skipped)} gold claims had no prediction and were skipped)", err=True)
    if result.extra:
        click.echo(f"({len(result.extra)} predicted claims are not {split} claims and were ignored)", err=True)


def _evaluate_build(build, split: str, as_json: bool) -> None:

    source = f"{build.root} ({split} predictions)"
    course = evaluate(
        parse_claims(build.course_predictions(split), source, labelled=True), build.claims(split), source=source
    )
    retrieval = build.retrieval_summary()
    classifier = build.classifier_summary()
    report = {
        "workdir": str(build.root),
        "split": split,
        "course": course.summary(),
        "fallback_share": retrieval["splits"][split]["fallback_share"],
        "variants": build.retrieval_variants() if split == "dev" else None,
        "checkpoint": classifier["checkpoint"],
        "classifier": classifier[split],
        "scoreboard": _build_scoreboard(build, split),
    }
    if as_json:
        _print_json(report)
        return
    click.echo(
        f"{build.root} ({split}): F = {course.F:.4f}, A = {course.A:.4f}, HM = {course.HM:.4f}; "
        f"fallback for {report['fallback_share']:.0%} of claims"
    )
    for row in report["variants"] or []:
        reference = " (reference, not a quirk)" if row.get("reference") else ""
        click.echo(
            f"  retrieval variant {row['variant']:15s} F = {row['F']:.4f}  fallback {row['fallback_share']:.0%}{reference}"
        )
    for evidence, protocols in report["classifier"].items():
        for protocol, figures in protocols.items():
            click.echo(
                f"  classifier {evidence:9s} {protocol:8s} {figures['correct']}/{figures['claims']} = {figures['accuracy']:.4f}"
            )
    _echo_scoreboard(report["scoreboard"])


def _build_scoreboard(build, split: str) -> dict | None:
    """The build's dev scoreboard (None for another split, or a build made before it existed)."""

    if split != "dev":
        return None
    try:
        return build.scoreboard()
    except Missing:
        return None


def _echo_scoreboard(board: dict | None) -> None:
    if board is None:
        return
    anchor = board["anchor"]
    click.echo(
        f"  scoreboard ({board['split']}; the course's Table 2: F {anchor['F']}, A {anchor['A']}, HM {anchor['HM']})"
    )
    for row in board["rows"]:
        changes = "; ".join(row["changes"]) or "the notebook's pipeline"
        click.echo(f"  {row['name']:38s} F = {row['F']:.4f}  A = {row['A']:.4f}  HM = {row['HM']:.4f}  ({changes})")


@main.command("compare")
@click.option(
    "--predictions",
    "predictions",
    type=click.Path(dir_okay=False),
    multiple=True,
    required=True,
    help="A predictions file in the course's shape {claim_id: {claim_label, evidences}}; repeat it for "
    "several runs (a class).",
)
@click.option(
    "--name", "names", multiple=True, help="A name for each --predictions, in order (default: the file's stem)."
)
@workdir_option()
@click.option("--split", type=click.Choice(["dev", "test", "train"]), default="dev", show_default=True)
@click.option(
    "--skip-missing",
    is_flag=True,
    help="Leave out claims a file has no prediction for, as the course's eval.py does (default: error).",
)
@click.option("--claim", "claim_id", default=None, help="Also print every passage each run named for this claim.")
@click.option("--json", "as_json", is_flag=True, help="Print the whole comparison as JSON.")
@click.pass_context
def compare_command(
    ctx: click.Context,
    predictions: tuple[str, ...],
    names: tuple[str, ...],
    workdir: str,
    split: str,
    skip_missing: bool,
    claim_id: str | None,
    as_json: bool,
) -> None:
    """Your system beside the notebook's: each predictions file scored as `claimtrace evaluate
    --predictions` scores it, beside the build's scoreboard and the course's Table 2, then claim
    by claim, with the notebook retrieval's view of every passage the file named."""
    from claimtrace.compare.runs import compare, load_run

    if len(names) > len(predictions):
        raise click.UsageError(f"{len(names)} --name given for {len(predictions)} --predictions")
    build = _open_build(ctx, workdir)
    claims = build.claims(split)
    runs = [
        load_run(path, names[i] if i < len(names) else None, claims, split, skip_missing)
        for i, path in enumerate(predictions)
    ]
    if claim_id is not None and claim_id not in claims:
        raise DataError(f"--claim {claim_id}: not a {split} claim")
    report = compare(build, runs, split)
    if as_json:
        _print_json(report)
        return
    _echo_comparison(report, claim_id)


def _echo_comparison(report: dict, claim_id: str | None) -> None:
    from claimtrace.compare.runs import explained_wins, pipeline_found_gold

    labelled = report["labelled"]
    if labelled:
        click.echo(f"{report['split']}: course scores (the course's scorer, as `claimtrace evaluate --predictions`)")
        for run in sorted(report["runs"], key=lambda r: -r["HM"]):
            click.echo(
                f"  {run['name']:40s} F = {run['F']:.4f}  A = {run['A']:.4f}  HM = {run['HM']:.4f}  "
                f"gold passage found for {run['found_gold']}/{run['claims']}, label right {run['right']}/{run['claims']}"
            )
        for row in report["scoreboard"]:
            click.echo(
                f"  {'this build: ' + row['name']:40s} F = {row['F']:.4f}  A = {row['A']:.4f}  HM = {row['HM']:.4f}"
            )
        if report["table2"]:
            t2 = report["table2"]
            click.echo(f"  {'the course run (Table 2)':40s} F = {t2['F']:.4f}  A = {t2['A']:.4f}  HM = {t2['HM']:.4f}")
        found = pipeline_found_gold(report)
        click.echo(
            f"  gold passage found: notebook retrieval {found['notebook']}/{len(report['claims'])}, "
            f"BM25 {found['bm25']}/{len(report['claims'])}"
        )
    else:
        click.echo(f"{report['split']} is unlabelled: agreement with the build's pipeline instead of scores")
    for run in report["runs"]:
        n = run["claims"]
        click.echo(
            f"  {run['name']}: same label as the notebook on {run['same_label_as_notebook']}/{n}; shares a passage "
            f"with the notebook's on {run['claims_sharing_a_passage_with_notebook']}/{n}, "
            f"with BM25's on {run['claims_sharing_a_passage_with_bm25']}/{n}"
        )
    if labelled and report["runs"]:
        nobody = report["nobody_right"]
        click.echo(
            f"claims no run got right: {len(nobody)}"
            + (f" ({', '.join(nobody[:10])}{' ...' if len(nobody) > 10 else ''})" if nobody else "")
        )
        for run in report["runs"]:
            wins = explained_wins(report, run["name"])
            if wins:
                click.echo(f"where {run['name']} was right and the notebook wrong, as the trace explains it:")
            for win in wins:
                click.echo(f"  {win['claim_id']}")
                for line in win["why"]:
                    click.echo(f"    - {line}")
    if claim_id is not None:
        _echo_claim(next(r for r in report["claims"] if r["claim_id"] == claim_id))


def _echo_claim(row: dict) -> None:
    click.echo(f"{row['claim_id']}: {row['claim_text']}")
    if row["label"] is not None:
        click.echo(f"  gold: {row['label']}, {', '.join(row['gold'])}")
    verdicts = row["notebook"]["verdicts"]
    click.echo(
        f"  notebook: {verdicts['notebook']} (batches of 16), {verdicts['alone']} (alone); "
        f"{', '.join(row['notebook']['evidences'])}{' (fallback)' if row['notebook']['fallback'] else ''}"
    )
    if row["bm25"] is not None:
        click.echo(f"  BM25: {', '.join(row['bm25']['evidences'])}")
    for name, entry in row["runs"].items():
        if entry is None:
            click.echo(f"  {name}: no prediction")
            continue
        mark = "" if entry["correct"] is None else (" right" if entry["correct"] else " wrong")
        f = "" if entry["F"] is None else f", F = {entry['F']:.4f}"
        click.echo(f"  {name}: {entry['label']}{mark}{f}")
        for passage in entry["passages"]:
            flag = " gold" if passage["gold"] else ""
            click.echo(f"    {passage['id']}{flag}: {passage['stopped_by']}: {passage['why']}")


@main.command("predict")
@workdir_option()
@click.option("--split", type=click.Choice(["dev", "test", "train"]), default="dev", show_default=True)
@click.option("--out", type=click.Path(dir_okay=False), required=True)
@click.option(
    "--row",
    default=None,
    help="A scoreboard row, RETRIEVAL+MODEL+PROTOCOL (e.g. bm25+intended+notebook; `claimtrace evaluate` lists "
    "them; default: the notebook's own, notebook+notebook+notebook).",
)
@click.pass_context
def predict_command(ctx: click.Context, workdir: str, split: str, out: str, row: str | None) -> None:
    """Write the build's predictions in the course's shape: retrieved ids and the
    notebook-protocol label, ready for the course's scorer (or `claimtrace evaluate`); with
    --row, one scoreboard row's (dev and test for every row; train for the notebook's own rows,
    notebook+notebook+notebook and notebook+notebook+alone)."""
    from claimtrace.evaluation.scoreboard import scoreboard_row

    build = _open_build(ctx, workdir)
    if row is None:
        predictions = build.course_predictions(split)
    else:
        chosen = scoreboard_row(row)
        predictions = build.predictions(split, chosen.retrieval, chosen.model, chosen.protocol)
    store.write_atomic(out, json.dumps(predictions, ensure_ascii=False, indent=1))
    click.echo(f"wrote {len(predictions)} {split} predictions to {out}", err=True)


# --- web: serve and site (claimtrace.web; docs/web.md) ---------------------------------------


def predictions_options(command: Callable) -> Callable:
    """``--predictions FILE [--name NAME]... [--course-baseline]``: runs to set beside the build."""
    command = click.option(
        "--course-baseline",
        is_flag=True,
        help="Also compare the course's baseline (the data folder's dev-claims-baseline.json), as \"course baseline\".",
    )(command)
    command = click.option(
        "--name", "names", multiple=True, help="A name for each --predictions, in order (default: the file's stem)."
    )(command)
    return click.option(
        "--predictions",
        "predictions",
        type=click.Path(dir_okay=False),
        multiple=True,
        help="A predictions file in the course's shape to compare with the build (repeatable): its page is "
        "/compare/<digest>, and a claim page shows it with ?run=<name or digest>.",
    )(command)


def _given_runs(ctx: click.Context, predictions, names, course_baseline: bool) -> list[tuple[str, str | None]]:
    """The runs a command was given, as (file, name) pairs; the course's baseline first."""
    if len(names) > len(predictions):
        raise click.UsageError(f"{len(names)} --name given for {len(predictions)} --predictions")
    runs = [(str(path), names[i] if i < len(names) else None) for i, path in enumerate(predictions)]
    if course_baseline:
        runs.insert(0, (str(data_layer.course_file(_data_dir(ctx), "baseline")), "course baseline"))
    return runs


@main.command("serve")
@workdir_option("The build to explain (default: $CLAIMTRACE_WORKDIR, else ./work/demo).")
@click.option("--port", type=click.IntRange(1, 65535), default=8000, show_default=True, help="Port on 127.0.0.1.")
@click.option(
    "--workers",
    type=click.IntRange(1, 64),
    default=1,
    show_default=True,
    help="Server processes sharing the port (each loads the build; the large arrays are mapped, so shared; "
    "uploads are off, as each process would keep its own).",
)
@click.option(
    "--prerender",
    is_flag=True,
    help="Once warm, render every claim page and keep it (a server under load; about 16 ms a claim, in the background).",
)
@predictions_options
@click.pass_context
def serve_command(
    ctx: click.Context,
    workdir: str,
    port: int,
    workers: int,
    prerender: bool,
    predictions: tuple[str, ...],
    names: tuple[str, ...],
    course_baseline: bool,
) -> None:
    """Serve the explainer site for a build on http://127.0.0.1:PORT/."""
    import uvicorn

    from claimtrace.pipeline.preprocess import stopwords
    from claimtrace.web.app import create_app
    from claimtrace.web.serving import WorkerSettings, server_config
    from claimtrace.web.tracer import Tracer

    data_dir = _data_dir(ctx)
    stopwords(data_dir)  # every trace preprocesses: a bad stopword list stops the server now
    build = _open_build(ctx, workdir)
    runs = _given_runs(ctx, predictions, names, course_baseline)
    tracer = Tracer(build)
    tracer.runs.give_all(runs)  # a bad file stops the server now, naming it
    _check_port_free(port)
    click.echo(f"claimtrace: serving {workdir} on http://127.0.0.1:{port}/ ({workers} process(es))", err=True)
    if workers == 1:
        uvicorn.Server(server_config(create_app(tracer=tracer, warm=True, prerender=prerender), port)).run()
        return
    # Several processes: uvicorn starts each worker from an import string; the worker reads
    # which build to open from the environment it inherits.
    from uvicorn.supervisors import Multiprocess

    WorkerSettings(build.root, data_dir, prerender, runs).export()
    config = server_config(WorkerSettings.FACTORY, port, factory=True, workers=workers)
    Multiprocess(config, sockets=[config.bind_socket()]).run()


def _check_port_free(port: int) -> None:
    """A port another program holds is said in one line (uvicorn would log it and exit 3)."""
    import errno
    import socket

    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds
        try:
            probe.bind(("127.0.0.1", port))
        except OSError as err:
            if err.errno == errno.EADDRINUSE:
                raise DataError(f"port {port} is in use: pass --port") from None
            raise DataError(f"port {port}: {err.strerror or err}: pass another --port") from None


@main.command("site")
@workdir_option("The build to explain (default: $CLAIMTRACE_WORKDIR, else ./work/demo).")
@click.option("--out", type=click.Path(file_okay=False), required=True, help="Folder to write the site into.")
@click.option(
    "--split",
    "splits",
    type=click.Choice(C.SPLITS),
    multiple=True,
    help="Splits whose claim pages to write (default: all three).",
)
@click.option(
    "--limit",
    type=click.IntRange(min=1),
    default=None,
    help="Write only the first N claim pages of each split (a quick preview).",
)
@click.option("--json", "json_twins", is_flag=True, help="Also write every claim page's JSON twin (most of the size).")
@predictions_options
@click.pass_context
def site_command(
    ctx: click.Context,
    workdir: str,
    out: str,
    splits: tuple[str, ...],
    limit: int | None,
    json_twins: bool,
    predictions: tuple[str, ...],
    names: tuple[str, ...],
    course_baseline: bool,
) -> None:
    """Write the explainer site as static files (relative links; claim pages' JSON with --json)."""
    from claimtrace.web.site import write_site
    from claimtrace.web.tracer import Tracer

    tracer = Tracer(_open_build(ctx, workdir))
    tracer.runs.give_all(_given_runs(ctx, predictions, names, course_baseline))
    result = write_site(
        None,
        out,
        tracer=tracer,
        splits=splits or C.SPLITS,
        echo=lambda line: click.echo(line, err=True),
        progress=True,
        limit=limit,
        json_twins=json_twins,
    )
    click.echo(json.dumps(result, ensure_ascii=False))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
