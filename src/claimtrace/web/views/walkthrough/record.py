"""The verdict's record: how often the pipeline that gave a claim its verdict is right over the
dev claims, with its 95% interval, beside always answering the majority label, and whether the
two differ by more than chance.

Every figure is read from the build: the dev scoreboard's row (its Wilson interval of accuracy)
and the majority baseline's entry, whose ``paired`` test is the baseline minus the notebook's
own row (McNemar's exact test, Holm-corrected over every comparison the scoreboard makes).
Nothing is recomputed but the Wilson interval of the gold-evidence accuracy, from the counts the
classifier stage recorded (the scoreboard has no gold-evidence row), with the one implementation
of :func:`claimtrace.evaluation.statistics.wilson`.
"""

from __future__ import annotations

from claimtrace.errors import DataError, Missing
from claimtrace.evaluation import statistics as S
from claimtrace.evaluation.scoreboard import NOTEBOOK_ROW
from claimtrace.web.views.status import missing
from claimtrace.web.views.walkthrough.claim import Section
from claimtrace.workdir.reader import BuildReader

#: The scoreboard row of a typed claim's verdict: the notebook's model on the notebook
#: retrieval's passages, the claim alone (a typed claim has no batch).
ALONE_ROW = "notebook+notebook+alone"
#: How the majority-label baseline is named in the scoreboard (``baseline:always-SUPPORTS``).
MAJORITY_PREFIX = "baseline:always-"


def record_section(build: BuildReader, typed: bool) -> Section:
    """The dev record of the verdict a page shows first: the notebook's pipeline (retrieved
    evidence, batches of 16) for a course claim, the claim-alone row for a typed one.

    Returns
    -------
    dict
        ``{"status": "ok", "row", "protocol", "split", "A"}`` (``A``: the row's Wilson interval,
        with ``successes`` and ``n``), ``"baseline"``: ``{"name", "label", "A", "test"}`` or
        None, where ``test`` is ``{"tested": True, "difference", "p", "p_holm", "verdict",
        "comparisons"}`` (the baseline minus this row) or ``{"tested": False, "against"}``
        (the build pairs the baseline with the notebook's row only), and ``"gold"``: the same
        model's accuracy on the gold passages under the same protocol (Wilson), or None.
        ``{"status": "missing", ...}`` before the scoreboard is built.
    """
    try:
        board = build.scoreboard()
    except Missing as err:
        return Section(missing(err.stage, err.reason))
    row_name = ALONE_ROW if typed else NOTEBOOK_ROW.name
    row = next((r for r in board["rows"] if r["name"] == row_name), None)
    if row is None or "intervals" not in row:
        return Section(missing("classifier", f"scoreboard.json has no figures of the row {row_name}"))
    protocol = row["protocol"]
    return Section(
        {
            "status": "ok",
            "row": row_name,
            "protocol": protocol,
            "split": board["split"],
            "A": row["intervals"]["A"],
            "baseline": _majority(board, row_name),
            "gold": None if typed else _gold(build, board["split"], protocol),
        }
    )


def _majority(board: dict, row_name: str) -> dict | None:
    """The majority baseline's accuracy and its test against the row, as the build made it."""
    entry = next((b for b in board["baselines"] if b["name"].startswith(MAJORITY_PREFIX)), None)
    if entry is None:
        return None
    out = {"name": entry["name"], "label": entry["name"][len(MAJORITY_PREFIX) :], "A": entry["intervals"]["A"]}
    paired = entry.get("paired")
    if row_name != NOTEBOOK_ROW.name or paired is None:
        return {**out, "test": {"tested": False, "against": NOTEBOOK_ROW.name}}
    comparisons = sum(1 for e in board["rows"] + board["baselines"] if "paired" in e)
    test = {
        "tested": True,
        "difference": paired["A"]["estimate"],  # the baseline minus the notebook's row
        "p": paired["p"],
        "p_holm": paired["p_holm"],
        "verdict": paired["verdict"],
        "comparisons": comparisons,
    }
    return {**out, "test": test}


def _gold(build: BuildReader, split: str, protocol: str) -> dict | None:
    """The model's accuracy with the gold passages as its evidence (the classifier stage's
    counts), with its Wilson interval; None when the stage has not recorded it."""
    try:
        counts = build.classifier_summary()[split]["gold"][protocol]
    except (DataError, KeyError):
        return None
    return S.wilson(counts["correct"], counts["claims"]).to_dict()
