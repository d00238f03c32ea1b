"""The landing page (``/``): what claimtrace is, the notebook's main findings over dev as plain
sentences (each figure with its 95% interval, each comparison paired and tested), the three ways
in; and the example claims the live page offers, one per label.

Every figure is read from the build: the dev scoreboard's intervals and its Holm-corrected tests
against the notebook's own row (:func:`claimtrace.evaluation.scoreboard.scoreboard`), or paired
here with the project's helper (:func:`claimtrace.evaluation.significance.verdicts_paired`).
"""

from __future__ import annotations

from claimtrace.constants import LABELS
from claimtrace.errors import Missing
from claimtrace.evaluation.scoreboard import NOTEBOOK_ROW
from claimtrace.evaluation.significance import verdicts_paired
from claimtrace.evaluation.statistics import wilson
from claimtrace.web.views.status import missing
from claimtrace.workdir.reader import BuildReader

#: The split every finding is of: the labelled split the course scores systems on.
SPLIT = "dev"
#: The scoreboard rows a finding sets beside the notebook's own (``retrieval+model+protocol``).
ALONE_ROW = "notebook+notebook+alone"
BM25_ROW = "bm25+notebook+notebook"
MCNEMAR = "McNemar’s exact test"
BOOTSTRAP = "paired bootstrap test"


def _pct(share: float) -> str:
    return f"{100 * share:.0f}%"


def _count(interval: dict) -> str:
    """``68 right (44%; 95% interval 37–52%)`` of a Wilson interval."""
    low, high = _pct(interval["lower"]).rstrip("%"), _pct(interval["upper"])
    return f"{interval['successes']} right ({_pct(interval['estimate'])}; 95% interval {low}–{high})"


def _hm(interval: dict) -> str:
    return f"{interval['estimate']:.3f} (95% interval {interval['lower']:.3f}–{interval['upper']:.3f})"


def _figure(interval: dict) -> dict:
    return {key: interval[key] for key in ("estimate", "lower", "upper", "successes", "n") if key in interval}


def _test(name: str, comparison: dict, corrected_over: int | None, resamples: int | None = None) -> dict:
    """A paired test as the small print states it: its name, p (Holm-corrected over the
    scoreboard's comparisons with the notebook's row when ``corrected_over``; a bootstrap p of 0
    as under one in ``resamples``) and the verdict."""
    p = comparison["p_holm"] if corrected_over else comparison["p"]
    shown = f"p < {1 / resamples:.2g}" if resamples and p == 0 else f"p = {p:.2g}"
    how = f", Holm-corrected over {corrected_over} comparisons" if corrected_over else ""
    return {
        "name": name,
        "p": p,
        "corrected_over": corrected_over,
        "verdict": comparison["verdict"],
        "text": f"{name}, {shown}{how}",
    }


def _finding(key: str, sentence: str, other: dict, notebook: dict, test: dict) -> dict:
    return {
        "key": key,
        "sentence": f"{sentence}: {test['verdict']}.",
        "other": _figure(other),
        "notebook": _figure(notebook),
        "test": test,
    }


def findings(build: BuildReader) -> list[dict]:
    """The findings over dev, in reading order: the majority label, the claims run alone, the
    gold passages, BM25's passages; each beside the notebook's pipeline, with both figures, their
    intervals and the paired test (Missing when the build has no scoreboard yet)."""
    board = build.scoreboard()
    rows = {entry["name"]: entry for entry in board["rows"] + board["baselines"]}
    compared = len(rows) - 1
    notebook = rows[NOTEBOOK_ROW.name]["intervals"]
    majority = next(b for b in board["baselines"] if b["name"].startswith("baseline:always-"))
    label = majority["name"].removeprefix("baseline:always-")
    alone, bm25 = rows[ALONE_ROW], rows[BM25_ROW]
    a = majority["intervals"]["A"]
    out = [
        _finding(
            "majority",
            f"Of the {a['n']} {SPLIT} claims, always answering {label} gets {_count(a)}, the notebook’s "
            f"pipeline {_count(notebook['A'])}",
            a,
            notebook["A"],
            _test(MCNEMAR, majority["paired"], compared),
        ),
        _finding(
            "alone",
            f"Run one claim at a time instead of in the notebook’s batches of 16, its model gets "
            f"{_count(alone['intervals']['A'])}, against {_count(notebook['A'])} in batches",
            alone["intervals"]["A"],
            notebook["A"],
            _test(MCNEMAR, alone["paired"], compared),
        ),
        _gold_finding(build, notebook["A"]),
        _finding(
            "bm25",
            f"With BM25’s passages instead of the notebook’s retrieval, the course’s score (the harmonic "
            f"mean of evidence F and accuracy) is {_hm(bm25['intervals']['HM'])}, against {_hm(notebook['HM'])}",
            bm25["intervals"]["HM"],
            notebook["HM"],
            _test(BOOTSTRAP, bm25["paired"]["HM"], compared, board["statistics"].get("resamples")),
        ),
    ]
    return out


def _gold_finding(build: BuildReader, notebook_a: dict) -> dict:
    """The notebook's model given each dev claim's gold passages against its retrieved ones
    (batches of 16 both), paired over the same claims (a single comparison, uncorrected)."""
    claims = build.claims(SPLIT)
    on_gold = build.verdict_of(SPLIT, "notebook", "gold", "notebook")
    retrieved = build.verdict_of(SPLIT, "notebook", "retrieved", "notebook")
    paired = verdicts_paired(claims, on_gold, retrieved)
    gold_a = wilson(sum(on_gold[c] == claims[c].label for c in claims), len(claims)).to_dict()
    return _finding(
        "gold",
        f"Given each claim’s gold passages instead of the retrieved ones, the notebook’s model gets "
        f"{_count(gold_a)}, against {_count(notebook_a)}",
        gold_a,
        notebook_a,
        _test(MCNEMAR, paired, None),
    )


def example_claims(build: BuildReader) -> list[dict]:
    """One dev claim per label for the live page to trace in one click: the first in file order
    whose label the notebook's model gives it alone on the retrieved passages (the live page's
    verdict), else the first of that label; labels in LABELS order. None before the classifier
    stage."""
    claims = build.claims(SPLIT)
    try:
        alone = build.verdict_of(SPLIT, "notebook", "retrieved", "alone")
    except Missing:
        return []
    out = []
    for label in LABELS:
        ids = [cid for cid, claim in claims.items() if claim.label == label]
        if not ids:
            continue
        chosen = next((cid for cid in ids if alone.get(cid) == label), ids[0])
        out.append({"label": label, "claim_id": chosen, "text": claims[chosen].text})
    return out


def landing(build: BuildReader) -> dict:
    """The landing page's data: ``{"split", "claims", "findings": {"status": "ok", "items":
    [finding]} | a missing section}``;
    a finding is ``{"key", "sentence", "other", "notebook", "test": {"name", "p",
    "corrected_over", "verdict", "text"}}``."""
    try:
        found = {"status": "ok", "items": findings(build)}
    except Missing as err:
        found = missing(err.stage, err.reason)
    return {"split": SPLIT, "claims": len(build.claims(SPLIT)), "findings": found}
