"""Explore's error analysis by gold label (dev): the notebook's verdicts (retrieved evidence,
notebook batches) and the retrieval on each label's claims, read off the page's rows and computed
once by :func:`claimtrace.evaluation.by_label.by_label`, with the chart's rows."""

from __future__ import annotations

from claimtrace.constants import LABELS
from claimtrace.evaluation.by_label import by_label

#: The chart's panels: (key in a label's figures, the panel's name).
PANELS = (
    ("recall", "recall"),
    ("precision", "precision"),
    ("F1", "F1"),
    ("evidence_F", "evidence F"),
    ("found", "gold found"),
)


def label_analysis(rows: list[dict]) -> dict:
    """The analysis of Explore's claim rows (each with its label, verdicts, F and found), and
    ``"chart"``: one row per label for :func:`claimtrace.web.pictures.interval_chart`, a figure
    without an interval (precision of a label never predicted) left out."""
    analysis = by_label(
        [row["label"] for row in rows],
        [row["retrieved"]["notebook"] for row in rows],
        [row["F"] for row in rows],
        [row["found"] for row in rows],
        LABELS,
    )
    analysis["panels"] = [name for _, name in PANELS]
    analysis["chart"] = [
        {"name": f"{entry['label']} ({entry['claims']})", "kind": "row"}
        | {name: _drawable(entry.get(key)) for key, name in PANELS}
        for entry in analysis["labels"]
    ]
    return analysis


def _drawable(interval: dict | None) -> dict | None:
    """An interval the chart can draw: None without a claim or a prediction behind it."""
    if interval is None or interval.get("n") == 0:
        return None
    return interval
