"""The parity checklist: every figure the notebook printed, the report tabulated or the 2026
explainer's site quotes, beside this build's, each with a status (exact, close, differs, cannot
compare) and the reason, and a link to where the site explains it.

Nothing here is computed afresh: the course’s figures are :mod:`claimtrace.course`'s, the
build's are read off the pages that already show them (the walkthrough claim's trace, Explore's
dev and test data, the methods page's corpus), so that the checklist and the pages can never disagree.
"""

from __future__ import annotations

import re
from typing import Any

from claimtrace import course
from claimtrace.constants import EVIDENCE_PASSAGES
from claimtrace.evaluation import statistics as S

#: A figure "close" to the course’s: within this share of it.
CLOSE = 0.10
STATUSES = ("exact", "close", "differs", "cannot compare")

#: Where the site explains each group of figures (relative to the site's root).
WHERE = {
    "retrieval": "walkthrough.html#filter",
    "tagging": "walkthrough.html#tags",
    "input": "walkthrough.html#input",
    "table": "walkthrough.html#verdict",
    "accuracy": "explore/dev.html#course-figures",
    "scores": "explore/dev.html#table2",
    "training": "explore/dev.html#training-curve",
    "wilson": "explore/dev.html#accuracy",
    "variants": "explore/dev.html#variants",
    "corpus": "methods.html#lengths",
}


def parity(site_data) -> dict:
    """Every course figure beside this build’s.

    Returns
    -------
    dict
        ``{"rows": [{"key", "what", "group", "source", "course", "course_shown", "build",
        "build_shown", "status", "reason", "where"}], "counts": {status: n}, "corpus_note"}``.
    """
    corpus = site_data.build_info(brief=True).get("corpus")
    reasons = _reasons(corpus)
    trace = site_data.trace(course.WALKTHROUGH_CLAIM)
    dev, test = site_data.explore("dev"), site_data.explore("test")
    rows = [
        *_trace_rows(trace),
        *_explore_rows(dev, test),
        *_training_rows(dev),
        *_wilson_rows(),
        *_table1_rows(site_data.methods()["glance"]["corpus"]),
    ]
    out = [_judged(row, reasons) for row in rows]
    counts = {status: sum(row["status"] == status for row in out) for status in STATUSES}
    return {"rows": out, "counts": counts, "close": CLOSE, "corpus_note": course.corpus_note(corpus)["note"]}


def _row(key: str, what: str, group: str, course_value: Any, shown: str, source: str, build: Any) -> dict:
    return {
        "key": key,
        "what": what,
        "group": group,
        "source": source,
        "course": course_value,
        "course_shown": shown,
        "build": build,
        "where": WHERE[group],
    }


#: The walkthrough claim's figures: (the trace's section, its key there, the row's group, what it is).
TRACE_FIGURES = (
    ("retrieval", "fallback_share", "retrieval", "dev claims whose retrieval fell back (nothing passed the filter)"),
    ("retrieval", "passed", "retrieval", "claim-752: passages that passed the filter"),
    ("retrieval", "kept", "retrieval", "claim-752: passages kept"),
    ("retrieval", "max_shared", "retrieval", "claim-752: most tags a passage shares with it"),
    ("retrieval", "F", "retrieval", "claim-752: evidence F"),
    ("tagging", "last_feature", "tagging", "the tagging vocabulary’s last feature"),
    ("tagging", "passages_with_last_feature", "tagging", "passages tagged with the last feature"),
    ("tagging", "share_with_last_feature", "tagging", "share of passages tagged with it"),
    ("tagging", "passages", "tagging", "passages in the corpus"),
    ("classifier", "real_tokens", "input", "claim-752: real tokens of the model input"),
    ("classifier", "pad_tokens", "input", "claim-752: [PAD] tokens of the model input"),
    ("classifier", "table_vs_torch", "table", "the table’s largest difference from PyTorch’s logits"),
)


def _trace_rows(trace: dict) -> list[dict]:
    rows = []
    for section, key, group, what in TRACE_FIGURES:
        pair = ((trace.get(section) or {}).get("course") or {}).get(key)
        figure = course.FIGURES[_figure_key(section, key)]
        build = None if pair is None else pair["build"]
        rows.append(_row(key, what, group, figure.value, figure.shown, figure.source, build))
    return rows


def _figure_key(section: str, key: str) -> str:
    """The :data:`course.FIGURES` key of a trace's pair."""
    if section == "retrieval":
        return "dev_fallback_share" if key == "fallback_share" else f"claim752_{key}"
    if section == "classifier" and key != "table_vs_torch":
        return f"claim752_{key}"
    return key


def _explore_rows(dev: dict, test: dict) -> list[dict]:
    rows = []
    accuracy = (dev.get("course") or {}).get("accuracy") or {}
    for source in ("gold", "retrieved"):
        pair = accuracy.get(source)
        figure = course.FIGURES[f"dev_{source}_notebook_correct"]
        what = f"dev accuracy, {source} evidence, batches of 16 (claims right of 154)"
        rows.append(
            _row(
                f"accuracy_{source}",
                what,
                "accuracy",
                figure.value,
                figure.shown,
                figure.source,
                pair and pair["build"],
            )
        )
    for split, page in (("dev", dev), ("test", test)):
        table2 = (page.get("course") or {}).get("table2") or {}
        for metric, value in course.TABLE2[split].items():
            build = (table2.get(metric) or {}).get("build")
            what = f"{split} {metric}, the notebook’s pipeline (Table 2)"
            rows.append(
                _row(f"table2_{split}_{metric}", what, "scores", value, f"{value:.5f}", course.REPORT_TABLE2, build)
            )
    raw = next((v for v in dev.get("retrieval_variants") or [] if v["variant"] == "raw-claim-text"), None)
    figure = course.FIGURES["final_cell_raw_claim_F"]
    what = "dev F of the notebook’s final cell (the raw claim text retrieved)"
    rows.append(
        _row("final_cell_raw_claim_F", what, "variants", figure.value, figure.shown, figure.source, raw and raw["F"])
    )
    return rows


def _training_rows(dev: dict) -> list[dict]:
    """The 2024 run’s dev accuracy epoch by epoch (gold evidence, as it measured while training)."""
    rows = []
    for row in (dev.get("course") or {}).get("training") or []:
        what = f"dev accuracy after epoch {row['epoch']} (training log, gold evidence)"
        shown = f"{row['course_dev']:.4f}"
        rows.append(
            _row(
                f"training_dev_{row['epoch']}",
                what,
                "training",
                row["course_dev"],
                shown,
                course.NOTEBOOK_TRAINING,
                row.get("dev"),
            )
        )
    return rows


def _wilson_rows() -> list[dict]:
    rows = []
    for (k, n), bounds in course.EXPLAINER_WILSON.items():
        interval = S.wilson(k, n)
        build = f"{100 * interval.lower:.1f}% to {100 * interval.upper:.1f}%"
        shown = f"{100 * bounds[0]:.1f}% to {100 * bounds[1]:.1f}%"
        rows.append(
            _row(
                f"wilson_{k}_{n}",
                f"95% Wilson interval of {k}/{n}",
                "wilson",
                shown,
                shown,
                course.EXPLAINER_SITE,
                build,
            )
        )
    return rows


def _table1_rows(corpus: dict) -> list[dict]:
    """The report's Table 1, bucket by bucket, beside the build's corpus (the tagging stage's
    figures, as the methods page shows them)."""
    built = {row["bucket"]: row["build"]["count"] for row in corpus.get("lengths", [])}
    return [
        _row(
            "table1_" + bucket.replace("<=", "le").replace(">", "gt"),  # a key safe in an attribute
            f"passages of {bucket} words (Table 1)",
            "corpus",
            value,
            f"{value:,}",
            course.REPORT_TABLE1,
            built.get(bucket),
        )
        for bucket, value in course.TABLE1.items()
    ]


def _reasons(corpus: dict | None) -> dict[str, str]:
    """Why each group's figures may differ from the course's on this build."""
    other_corpus = (
        ""
        if course.is_course_corpus(corpus)
        else f"another corpus: this build’s {(corpus or {}).get('passages', 0):,} passages, not the course’s "
        f"{EVIDENCE_PASSAGES:,}"
    )
    training = "another training: this build’s checkpoint (trained with seed 0), not the 2024 run’s weights (the notebook set no seed)"
    both = "; ".join(part for part in (training, other_corpus) if part)
    return {
        "retrieval": other_corpus,
        "tagging": other_corpus,
        "input": other_corpus and f"{other_corpus} (the input holds the retrieved passages)",
        "table": f"{training}: the difference is of other weights, within float32’s rounding either way",
        "accuracy": both,
        "scores": both,
        "training": training,
        "wilson": "",
        "variants": other_corpus,
        "corpus": other_corpus,
    }


def _judged(row: dict, reasons: dict[str, str]) -> dict:
    status = _status(row["course"], row["course_shown"], row["build"])
    reason = reasons[row["group"]] if status in ("close", "differs") else ""
    if row["key"].startswith("table2_test"):
        reason = "the test labels are not public: the course scored them, a build cannot"
    elif status == "cannot compare":
        reason = reason or "this build has not computed it (a stage is missing)"
    elif status == "exact":
        reason = "the same" + (" to the printed digits" if row["build"] != row["course"] else "")
    return {**row, "build_shown": _shown_like(row["build"], row["course_shown"]), "status": status, "reason": reason}


def _decimals(shown: str) -> tuple[int, float]:
    """How many decimals a printed figure has, and its scale (100 for a percentage)."""
    number = re.search(r"[0-9][0-9,]*(?:\.([0-9]+))?(e-?[0-9]+)?", shown)
    if number is None or number.group(2):
        return -1, 1.0
    return len(number.group(1) or ""), 100.0 if shown.endswith("%") else 1.0


def _status(course_value: Any, shown: str, build: Any) -> str:
    if build is None:
        return "cannot compare"
    if isinstance(course_value, str) or isinstance(build, str):
        return "exact" if build == course_value else "differs"
    decimals, scale = _decimals(shown)
    if build == course_value or (
        decimals >= 0 and round(build * scale, decimals) == round(course_value * scale, decimals)
    ):
        return "exact"
    if abs(build - course_value) <= CLOSE * abs(course_value):
        return "close"
    return "differs"


def _shown_like(build: Any, shown: str) -> str:
    """The build’s value printed as the course printed its own."""
    if build is None:
        return "—"
    if isinstance(build, str):
        return build
    decimals, scale = _decimals(shown)
    if "/" in shown:
        return f"{build}/{shown.split('/')[1]}"
    if decimals < 0:
        return f"{build:.1e}"
    text = f"{build * scale:,.{decimals}f}"
    return text + ("%" if scale == 100 else "")
