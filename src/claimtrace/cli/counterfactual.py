"""``claimtrace counterfactual``: what would change a verdict, the smallest edits that flip it,
each re-run through the pipeline (:mod:`claimtrace.explain.counterfactuals`), a typed text's
under the scoring rule ``--rule`` names; ``--all`` writes every dev and test claim's into the
build (``counterfactuals/``), resumably, with the shares of dev claims one edit of each kind
changes."""

from __future__ import annotations

import json
import time
from collections.abc import Callable

import click

from claimtrace.cli.options import open_build, print_json, workdir_option
from claimtrace.errors import DataError

__all__ = ["counterfactual_command", "write_all", "COMMANDS"]

#: The notebook's scoring rule, by name (``--rule``'s default; the rules are
#: :data:`claimtrace.evaluation.sweep.RULES`, imported when the command runs).
NOTEBOOK = "notebook"


def _finished(build, split: str, max_words: int) -> dict[str, dict]:
    """The claims of a split done before with this bound: the file a run wrote whole, then the
    scratch file a killed run left (a line cut short by the kill is dropped)."""
    work = build.work
    done = {}
    for path in (work.counterfactuals(split), work.counterfactuals_part(split)):
        if not path.is_file():
            continue
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                record = json.loads(line)
            except ValueError:
                continue
            if record.get("words", {}).get("max_words") == max_words:
                done[record["claim_id"]] = record
    return done


def _scratch(path):
    """The split's scratch file, open for appending, a cut line ended first."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle = open(path, "a", encoding="utf-8")  # noqa: SIM115 (closed by the caller)
    if path.stat().st_size and not path.read_bytes().endswith(b"\n"):
        handle.write("\n")
    return handle


def _split_records(build, split: str, max_words: int, limit: int | None, progress: Callable[[str], None]) -> list:
    """Every claim of a split (the first ``limit``), those done before read back, the rest computed
    and appended to the scratch file one by one."""
    from claimtrace.explain.counterfactuals.batches import BatchRuns
    from claimtrace.explain.counterfactuals.report import SOURCE, compute_claim

    claim_ids = list(build.inputs(split, "retrieved").claim_ids)[:limit]
    done = _finished(build, split, max_words)
    todo = [cid for cid in claim_ids if cid not in done]
    if todo:
        progress(f"{split}: {len(todo)} of {len(claim_ids)} claims to compute ({len(done)} done before)")
        runs = BatchRuns(build, split, SOURCE)  # one forward call per batch and member taken out
        with _scratch(build.work.counterfactuals_part(split)) as handle:
            for cid in todo:
                done[cid] = compute_claim(build, cid, max_words, runs)
                handle.write(json.dumps(done[cid]) + "\n")
                handle.flush()
    return [done[cid] for cid in claim_ids]


def write_all(
    build, max_words: int, limit: int | None = None, progress: Callable[[str], None] = lambda _: None
) -> dict:
    """Every dev and test claim's counterfactuals and the dev shares, written into the build whole
    (temporary names, then renamed) and recorded in its manifest; resumable."""
    from claimtrace.explain.counterfactuals.fragility import fragility
    from claimtrace.explain.counterfactuals.report import SPLITS
    from claimtrace.lib.build_files import write_atomic
    from claimtrace.workdir.layout import FileManifest

    start = time.perf_counter()
    records = {split: _split_records(build, split, max_words, limit, progress) for split in SPLITS}
    summary = {
        **fragility(records["dev"], max_words),
        "split": "dev",
        "wall_seconds": time.perf_counter() - start,  # this run's (a resumed run's: the rest)
    }
    work = build.work
    for split in SPLITS:
        write_atomic(work.counterfactuals(split), "".join(json.dumps(r) + "\n" for r in records[split]))
    write_atomic(work.counterfactuals_summary, json.dumps(summary, indent=1))
    files = FileManifest.read(work)
    if files is not None:
        for split in SPLITS:
            files.record(work.counterfactuals(split), save=False)
        files.record(work.counterfactuals_summary)
    if limit is None:
        for split in SPLITS:
            work.counterfactuals_part(split).unlink(missing_ok=True)
    return summary


def _echo(result: dict) -> None:
    """One claim's counterfactuals, in words."""
    head = result["claim_id"] or "the text"
    click.echo(f"{head}: {result['text']}")
    if result["kind"] == "text":
        click.echo(f"passages retrieved under the {result['rule']} rule")
    click.echo(f"verdict (alone): {result['verdict']}")
    model = result["model_input"]
    click.echo(f"model input ({model['real_tokens']} real tokens, {model['pad_tokens']} [PAD]):")
    for target in model["targets"]:
        for kind in ("remove", "add"):
            edit = target[kind]
            if not edit["possible"]:
                click.echo(f"  {target['label']}: no number of tokens to {kind} makes it the verdict")
                continue
            tokens = ", ".join(f"{t['token']}×{t['times']}" for t in edit["tokens"])
            click.echo(
                f"  {target['label']}: {kind} {edit['count']} ({edit['proof']}): {tokens} -> {edit['verdict_after']}"
            )
    words = result["words"]
    if words["smallest"] is None:
        click.echo(
            f"words: no set of up to {words['max_words']} words changes the verdict ({words['sets_tried']} tried)"
        )
    for edit in words["edits"]:
        click.echo(f"  without {' '.join(edit['removed'])!r}: {edit['verified_verdict']}")
    passages = result["passages"]
    click.echo(
        f"passages (chosen by the {passages['decided_by']}): {', '.join(passages['changing']) or 'none'} change it"
    )
    if result["batch"] is not None:
        click.echo(f"notebook batch-mates that change it: {', '.join(result['batch']['changing']) or 'none'}")


def _echo_summary(summary: dict) -> None:
    click.echo(f"dev claims: {summary['claims']}; the share whose verdict one edit changes:")
    for share in summary["shares"].values():
        click.echo(
            f"  {share['name']:<48} {share['estimate']:.3f} [{share['lower']:.3f}, {share['upper']:.3f}]"
            f" ({share['successes']}/{share['n']})"
        )
    click.echo(f"in {summary['wall_seconds']:.1f} s")


@click.command("counterfactual")
@click.argument("claim_id", required=False)
@click.option("--text", default=None, help="Any text, traced as a typed claim.")
@click.option("--all", "every", is_flag=True, help="Every dev and test claim, written into the build (resumable).")
@click.option(
    "--rule",
    default=NOTEBOOK,
    show_default=True,
    help="With --text: the scoring rule its passages are retrieved under at every re-trace (notebook or submission).",
)
@click.option("--max-words", type=int, default=3, show_default=True, help="The largest set of the claim's words tried.")
@click.option("--limit", type=click.IntRange(min=1), default=None, help="With --all: the first N claims of each split.")
@workdir_option()
@click.option("--json", "as_json", is_flag=True, help="Print everything as JSON (what the page's JSON twin holds).")
@click.pass_context
def counterfactual_command(
    ctx: click.Context, claim_id, text, every: bool, rule: str, max_words: int, limit, workdir: str, as_json: bool
) -> None:
    """What would change CLAIM_ID's verdict (or --text's): the fewest model-input tokens to remove
    or add for each other label (exact), the smallest sets of the claim's words whose removal
    changes it (every set up to --max-words), each passage left out, each notebook batch-mate
    taken out; every edit re-run through the pipeline (a text's under --rule)."""
    if sum(x is not None and x is not False for x in (claim_id, text, every or None)) != 1:
        raise DataError("counterfactual: give one of CLAIM_ID, --text TEXT or --all")
    if max_words < 1:
        raise DataError(f"--max-words: {max_words} is not a positive number of words")
    _check_rule(rule, typed=text is not None)
    build = open_build(ctx, workdir)
    if every:
        summary = write_all(build, max_words, limit, progress=lambda m: click.echo(m, err=True))
        print_json(summary) if as_json else _echo_summary(summary)
        return
    from claimtrace.explain.counterfactuals.report import counterfactuals

    result = counterfactuals(build, claim_id=claim_id, text=text, max_words=max_words, rule=rule)
    print_json(result) if as_json else _echo(result)


def _check_rule(name: str, typed: bool) -> None:
    """``--rule`` names a scoring rule, and one other than the notebook's only with ``--text``: a
    course claim's counterfactuals follow the build's retrieval (a DataError otherwise)."""
    from claimtrace.explain.retrieval import rule_named

    try:
        rule_named(name)
    except ValueError as err:
        raise DataError(f"--rule: {err}") from None
    if name != NOTEBOOK and not typed:
        raise DataError(
            f"--rule: a course claim's counterfactuals follow the build's retrieval, under the notebook's rule; "
            f"--rule {name} is for --text"
        )


COMMANDS = (counterfactual_command,)
