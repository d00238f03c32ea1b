"""A build's commands: run the stages into a workdir (``build``), check every file of one
(``verify``), and print its artifacts (``export``)."""

from __future__ import annotations

import time
from pathlib import Path

import click

from claimtrace.cli.options import (
    ANY_SPLIT,
    DEFAULT_PORT,
    CommandGroup,
    checkpoint_option,
    data_dir,
    open_build,
    port_option,
    print_json,
    split_option,
    workdir_option,
)
from claimtrace.errors import REPAIR_HINT, DataError
from claimtrace.workdir.integrity import corpus_change, recorded_inputs
from claimtrace.workdir.layout import STAGES, FileManifest, Workdir


@click.command("build")
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
    type=click.Choice(STAGES),
    default=STAGES[-1],  # every stage
    show_default=True,
    help="The last stage to run.",
)
@click.option(
    "--corpus-changed",
    is_flag=True,
    help="The corpus file was edited in place since the workdir was built: rebuild every stage over it.",
)
@port_option("The port the report's last line serves the site on (`claimtrace serve --port`).")
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
    port: int,
    as_json: bool,
) -> None:
    """Run the pipeline's stages over a corpus, resumably (a killed build picks up where it was).

    Over an existing workdir, every file is first checked against its manifest and each damaged
    one is rebuilt; without --demo or --evidence the workdir's own corpus and checkpoint are used.
    The stages' progress goes to stderr; a short report (passages, time per stage, dev scores
    beside the course's, where the site is) to stdout, or with --json every stage's summary."""
    from claimtrace.workdir.builder import build

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
        data_dir(ctx),
        None if demo else Path(evidence),
        processes=processes,
        until=until,
        checkpoint=None if checkpoint is None else Path(checkpoint),
        corpus_changed=corpus_changed,
        seconds=seconds,
    )
    if as_json:
        print_json({**summary, "seconds": seconds})
    else:
        click.echo(build_report(summary, seconds, workdir, time.perf_counter() - started, port))


def build_report(summary: dict, seconds: dict, workdir: str, total: float, port: int = DEFAULT_PORT) -> str:
    """A build's few lines: passages, each stage's wall time, the notebook's own dev row of the
    scoreboard beside the course's Table 2, and the command that serves the site on ``port``."""
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
        serve = f"claimtrace serve --workdir {workdir}" + ("" if port == DEFAULT_PORT else f" --port {port}")
        lines.append(f"site: {serve}  (then http://127.0.0.1:{port}/)")
    return "\n".join(lines)


@click.command("verify")
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
    changed = corpus_change(work, files)
    if as_json:
        print_json(
            {
                "workdir": str(work.root),
                "files": len(files.files),
                "damaged": problems,
                "not_built": not_built,
                "corpus_changed": changed,
            }
        )
    else:
        _echo_verified(work, files, problems, not_built)
    if problems:
        raise DataError(f"{len(problems)} of {len(files.files)} files damaged or missing: {REPAIR_HINT}")
    if changed:
        raise DataError(changed)


def _echo_verified(work: Workdir, files: FileManifest, problems: dict[str, str], not_built: list[str]) -> None:
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


@click.group("export", cls=CommandGroup)
def export() -> None:
    """Print a build's artifacts as JSON lines."""


@export.command("tags")
@workdir_option()
@click.pass_context
def export_tags(ctx: click.Context, workdir: str) -> None:
    """Each passage's tags, in the canonical passage order: {"id", "tags"} per line."""
    for row in open_build(ctx, workdir).iter_tags():
        print_json({"id": row["id"], "tags": row["tags"]})


@export.command("retrieval")
@workdir_option()
@split_option(ANY_SPLIT)
@click.pass_context
def export_retrieval(ctx: click.Context, workdir: str, split: str) -> None:
    """Each claim's retrieval: {"claim_id", "tags", "evidences", "fallback", "passed", "kept"}."""
    for record in open_build(ctx, workdir).retrieval(split).values():
        print_json(record)


#: What this module adds to the ``claimtrace`` command.
COMMANDS = (build_command, verify_command, export)
