"""The course's scoring: score a predictions file or a build (``evaluate``), and write a build's
predictions, or one scoreboard row's, in the course's shape (``predict``)."""

from __future__ import annotations

import json

import click

from claimtrace.cli.options import (
    ANY_SPLIT,
    data_dir,
    open_build,
    print_json,
    split_option,
    workdir_option,
)
from claimtrace.data.files import parse_claims
from claimtrace.errors import DataError, Missing
from claimtrace.evaluation.audit import report_path
from claimtrace.evaluation.scorer import evaluate
from claimtrace.evaluation.significance import figures_of
from claimtrace.evaluation.statistics import wilson
from claimtrace.lib import build_files


@click.command("evaluate")
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
    type=ANY_SPLIT,
    default=None,
    help="The claims to score against (default: with --predictions, the split the file's claims belong to; "
    "for a build, dev).",
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
    split: str | None,
    per_claim: bool,
    as_json: bool,
) -> None:
    """Score predictions: evidence F, label accuracy A, harmonic mean, as the course's eval.py does.

    With --predictions, that file, scored against the split its claims belong to, with the
    course's rules (a claim the file leaves out, or whose entry lacks claim_label or evidences,
    is skipped; an id repeated in a list counts twice in the precision; claims of other splits
    are ignored); the strict score beside it (every claim counted) and an audit of what is odd in
    the file. Without, the build in --workdir: its own predictions (retrieved evidence, notebook
    protocol), its fallback share and per-variant F table, and the classifier's accuracy and
    confusion for {gold, retrieved} x {alone, notebook}."""

    if predictions is None:
        if per_claim:
            raise click.UsageError("--per-claim applies to --predictions FILE, not to a build's report")
        if split == "test":
            raise click.UsageError("the test claims are unlabelled: a build's report is of dev or train")
        _evaluate_build(open_build(ctx, workdir), split or "dev", as_json)
        return
    report = report_path(predictions, data_dir(ctx), split)
    if report.scored is None:
        for finding in report.findings:
            click.echo(f"audit: {finding.text}", err=True)
        raise DataError(
            f"{predictions}: its claims are {report.found.split} claims, which are unlabelled: there is nothing "
            "to score (claimtrace compare shows its agreement with the notebook's pipeline)"
        )
    _echo_file_report(predictions, report, per_claim, as_json)


def _echo_file_report(predictions: str, report, per_claim: bool, as_json: bool) -> None:
    """A scored file: the course's three lines, the strict score, the intervals, the audit."""
    result = report.scored.course
    intervals = figures_of(result)
    if as_json:
        out = {"predictions": predictions, **report.to_dict(), "intervals": intervals}
        if per_claim:
            out["per_claim"] = result.per_claim
        print_json(out)
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
    strict = report.scored.strict
    click.echo(
        f"scored against {report.found.split}: {result.claims} of {strict.claims} claims, as the course's eval.py does"
    )
    if report.scored.summary()["strict_note"]:
        click.echo(
            f"strict score (every claim counted): F = {strict.F:.4f}, A = {strict.A:.4f}, HM = {strict.HM:.4f}; "
            f"{report.scored.summary()['strict_note']}"
        )
    _echo_intervals(intervals)
    for finding in report.findings:
        click.echo(f"audit: {finding.text}")


def _evaluate_build(build, split: str, as_json: bool) -> None:
    """A build's report on a labelled split: its own predictions' course scores, the retrieval's
    fallback share and variants table, the classifier's figures and (dev) the scoreboard."""
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
        "classifier": _with_wilson(classifier[split]),
        "gold_vs_retrieved": classifier["gold_minus_retrieved"][split],
        "scoreboard": _build_scoreboard(build, split),
    }
    if as_json:
        print_json(report)
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
                f"  (95% Wilson {_bounds(figures['interval'])})"
            )
    gap = report["gold_vs_retrieved"]
    click.echo(
        f"  gold minus retrieved evidence (notebook protocol): {_signed(gap['A'])} in accuracy, McNemar p = "
        f"{gap['p']:.3g}, Cohen's h = {gap['cohens_h']:+.2f}: {gap['verdict']}"
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


def _bounds(interval: dict) -> str:
    return f"[{interval['lower']:.4f}, {interval['upper']:.4f}]"


def _signed(interval: dict) -> str:
    """A difference and its interval: ``+0.0130 [-0.0325, +0.0584]``."""
    return f"{interval['estimate']:+.4f} [{interval['lower']:+.4f}, {interval['upper']:+.4f}]"


def _echo_intervals(figures: dict) -> None:
    """A scored file's 95% intervals and the labels it never predicted."""
    if "A" not in figures:
        return
    method = figures["method"]
    click.echo(
        f"95% intervals: F {_bounds(figures['F'])}, A {_bounds(figures['A'])} (Wilson), HM {_bounds(figures['HM'])}; "
        f"macro-F1 {figures['macro_f1']['estimate']:.4f} {_bounds(figures['macro_f1'])} "
        f"(F, HM, macro-F1: {method['means']})"
    )
    never = [label for label, r in figures["recall"].items() if r["predicted"] == 0]
    if never:
        click.echo(f"never predicted: {', '.join(never)} (recall 0 for those gold labels)")


def _with_wilson(classifier: dict) -> dict:
    """The classifier's accuracy figures, each with its Wilson interval."""
    return {
        evidence: {p: {**f, "interval": wilson(f["correct"], f["claims"]).to_dict()} for p, f in protocols.items()}
        for evidence, protocols in classifier.items()
    }


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
        _echo_row_statistics(row)
    for row in board.get("baselines", []):
        click.echo(
            f"  {row['name']:38s} F = {row['F']:.4f}  A = {row['A']:.4f}  HM = {row['HM']:.4f}  ({row['description']})"
        )
        _echo_row_statistics(row)
    if "statistics" in board:
        method = board["statistics"]
        click.echo(
            f"  (95% intervals: A {method['proportions']}, F and HM {method['means']}; each row against "
            f"notebook+notebook+notebook: A by McNemar's exact test, HM by the paired bootstrap, {method['correction']})"
        )


def _echo_row_statistics(row: dict) -> None:
    """A scoreboard row's intervals and, but for the notebook's own row, its paired test."""
    if "intervals" not in row:  # a build made before the scoreboard had its statistics
        return
    intervals = row["intervals"]
    line = f"      95%: F {_bounds(intervals['F'])}  A {_bounds(intervals['A'])}  HM {_bounds(intervals['HM'])}"
    paired = row.get("paired")
    if paired is not None:
        line += (
            f"; minus the notebook's: A {_signed(paired['A'])} (p = {paired['p_holm']:.3g} Holm, {paired['verdict']}), "
            f"HM {_signed(paired['HM'])} (p = {paired['HM']['p_holm']:.3g} Holm, {paired['HM']['verdict']})"
        )
    click.echo(line)


@click.command("predict")
@workdir_option()
@split_option(ANY_SPLIT)
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

    build = open_build(ctx, workdir)
    if row is None:
        predictions = build.course_predictions(split)
    else:
        chosen = scoreboard_row(row)
        predictions = build.predictions(split, chosen.retrieval, chosen.model, chosen.protocol)
    build_files.write_atomic(out, json.dumps(predictions, ensure_ascii=False, indent=1))
    click.echo(f"wrote {len(predictions)} {split} predictions to {out}", err=True)


#: What this module adds to the ``claimtrace`` command.
COMMANDS = (evaluate_command, predict_command)
