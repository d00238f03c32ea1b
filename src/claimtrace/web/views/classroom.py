"""The class page: a teacher's view of every dev run together.

Per claim, how many runs got the label right and how many named a gold passage (read off each
run's own comparison, :meth:`claimtrace.web.runs.Runs.report`'s rows, so nothing is compared
twice); the claims no run got right, each with the notebook's trace of why its pipeline missed
(its verdict and the notebook retrieval's view of every gold passage,
:class:`claimtrace.explain.retrieval.RetrievalView`, the walkthrough's own explanation); and every
file's audit. The leaderboard is the compare index's; this page links to it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence

from claimtrace.constants import BATCH_SIZE, LABELS
from claimtrace.explain.retrieval import RetrievalView
from claimtrace.workdir.reader import BuildReader


def class_page(
    build: BuildReader, runs: Sequence[dict], rows: Mapping[str, Mapping[str, dict]], set_aside: list
) -> dict:
    """The class page's data.

    Parameters
    ----------
    build : BuildReader
        The build the runs are compared with (its dev retrieval explains the misses).
    runs : sequence of dict
        Each dev run's summary (its page's ``run``), in the leaderboard's order.
    rows : mapping
        Each run's claim rows by claim id (``compare``'s rows of that run alone), by digest.
    set_aside : list of dict
        The files set aside when the class was read (``{"file", "why"}``).

    Returns
    -------
    dict
        ``{"split", "runs", "claims", "nobody_right", "set_aside", "totals"}``: ``claims`` one line
        per dev claim in file order (``right`` and ``found_gold`` count runs; a run that left the
        claim out counts as neither); ``nobody_right`` the claims no run got right, each with
        ``why`` lines; ``runs`` each run's name, digest, counts and audit.
    """
    claims = [_claim_line(claim_id, [rows[run["digest"]] for run in runs]) for claim_id in _claim_ids(runs, rows)]
    missed = [line for line in claims if runs and line["right"] == 0]
    records = build.retrieval("dev") if missed else {}
    return {
        "split": "dev",
        "runs": [_run_line(run) for run in runs],
        "claims": claims,
        "nobody_right": [_why_missed(build, records[line["claim_id"]], line, rows, runs) for line in missed],
        "set_aside": set_aside,
        "totals": {
            "runs": len(runs),
            "claims": len(claims),
            "nobody_right": len(missed),
            "notebook_right_nobody": sum(bool(line["notebook_right"]) for line in missed),
        },
    }


def _claim_ids(runs: Sequence[dict], rows: Mapping[str, Mapping[str, dict]]) -> list[str]:
    return list(rows[runs[0]["digest"]]) if runs else []


def _claim_line(claim_id: str, rows: list[Mapping[str, dict]]) -> dict:
    """One claim over every run: how many got its label right and how many named a gold passage."""
    row = rows[0][claim_id]
    entries = [next(iter(r[claim_id]["runs"].values())) for r in rows]
    answered = [e for e in entries if e is not None]
    notebook = row["notebook"]["verdicts"]["notebook"]
    return {
        "claim_id": claim_id,
        "label": row["label"],
        "runs": len(entries),
        "answered": len(answered),
        "right": sum(bool(e["correct"]) for e in answered),
        "found_gold": sum(bool(e["found_gold"]) for e in answered),
        "notebook_label": notebook,
        "notebook_right": notebook == row["label"],
    }


def _run_line(run: dict) -> dict:
    keep = ("name", "digest", "claims", "missing", "right", "found_gold", "F", "A", "HM", "strict", "strict_note")
    return {**{key: run.get(key) for key in keep}, "audit": run.get("audit", [])}


def _why_missed(build: BuildReader, record: dict, line: dict, rows, runs: Sequence[dict]) -> dict:
    """A claim no run got right: what the runs said, and the notebook's trace of its own miss."""
    row = rows[runs[0]["digest"]][line["claim_id"]]
    said = Counter(
        _label_said(entry["label"])
        for entry in (next(iter(rows[run["digest"]][line["claim_id"]]["runs"].values())) for run in runs)
        if entry is not None
    )
    notebook = row["notebook"]
    gold_seen = any(pid in row["gold"] for pid in notebook["evidences"])
    why = [
        f"the notebook’s model said {notebook['verdicts']['notebook']} (batches of {BATCH_SIZE}; "
        f"{notebook['verdicts']['alone']} alone) reading {'a gold passage' if gold_seen else 'no gold passage'}"
        f"{' from the fallback' if notebook['fallback'] else ''}: "
        f"{'right' if line['notebook_right'] else 'wrong'}"
    ]
    for passage in RetrievalView(build, record).passages(row["gold"], row["gold"]):
        if passage["stopped_by"] == "returned":
            why.append(f"gold passage {passage['id']}: returned by the notebook’s retrieval")
        else:
            n = passage["shared"]
            shared = "" if n is None else f" (it shares {n} tag{'' if n == 1 else 's'} with the claim)"
            why.append(f"gold passage {passage['id']} is not the notebook’s: {passage['why']}{shared}")
    return {
        **line,
        "said": ", ".join(f"{label} {n}" for label, n in said.most_common()) or "no run answered it",
        "why": why,
    }


def _label_said(label: str | None) -> str:
    """A run's label as the class page counts it: one of the four, null (no label the scorer can
    read), or the odd label itself."""
    if label is None:
        return "null"
    return label if label in LABELS else repr(label)
