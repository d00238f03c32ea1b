"""An LLM run read against a build (docs/llm.md): the sample and the passages shown, computed
from the build, and the run scored beside the build's notebook classifier on the same claims
(:func:`claimtrace.evaluation.llm_score.score_run`); several runs of one model, their spread, and
its gold-passage and retrieved-passage runs of one sample paired; runs as CSV. No network here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from claimtrace.data.files import Claim
from claimtrace.errors import DataError
from claimtrace.evaluation import llm as P
from claimtrace.evaluation.llm_score import conditions_paired, score_run
from claimtrace.workdir.reader import BuildReader


def sample_of(build: BuildReader, split: str, n: int, seed: int, stratified: bool) -> list[str]:
    """The sampled claim ids of a split's labelled claims (:func:`claimtrace.evaluation.llm.sample_ids`)."""
    claims = build.claims(split)
    labels = {cid: claim.label for cid, claim in claims.items() if claim.label is not None}
    if not labels:
        raise DataError(f"the {split} split has no labelled claims to sample")
    return P.sample_ids(labels, n, seed, stratified)


def passages_for(build: BuildReader, split: str, claim: Claim, condition: str) -> list[tuple[str, str]]:
    """(id, text) of the passages shown for a claim: those the build's notebook pipeline retrieved
    (what its classifier read, in that order), or the claim's gold passages."""
    if condition == "retrieved":
        ids = build.retrieval(split)[claim.id]["evidences"]
    elif condition == "gold":
        ids = list(claim.evidences or ())
    else:
        raise DataError(f"condition {condition!r}: expected one of {', '.join(P.CONDITIONS)}")
    return [(pid, build.passage_text(pid) or "") for pid in ids]


def shown_ids(build: BuildReader, value: Mapping) -> dict[str, list[str]]:
    """claim id -> the passage ids a run's model was shown, recomputed from the build (what
    its citations are checked against)."""
    meta = P.run_metadata(value) or {}
    claims = build.claims(meta.get("split", "dev"))
    return {
        cid: [pid for pid, _ in passages_for(build, meta.get("split", "dev"), claims[cid], meta["condition"])]
        for cid in P.claim_entries(value)
        if cid in claims
    }


def llm_report(build: BuildReader, value: Mapping) -> dict:
    """An LLM run's figures (:func:`~claimtrace.evaluation.llm_score.score_run`) against the
    build's notebook classifier (retrieved passages, notebook protocol) on the run's claims."""
    meta = P.run_metadata(value) or {}
    split = meta.get("split", "dev")
    verdicts = build.verdicts(split)
    notebook = {cid: entry["retrieved"]["notebook"]["verdict"] for cid, entry in verdicts.items()}
    report = score_run(value, build.claims(split), notebook, shown_ids(build, value))
    report["describe"] = P.describe_run(meta)
    if meta.get("probe"):
        report["probe"] = {key: meta["probe"][key] for key in ("definition", "asked", "near_verbatim", "share")}
    return report


def spread(reports: Mapping[str, dict], metas: Mapping[str, dict]) -> list[dict]:
    """Run-to-run spread of several LLM runs of one model (same condition and split): their
    accuracies' range, and whether they asked the same claims (then paired, else not comparable
    claim by claim)."""
    groups: dict[tuple, list[str]] = {}
    for name, meta in metas.items():
        groups.setdefault((meta.get("model"), meta.get("condition"), meta.get("split")), []).append(name)
    out = []
    for (model, condition, _split), names in groups.items():
        scored = [n for n in names if "accuracy" in reports[n]]
        if len(scored) < 2:
            continue
        accuracies = {n: reports[n]["accuracy"]["estimate"] for n in scored}
        samples = {tuple(metas[n]["sample"]["claim_ids"]) for n in scored}
        widest = max(reports[n]["interval_width"] for n in scored)
        out.append(
            {
                "model": model,
                "condition": condition,
                "runs": scored,
                "accuracy": accuracies,
                "range": max(accuracies.values()) - min(accuracies.values()),
                "same_claims": len(samples) == 1,
                "interval_width": widest,
            }
        )
    return out


def spread_sentence(row: dict) -> str:
    """The run-to-run spread line, with what chance alone would give at that sample size."""
    low, high = min(row["accuracy"].values()), max(row["accuracy"].values())
    claims = "on the same claims" if row["same_claims"] else "on different samples"
    return (
        f"{len(row['runs'])} runs of {row['model']} ({row['condition']}, {claims}): accuracy from {low:.2f} to "
        f"{high:.2f}, a spread of {row['range']:.2f}; each run's 95% interval is about ±{row['interval_width']:.2f} "
        "wide, so a spread within that cannot be told apart from chance"
    )


def condition_pairs(build: BuildReader, values: Mapping[str, Mapping]) -> list[dict]:
    """Runs of one model on one sample, one with the gold passages and one with the retrieved
    ones, paired claim by claim (:func:`~claimtrace.evaluation.llm_score.conditions_paired`):
    every such pair among ``values`` (name -> run file's value), in the order given."""
    metas = {name: P.run_metadata(value) or {} for name, value in values.items()}

    def sample_of_run(meta: dict) -> tuple:
        return (meta.get("model"), meta.get("split"), tuple((meta.get("sample") or {}).get("claim_ids") or ()))

    out = []
    for gold_name, gold_meta in metas.items():
        if gold_meta.get("condition") != "gold":
            continue
        for name, meta in metas.items():
            if meta.get("condition") == "retrieved" and sample_of_run(meta) == sample_of_run(gold_meta):
                claims = build.claims(meta.get("split", "dev"))
                paired = conditions_paired(values[name], values[gold_name], claims)
                out.append({"model": meta.get("model"), "retrieved": name, "gold": gold_name, "paired": paired})
    return out


def condition_sentence(row: dict) -> str:
    """A pair of conditions in a sentence: gold minus retrieved, each difference and its test."""
    paired = row["paired"]
    if not paired["claims"]:
        return (
            f"{row['model']}, gold passages ({row['gold']}) and retrieved ({row['retrieved']}): no claim scored in both"
        )
    a, hm, test = paired["A"], paired["HM"], paired["mcnemar"]
    return (
        f"{row['model']} on the same {paired['claims']} claims, gold passages ({row['gold']}) minus retrieved "
        f"({row['retrieved']}): accuracy {a['estimate']:+.4f} [{a['lower']:+.4f}, {a['upper']:+.4f}], McNemar exact "
        f"p = {paired['p']:.4f} (b = {test['b']}, c = {test['c']}), Cohen's h = {paired['cohens_h']:+.3f}: "
        f"{paired['verdict']}; HM {hm['estimate']:+.4f} [{hm['lower']:+.4f}, {hm['upper']:+.4f}]"
    )


def run_csv(build: BuildReader, values: Sequence[Mapping]) -> str:
    """Runs as one CSV (:func:`claimtrace.evaluation.llm.csv_rows`): each run's rows in its
    sample's order, the runs in the order given; the gold labels and the notebook classifier's
    labels on each run's passages read from the build."""
    rows = []
    for value in values:
        meta = P.run_metadata(value) or {}
        split, condition = meta.get("split", "dev"), meta.get("condition", "retrieved")
        gold = {cid: claim.label for cid, claim in build.claims(split).items() if claim.label is not None}
        notebook = {cid: row["notebook"] for cid, row in build.verdict_table(split, condition).items()}
        rows += P.csv_rows(value, gold, notebook)
    return P.csv_text(rows)
