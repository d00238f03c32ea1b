"""Your system beside the notebook's: a run is a predictions file in the course's shape
``{claim_id: {"claim_label", "evidences": [passage ids]}}``, compared claim by claim with the
build's pipeline.

For each run, on a labelled split (dev):

* its course scores, computed by :func:`claimtrace.evaluation.scorer.evaluate` (so they equal
  ``claimtrace evaluate --predictions``), beside the build's scoreboard rows and the course's
  Table 2;
* per claim: its evidences beside the notebook retrieval's, BM25's and the gold ones, each with
  its F; its label beside the notebook model's verdicts (both protocols) and the gold label;
* for every passage it named: whether the build's corpus holds it and, if so, the notebook
  retrieval's view of it (:class:`claimtrace.explain.retrieval.RetrievalView`, the walkthrough's own
  explanation of a missed gold passage): tags, shared tags, cosine, overlap, score and the first
  rule that stopped it, or "returned".

With several runs (a class): a leaderboard sorted by HM; per claim, how many runs found a gold
passage and how many got the label right; the claims no run got right. On test, which is
unlabelled, each run's agreement with the notebook and with BM25 takes the scores' place.

A file is read as ``claimtrace evaluate`` reads it (:mod:`claimtrace.evaluation.submission`):
scored by the course's rules (a claim left out, or an entry lacking a key, is skipped; claims of
other splits are ignored), placed in the split its claims belong to, and audited
(:mod:`claimtrace.evaluation.audit`); the strict score (every claim counted) stands beside it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from claimtrace import course
from claimtrace.compare.llm_report import condition_pairs, llm_report, spread
from claimtrace.compare.run_store import run_digest
from claimtrace.compare.uncertainty import run_statistics
from claimtrace.data.files import Claim, json_from_bytes
from claimtrace.errors import DataError, Missing
from claimtrace.evaluation import llm as L
from claimtrace.evaluation.audit import report_file
from claimtrace.evaluation.scorer import Evaluation, check_predictions_size, evaluate, evidence_f, predictions_bytes
from claimtrace.evaluation.submission import strict_note, strict_score
from claimtrace.explain.retrieval import RetrievalView
from claimtrace.workdir.reader import BuildReader

__all__ = ["Run", "read_run", "run_from_json", "load_run", "read_class", "chosen_split", "compare"]

#: The protocols the notebook's model is run under, in the order pages show them.
PROTOCOLS = ("notebook", "alone")


@dataclass(frozen=True)
class Run:
    """One system's predictions on one split.

    ``digest`` is the sha256 of the file's bytes (its first 16 hex digits name the run on the
    site: ``/compare/<digest>``); ``predictions`` the entries the course's scorer scores (claims
    of the split, both keys present); ``missing`` the split's claims it does not score (left out
    of the file, or skipped); ``report`` what reading the file found (:meth:`FileReport.to_dict`
    without the scores: the split, the claims of each split, the ids matched by text, the audit).
    """

    name: str
    digest: str
    split: str
    predictions: dict[str, Claim]
    missing: tuple[str, ...]
    report: dict = field(default_factory=dict)

    @property
    def audit(self) -> list[dict]:
        return self.report.get("audit", [])


def read_run(
    raw: bytes,
    source: str,
    name: str | None,
    splits: Mapping[str, Mapping[str, Claim]],
    split: str | None = None,
    **context,
) -> Run:
    """A run from a file's bytes, read as the course's scorer reads it and placed in the split
    its claims belong to (or ``split``).

    Raises DataError naming ``source`` only for what the course's scorer cannot score (over the
    size cap, not JSON, not an object, an entry its code fails on), or when no split holds the
    file's claims. ``context``: the course baseline's evidences and the stopwords, for the audit.
    """
    check_predictions_size(len(raw), source)
    return run_from_json(json_from_bytes(raw, source), raw, source, name, splits, split, **context)


def run_from_json(
    value: object,
    raw: bytes,
    source: str,
    name: str | None,
    splits: Mapping[str, Mapping[str, Claim]],
    split: str | None = None,
    **context,
) -> Run:
    """:func:`read_run` of a file already parsed (``value``; ``raw`` its bytes, for the digest)."""
    report = report_file(value, source, splits, split, **context)
    gold = splits[report.found.split]
    predictions = {cid: claim for cid, claim in report.read.entries.items() if cid in gold}
    missing = tuple(cid for cid in gold if cid not in predictions)
    digest = run_digest(raw)
    found = {key: value for key, value in report.to_dict().items() if key in REPORT_KEYS}
    if L.run_metadata(value) is not None:  # an LLM run: its own entries and metadata, scored in compare()
        found["llm_run"] = {key: entry for key, entry in value.items() if key in gold or key == L.RUN_KEY}
    return Run(name or Path(source).stem, digest, report.found.split, predictions, missing, found)


#: What a run keeps of its file's report (its scores are computed in :func:`compare`).
REPORT_KEYS = ("split", "claims_by_split", "matched_by_text", "audit")


def load_run(
    path: str | Path, name: str | None, splits: Mapping[str, Mapping[str, Claim]], split: str | None = None, **context
) -> Run:
    """:func:`read_run` of a file (refused before it is read when over the size cap)."""
    return read_run(predictions_bytes(path), str(path), name, splits, split, **context)


def read_class(
    folder: str | Path, splits: Mapping[str, Mapping[str, Claim]], split: str | None = None, **context
) -> tuple[list[Run], list[dict]]:
    """Every ``*.json`` of a folder (a class), in name order, each named by its file's stem and
    read as :func:`load_run` reads it.

    Returns
    -------
    (runs, set_aside)
        The runs read, of whatever split each is of (the caller keeps the splits it compares),
        and ``{"file", "why"}`` for each file the course's scorer cannot score (or whose bytes
        another file of the folder already holds), in name order.

    Raises DataError when ``folder`` is not a folder.
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise DataError(f"{folder}: no such folder")
    runs: list[Run] = []
    set_aside: list[dict] = []
    seen: dict[str, str] = {}
    for path in sorted(folder.glob("*.json")):
        try:
            run = load_run(path, None, splits, split, **context)
        except DataError as err:
            set_aside.append({"file": str(path), "why": str(err).removeprefix(f"{path}: ")})
            continue
        if run.digest in seen:
            set_aside.append({"file": str(path), "why": f"the same bytes as {seen[run.digest]}"})
            continue
        seen[run.digest] = path.name
        runs.append(run)
    return runs, set_aside


#: The splits in the order a tie between them is settled (the split most runs are of is compared).
PREFERRED = ("dev", "test", "train")


def chosen_split(runs: Sequence[Run], split: str | None = None) -> str:
    """``split``, else the split most runs are of (a tie: dev, then test, then train)."""
    return split or max(PREFERRED, key=lambda s: sum(run.split == s for run in runs))


def _unique_names(runs: Sequence[Run]) -> None:
    seen: dict[str, str] = {}
    for run in runs:
        if run.name in seen:
            raise DataError(f"two runs are named {run.name!r}: give each its own --name")
        seen[run.name] = run.digest


def _bm25(build: BuildReader, split: str) -> dict[str, list[str]] | None:
    try:
        return build.evidence_ids(split, "bm25")
    except Missing:
        return None


def compare(build: BuildReader, runs: Sequence[Run], split: str = "dev", passages: bool = True) -> dict:
    """Every run beside the build's pipeline, claim by claim.

    Parameters
    ----------
    build : claimtrace.workdir.reader.BuildReader
        A build with its retrieval and classifier stages (BM25's, when built, is shown too).
    runs : sequence of Run
        Runs of ``split`` (:func:`load_run`), with distinct names.
    split : {"dev", "test", "train"}
    passages : bool
        Include, per claim and run, the notebook retrieval's view of every passage the run named.

    Returns
    -------
    dict
        ``{"split", "labelled", "runs", "leaderboard", "scoreboard", "table2", "claims",
        "nobody_right"}``: ``runs`` one summary per run (course scores on a labelled split,
        agreement with the notebook and BM25 always); ``leaderboard`` the run names by HM;
        ``claims`` one row per claim in file order.
    """
    _unique_names(runs)
    claims = build.claims(split)
    labelled = all(claim.label is not None for claim in claims.values())
    records = build.retrieval(split)
    verdicts = build.verdicts(split)
    bm25 = _bm25(build, split)
    rows = [
        _claim_row(build, claim, records[cid], verdicts[cid], bm25, runs, labelled, passages)
        for cid, claim in claims.items()
    ]
    results = (
        {run.name: evaluate(run.predictions, claims, source=run.name, skip_missing=True) for run in runs}
        if labelled
        else {}
    )
    summaries = [_run_summary(run, results.get(run.name), rows, claims) for run in runs]
    out = {
        "split": split,
        "labelled": labelled,
        "runs": summaries,
        "leaderboard": [s["name"] for s in sorted(summaries, key=lambda s: -(s["HM"] or 0.0))] if labelled else [],
        "scoreboard": scoreboard_rows(build) if split == "dev" else [],
        "table2": course.TABLE2.get(split),
        "claims": rows,
        "nobody_right": [r["claim_id"] for r in rows if labelled and runs and r["runs_right"] == 0],
    }
    if labelled and runs and split == "dev":
        out["statistics"] = run_statistics(build, results, claims, split)
    if labelled:
        _llm_figures(build, runs, summaries, out)
    return out


def _llm_figures(build: BuildReader, runs: Sequence[Run], summaries: list[dict], out: dict) -> None:
    """Each LLM run's own figures on its sample (docs/llm.md), in its summary's ``llm``, the
    run-to-run spread of several runs of one model (``llm_spread``) and its gold-passage and
    retrieved-passage runs of one sample paired (``llm_conditions``)."""
    llm_runs = {run.name: run.report["llm_run"] for run in runs if "llm_run" in run.report}
    if not llm_runs:
        return
    reports = {name: llm_report(build, value) for name, value in llm_runs.items()}
    for summary in summaries:
        if summary["name"] in reports:
            summary["llm"] = reports[summary["name"]]
    out["llm_spread"] = spread(reports, {name: L.run_metadata(value) for name, value in llm_runs.items()})
    out["llm_conditions"] = condition_pairs(build, llm_runs)


def scoreboard_rows(build: BuildReader) -> list[dict]:
    """The build's own rows to set beside the runs: the notebook's pipeline and BM25's."""
    try:
        board = build.scoreboard()
    except Missing:
        return []
    keep = ("notebook+notebook+notebook", "bm25+notebook+notebook", "bm25+intended+alone")
    return [row for row in board["rows"] if row["name"] in keep]


def _claim_row(
    build: BuildReader,
    claim: Claim,
    record: dict,
    verdict: dict,
    bm25: Mapping[str, list[str]] | None,
    runs: Sequence[Run],
    labelled: bool,
    passages: bool,
) -> dict:
    gold = list(claim.evidences)
    notebook_ids = record["evidences"]
    bm25_ids = bm25.get(claim.id) if bm25 is not None else None
    notebook = {
        "evidences": notebook_ids,
        "F": evidence_f(notebook_ids, gold) if labelled else None,
        "verdicts": {p: verdict["retrieved"][p]["verdict"] for p in PROTOCOLS},
        "fallback": bool(record["fallback"]),
    }
    views = _passage_views(RetrievalView(build, record), runs, claim.id, gold) if passages else {}
    row = {
        "claim_id": claim.id,
        "claim_text": claim.text,
        "label": claim.label,
        "gold": gold,
        "notebook": notebook,
        "bm25": None
        if bm25_ids is None
        else {"evidences": bm25_ids, "F": evidence_f(bm25_ids, gold) if labelled else None},
        "runs": {},
    }
    for run in runs:
        predicted = run.predictions.get(claim.id)
        if predicted is None:
            row["runs"][run.name] = None
            continue
        ids = list(predicted.evidences)
        entry = {
            "label": predicted.label,
            "correct": predicted.label == claim.label if labelled else None,
            "evidences": ids,
            "F": evidence_f(ids, gold) if labelled else None,
            "found_gold": bool(set(ids) & set(gold)) if labelled else None,
            "same_label_as_notebook": predicted.label == notebook["verdicts"]["notebook"],
            "shared_with_notebook": len(set(ids) & set(notebook_ids)),
            "shared_with_bm25": None if bm25_ids is None else len(set(ids) & set(bm25_ids)),
        }
        if passages:
            entry["passages"] = [views[pid] for pid in ids]
            entry["why"] = _why(entry, notebook, claim, labelled)
        row["runs"][run.name] = entry
    answered = [e for e in row["runs"].values() if e is not None]
    row["runs_found_gold"] = sum(bool(e["found_gold"]) for e in answered) if labelled else None
    row["runs_right"] = sum(bool(e["correct"]) for e in answered) if labelled else None
    return row


def _passage_views(view: RetrievalView, runs: Sequence[Run], claim_id: str, gold: list[str]) -> dict[str, dict]:
    """The notebook retrieval's view of every passage any run named for the claim, each computed
    once, by id (a class names the same passages again and again: the course baseline's, the gold
    ones). A passage's view depends only on the claim and the passage (its figures are computed
    passage by passage), so it is the row :meth:`RetrievalView.passages` gives for one run's list;
    runs naming the same passage share its row, which readers never change."""
    named: dict[str, None] = {}
    for run in runs:
        predicted = run.predictions.get(claim_id)
        if predicted is not None:
            named.update(dict.fromkeys(predicted.evidences))
    ids = list(named)
    if not ids:
        return {}
    return dict(zip(ids, view.passages(ids, gold), strict=True))


def _why(entry: dict, notebook: dict, claim: Claim, labelled: bool) -> list[str]:
    """Where the trace can say why a run and the notebook differ on this claim, one sentence each."""
    out = []
    if labelled and entry["correct"] != (notebook["verdicts"]["notebook"] == claim.label):
        who = "your label is right and the notebook's is not" if entry["correct"] else "the notebook's label is right"
        gold_seen = any(pid in claim.evidences for pid in notebook["evidences"])
        out.append(
            f"{who}: the notebook's model said {notebook['verdicts']['notebook']} (batches of 16; "
            f"{notebook['verdicts']['alone']} alone) reading {'a gold passage' if gold_seen else 'no gold passage'}"
            f"{' from the fallback' if notebook['fallback'] else ''}"
        )
    for passage in entry.get("passages", []):
        if passage["stopped_by"] == "returned":
            continue
        if passage["gold"] or not labelled:
            kind = "your gold passage" if passage["gold"] else "your passage"
            out.append(f"{kind} {passage['id']} is not the notebook's: {passage['why']}{_shared(passage)}")
    return out


def _shared(passage: dict) -> str:
    if passage["shared"] is None:
        return ""
    return f" (it shares {passage['shared']} of its {len(passage['tags'])} tags with the claim)"


def _run_summary(run: Run, result: Evaluation | None, rows: list[dict], claims: Mapping[str, Claim]) -> dict:
    """A run's agreement with the build's pipeline and, on a labelled split (``result``: the
    course scorer's, computed once in :func:`compare`), its course scores."""
    answered = [r["runs"][run.name] for r in rows if r["runs"][run.name] is not None]
    summary = {
        "name": run.name,
        "digest": run.digest,
        "claims": len(answered),
        "missing": len(run.missing),
        "same_label_as_notebook": sum(e["same_label_as_notebook"] for e in answered),
        "claims_sharing_a_passage_with_notebook": sum(e["shared_with_notebook"] > 0 for e in answered),
        "claims_sharing_a_passage_with_bm25": sum((e["shared_with_bm25"] or 0) > 0 for e in answered),
        "F": None,
        "A": None,
        "HM": None,
    }
    summary["audit"] = run.audit
    if result is not None:
        summary.update({"F": result.F, "A": result.A, "HM": result.HM})
        strict = strict_score(run.predictions, claims, run.name)
        summary["strict"] = {"F": strict.F, "A": strict.A, "HM": strict.HM, "claims": strict.claims}
        summary["strict_note"] = strict_note(result, strict)
        summary["found_gold"] = sum(bool(e["found_gold"]) for e in answered)
        summary["right"] = sum(bool(e["correct"]) for e in answered)
    return summary


def pipeline_found_gold(report: dict) -> dict[str, int]:
    """How many claims each of the notebook's retrieval and BM25 found a gold passage for."""
    rows = report["claims"]
    return {
        "notebook": sum(bool(set(r["notebook"]["evidences"]) & set(r["gold"])) for r in rows),
        "bm25": sum(bool(r["bm25"] and set(r["bm25"]["evidences"]) & set(r["gold"])) for r in rows),
    }


def explained_wins(report: dict, run_name: str, limit: int = 3) -> list[dict]:
    """Claims where the run's label is right and the notebook's is wrong, those the trace explains
    best first: the most of the run's passages that the build holds and the notebook's retrieval
    stopped by a named rule, then file order."""
    wins = []
    for order, row in enumerate(report["claims"]):
        entry = row["runs"].get(run_name)
        if not entry or not entry["correct"] or row["notebook"]["verdicts"]["notebook"] == row["label"]:
            continue
        explained = sum(p["stopped_by"] not in ("returned", "not in the build") for p in entry.get("passages", []))
        wins.append((-explained, order, {"claim_id": row["claim_id"], "why": entry.get("why", [])}))
    return [win for _, _, win in sorted(wins, key=lambda w: w[:2])[:limit]]
