"""Your system beside the notebook's (``compare``): predictions files scored as the course
scores them, beside the build's scoreboard and Table 2, then claim by claim."""

from __future__ import annotations

import click

from claimtrace.cli.options import ANY_SPLIT, data_dir, open_build, print_json, workdir_option
from claimtrace.errors import DataError


@click.command("compare")
@click.option(
    "--predictions",
    "predictions",
    type=click.Path(dir_okay=False),
    multiple=True,
    help="A predictions file in the course's shape {claim_id: {claim_label, evidences}}; repeat it for several runs.",
)
@click.option(
    "--class",
    "class_dir",
    type=click.Path(file_okay=False),
    default=None,
    help="A folder of predictions files (every *.json in it, each named by its file name): a class at once. "
    "A file the course's scorer cannot score, or of another split, is set aside with a line saying why.",
)
@click.option(
    "--name", "names", multiple=True, help="A name for each --predictions, in order (default: the file's stem)."
)
@workdir_option()
@click.option(
    "--split",
    type=ANY_SPLIT,
    default=None,
    help="The claims to compare on (default: the split most files' claims belong to).",
)
@click.option("--claim", "claim_id", default=None, help="Also print every passage each run named for this claim.")
@click.option("--json", "as_json", is_flag=True, help="Print the whole comparison as JSON.")
@click.pass_context
def compare_command(
    ctx: click.Context,
    predictions: tuple[str, ...],
    class_dir: str | None,
    names: tuple[str, ...],
    workdir: str,
    split: str | None,
    claim_id: str | None,
    as_json: bool,
) -> None:
    """Your system beside the notebook's: each predictions file scored as `claimtrace evaluate
    --predictions` scores it (the course's number, the strict one beside it, an audit of what is
    odd in the file), beside the build's scoreboard and the course's Table 2, then claim by claim,
    with the notebook retrieval's view of every passage the file named."""
    from claimtrace.compare.runs import compare

    if len(names) > len(predictions):
        raise click.UsageError(f"{len(names)} --name given for {len(predictions)} --predictions")
    if not predictions and class_dir is None:
        raise click.UsageError("give --predictions FILE (repeatable) or --class DIR")
    build = open_build(ctx, workdir)
    runs, set_aside = _read_runs(ctx, predictions, names, class_dir, split)
    split = runs[0].split
    claims = build.claims(split)
    if claim_id is not None and claim_id not in claims:
        raise DataError(f"--claim {claim_id}: not a {split} claim")
    report = compare(build, runs, split)
    report["set_aside"] = set_aside
    if as_json:
        print_json(report)
        return
    for line in set_aside:
        click.echo(f"set aside: {line['file']}: {line['why']}", err=True)
    _echo_comparison(report, claim_id)


def _read_runs(ctx, predictions, names, class_dir, split) -> tuple[list, list[dict]]:
    """Every file read as the course's scorer reads it, in the split asked for or the one most
    files are of; the others set aside with why (a class, :func:`claimtrace.compare.runs.read_class`),
    or refused (files named one by one)."""
    from claimtrace.compare.runs import chosen_split, load_run, read_class
    from claimtrace.evaluation.audit import course_context

    context = course_context(data_dir(ctx))
    splits = context.pop("splits")
    runs = [
        load_run(path, names[i] if i < len(names) else None, splits, split, **context)
        for i, path in enumerate(predictions)
    ]
    set_aside: list[dict] = []
    if class_dir is not None:
        more, set_aside = read_class(class_dir, splits, split, **context)
        runs += more
    if not runs:
        raise DataError(f"{class_dir}: no predictions file the course's scorer can score")
    chosen = chosen_split(runs, split)
    for run in [run for run in runs if run.split != chosen]:
        if class_dir is None:
            raise DataError(f"{run.name}: holds {run.split} claims, the others {chosen}: compare one split at a time")
        set_aside.append({"file": run.name, "why": f"holds {run.split} claims (compare them with --split {run.split})"})
    return [run for run in runs if run.split == chosen], set_aside


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
        _echo_statistics(report.get("statistics"))
        _echo_llm(report)
    else:
        click.echo(f"{report['split']} is unlabelled: agreement with the build's pipeline instead of scores")
    for run in report["runs"]:
        n = run["claims"]
        click.echo(
            f"  {run['name']}: same label as the notebook on {run['same_label_as_notebook']}/{n}; shares a passage "
            f"with the notebook's on {run['claims_sharing_a_passage_with_notebook']}/{n}, "
            f"with BM25's on {run['claims_sharing_a_passage_with_bm25']}/{n}"
        )
    _echo_audits(report["runs"])
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


def _echo_audits(runs: list[dict]) -> None:
    """Each run's strict score where skipping changed it, and its audit, a line per finding."""
    for run in runs:
        if run.get("strict_note"):
            strict = run["strict"]
            click.echo(
                f"  {run['name']}: strict score F = {strict['F']:.4f}, A = {strict['A']:.4f}, HM = {strict['HM']:.4f}; "
                f"{run['strict_note']}"
            )
        for finding in run.get("audit", []):
            click.echo(f"  audit of {run['name']}: {finding['text']}")


def _interval(figure: dict) -> str:
    return f"{figure['estimate']:.4f} [{figure['lower']:.4f}, {figure['upper']:.4f}]"


def _echo_statistics(statistics: dict | None) -> None:
    """Each run's 95% intervals, its paired tests against the notebook's pipeline and the
    baselines, and (several runs) which pairs differ by more than chance."""
    if not statistics:
        return
    method = statistics["method"]
    click.echo(
        f"95% intervals (A: {method['proportions']}; F, HM: {method['means']}), every claim of the split counted "
        "(a claim a file left out as wrong with F 0, the strict score):"
    )
    for name, figures in statistics["figures"].items():
        click.echo(
            f"  {name:40s} F {_interval(figures['F'])}  A {_interval(figures['A'])}  HM {_interval(figures['HM'])}"
        )
    click.echo(f"paired on the same claims, HM by the paired bootstrap ({method['correction']} per reference):")
    for name, against in statistics["paired"].items():
        words = [f"{other}: HM {c['HM']['estimate']:+.4f}, {c['HM']['verdict']}" for other, c in against.items()]
        click.echo(f"  {name} minus " + "; ".join(words))
    differing = [p for p in statistics["pairs"] if p["HM"]["verdict"] == "more than chance"]
    if statistics["pairs"]:
        click.echo(
            f"of {len(statistics['pairs'])} pairs of runs, {len(differing)} differ in HM by more than chance"
            + (": " + ", ".join(f"{p['a']} / {p['b']}" for p in differing[:10]) if differing else "")
        )


def _echo_llm(report: dict) -> None:
    """Each LLM run's own figures on its sample, paired with the notebook's classifier on the
    same claims, the run-to-run spread of several runs of one model, and one model's gold-passage
    and retrieved-passage runs of one sample paired (docs/llm.md)."""
    from claimtrace.compare.llm_report import condition_sentence, spread_sentence

    for run in (r for r in report["runs"] if "llm" in r):
        llm = run["llm"]
        counts = llm["counts"]
        click.echo(f"{run['name']}: {llm['describe']}")
        click.echo(
            f"  scored on its sample only: {counts['scored']} claims ({counts['unusable']} unusable answers, scored "
            f"wrong); {counts['failed']} failed calls excluded. The course scores above skip the rest of the split; "
            "the strict score and the intervals above count them wrong. On the sample alone:"
        )
        echo_llm_figures(llm)
    for row in report.get("llm_spread", []):
        click.echo(spread_sentence(row))
    for row in report.get("llm_conditions", []):
        click.echo(condition_sentence(row))


def echo_llm_figures(llm: dict) -> None:
    """An LLM run's own figures on its sample (:func:`claimtrace.compare.llm_report.llm_report`),
    a line each, the interval-width sentence first."""
    click.echo(f"  {llm['note']}")
    if "accuracy" not in llm:
        return
    paired = llm["paired"]
    click.echo(
        f"  accuracy {_interval(llm['accuracy'])} (Wilson); the notebook's classifier on the same claims "
        f"{_interval(llm['notebook_accuracy'])}; macro-F1 {_interval(llm['macro_f1'])} (bootstrap)"
    )
    click.echo(
        f"  paired with the notebook's classifier: A {paired['A']['estimate']:+.4f} "
        f"[{paired['A']['lower']:+.4f}, {paired['A']['upper']:+.4f}], McNemar exact p = {paired['p']:.4f} "
        f"(b = {paired['mcnemar']['b']}, c = {paired['mcnemar']['c']}), Cohen's h = {paired['cohens_h']:+.3f}: "
        f"{paired['verdict']}"
    )
    citations = llm["citations"]
    click.echo(
        f"  citations: {citations['valid']} of {citations['cited']} cited ids were among the passages shown "
        f"({_interval(citations['validity'])}); evidence F of the cited ids {_interval(llm['evidence_f'])}; "
        f"HM (of accuracy and evidence F) {_interval(llm['hm'])}"
    )
    lat, tokens, cost = llm["latency"], llm["tokens"], llm["cost"]
    usd = cost["usd"] if cost["usd"] == "unknown" else f"${cost['usd']:.4f}"
    click.echo(
        f"  latency median {lat['median_ms']:.0f} ms, p90 {lat['p90_ms']:.0f} ms; tokens {tokens['in']} in, "
        f"{tokens['out']} out; estimated cost {usd} (prices of {cost['prices_date']})"
    )
    if "probe" in llm:
        probe = llm["probe"]
        click.echo(
            f"  contamination probe: {probe['near_verbatim']} of {probe['asked']} claims completed "
            f"near-verbatim, {_interval(probe['share'])}"
        )


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


#: What this module adds to the ``claimtrace`` command.
COMMANDS = (compare_command,)
