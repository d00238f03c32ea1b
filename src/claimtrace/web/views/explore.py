"""Explore: every claim of a split, with its retrieval figures and verdicts, the accuracy and
confusion for {gold, retrieved} x {alone, notebook}, and the course's scores; all read from the
build (its retrieval records, its verdicts, its summaries)."""

from __future__ import annotations

import json
from typing import Any

from claimtrace import course
from claimtrace.assets import ASSETS_DIR
from claimtrace.constants import LABELS, PROTOCOLS, PROVENANCE_FILE, PROVENANCE_FILES
from claimtrace.data.files import Claim
from claimtrace.errors import DataError, Missing
from claimtrace.evaluation import statistics as S
from claimtrace.evaluation.by_label import gold_found
from claimtrace.evaluation.scoreboard import NOTEBOOK_ROW, scoreboard_row, scoreboard_rows
from claimtrace.evaluation.scorer import evaluate, evidence_scores
from claimtrace.models.predict import protocol_figures
from claimtrace.web.views.counterfactuals import dev_shares
from claimtrace.web.views.label_analysis import label_analysis
from claimtrace.web.views.status import build_info, missing
from claimtrace.workdir.reader import BuildReader, protocol_verdicts

#: Evidence ids of the demo corpus that are not in the course's evidence.json: CLIMATE-FEVER
#: sentences under ``cf:<article>:<n>``.
OUTSIDE_COURSE_PREFIX = "cf:"


def explore(build: BuildReader, split: str) -> dict:
    """The Explore page's data for one split."""
    claims = build.claims(split)
    labelled = all(c.label is not None for c in claims.values())
    out: dict[str, Any] = {
        "split": split,
        "labels": list(LABELS),
        "labelled": labelled,
        "claims": [],
        "build": build_info(build, brief=True),
    }
    records, out["retrieval"] = _read(lambda: build.retrieval(split), {"status": "ok", "source": "build"})
    verdicts, out["classifier"] = _read(lambda: build.verdicts(split), {"status": "ok"})
    out["classifier_paired"] = None  # gold minus retrieved evidence, as the classifier stage tested it
    if labelled and verdicts is not None:
        summary, _ = _read(build.classifier_summary, {})
        out["classifier_paired"] = (summary or {}).get("gold_minus_retrieved", {}).get(split)
    sources = ["gold", "retrieved"] if labelled else ["retrieved"]
    out["claims"] = [
        _claim_row(position, claim, labelled, records, verdicts, sources)
        for position, claim in enumerate(claims.values())
    ]
    if records is not None:
        out["evidence_ids"] = _evidence_ids(records)
    out["accuracy"] = _accuracy(out["claims"], scored=verdicts is not None and labelled)
    out["verdict_counts"] = {} if verdicts is None else _verdict_counts(out["claims"], sources)
    out["retrieval_variants"] = None
    if split == "dev" and records is not None:
        out["retrieval_variants"] = build.retrieval_variants()
    if records is not None:
        fallbacks = sum(row["fallback"] for row in out["claims"])
        out["fallbacks"] = fallbacks
        out["fallback_share"] = fallbacks / len(claims) if claims else 0.0
    out["course_scores"] = None
    if labelled and records is not None and verdicts is not None:
        out["course_scores"] = _course_scores(claims, out["claims"], records)
    out["gold_found"] = out["by_label"] = None
    if labelled and records is not None:
        out["gold_found"] = S.wilson(sum(row["found"] for row in out["claims"]), len(claims)).to_dict()
    if split == "dev" and labelled and records is not None and verdicts is not None:
        out["by_label"] = label_analysis(out["claims"])
    out["course"] = course_figures(build, split, out)
    out["scoreboard"] = scoreboard_section(build, split)
    out["counterfactuals"] = dev_shares(build) if split == "dev" else None
    with_intervals(out)
    return out


def _read(read, ok: dict) -> tuple[Any, dict]:
    """What ``read()`` gives and the ``ok`` status, or None and the missing stage's status."""
    try:
        return read(), ok
    except Missing as err:
        return None, missing(err.stage, err.reason)


def _evidence_ids(records: dict[str, dict]) -> dict:
    """How many evidence ids the split's download holds, and how many of them the course's corpus
    lacks (the demo corpus's "cf:" CLIMATE-FEVER sentences): the course's scorer can only count
    those as wrong evidence."""
    returned = [e for record in records.values() for e in record["evidences"]]
    return {
        "returned": len(returned),
        "outside_course": sum(str(e).startswith(OUTSIDE_COURSE_PREFIX) for e in returned),
    }


def _accuracy(rows: list[dict], scored: bool) -> dict:
    """Each evidence source's accuracy and confusion, per protocol (None unless ``scored``: a
    labelled split with verdicts)."""
    labels = {row["id"]: row["label"] for row in rows}
    return {
        source: protocol_figures(labels, {row["id"]: row[source] for row in rows}) if scored else None
        for source in ("gold", "retrieved")
    }


def _verdict_counts(rows: list[dict], sources: list[str]) -> dict:
    """How often each label is the verdict, per evidence source and protocol."""
    return {
        source: {p: {label: sum(1 for row in rows if row[source][p] == label) for label in LABELS} for p in PROTOCOLS}
        for source in sources
    }


def _claim_row(position: int, claim: Claim, labelled: bool, records, verdicts, sources: list[str]) -> dict:
    """One claim's row of the Explore table: its retrieval figures and its verdicts."""
    row: dict[str, Any] = {
        "id": claim.id,
        "position": position,
        "text": claim.text,
        "label": claim.label,
        "gold_count": len(claim.evidences) if labelled else None,
    }
    if records is not None:
        record = records[claim.id]
        row["fallback"] = bool(record["fallback"])
        row["passed"] = int(record["passed"])
        row["retrieved"] = len(record["evidences"])
        if labelled:
            row["F"] = evidence_scores(record["evidences"], claim.evidences)[2]
            row["found"] = gold_found(record["evidences"], claim.evidences)
    if verdicts is not None:
        for source in sources:
            row[source] = protocol_verdicts(verdicts[claim.id][source])
    return row


def _course_scores(claims: dict[str, Claim], rows: list[dict], records: dict[str, dict]) -> dict:
    """The course's F, A and HM of the split's retrieved evidence and verdicts, per protocol."""
    course = {}
    for protocol in PROTOCOLS:
        predicted = {
            row["id"]: Claim(row["id"], row["text"], row["retrieved"][protocol], tuple(records[row["id"]]["evidences"]))
            for row in rows
        }
        result = evaluate(predicted, claims)
        course[protocol] = {"F": result.F, "A": result.A, "HM": result.HM}
    return course


def course_figures(build: BuildReader, split: str, page: dict) -> dict:
    """The course's figures beside this build's for one split: Table 2, the notebook-protocol
    accuracies (dev), the training curve, and why the accuracies differ.

    Parameters
    ----------
    build : BuildReader
    split : str
    page : dict
        The Explore data computed so far (its ``accuracy`` and ``course_scores``).

    Returns
    -------
    dict
        ``{"note", "table2": {metric: pair} | None, "accuracy": {source: pair} | None,
        "accuracy_note", "training": [rows] | None}``.
    """
    out: dict[str, Any] = {"note": course.corpus_note(build_info(build, brief=True)["corpus"])["note"]}
    table2 = course.TABLE2.get(split)
    scores = (page.get("course_scores") or {}).get("notebook")
    out["table2"] = (
        None
        if table2 is None
        else {
            metric: {
                "course": value,
                "course_shown": f"{value:.5f}",
                "source": course.REPORT_TABLE2,
                "build": None if scores is None else scores[metric],
                "same": None if scores is None else abs(scores[metric] - value) < 5e-6,
            }
            for metric, value in table2.items()
        }
    )
    out["accuracy"] = out["accuracy_note"] = out["training"] = None
    if split != "dev":
        return out
    accuracy = page.get("accuracy") or {}
    correct = {s: (accuracy.get(s) or {}).get("notebook", {}).get("correct") for s in ("gold", "retrieved")}
    out["accuracy"] = {
        "gold": course.pair("dev_gold_notebook_correct", correct["gold"]),
        "retrieved": course.pair("dev_retrieved_notebook_correct", correct["retrieved"]),
    }
    try:
        provenance = course.checkpoint_provenance(build.checkpoint_dir())
    except Missing:
        provenance = None
    out["accuracy_note"] = course.accuracy_note(provenance, correct["gold"], len(page["claims"]))
    out["training"] = course.training_curve(None if provenance is None else provenance.get("history"))
    return out


#: The splits whose every scoreboard row's predictions can be downloaded.
PREDICTION_SPLITS = ("dev", "test")


def prediction_path(split: str, row: str) -> str:
    """Where a row's predictions live on the site, relative to its root (server and static)."""
    return f"predictions/{split}/{row}.json"


def scoreboard_section(build: BuildReader, split: str) -> dict | None:
    """What each quirk cost: the build's dev scoreboard (dev), the course's Table 2 figures for
    the split as the anchor, and each row's downloadable predictions (dev, test); None for train."""
    if split not in PREDICTION_SPLITS:
        return None
    section: dict[str, Any] = {"status": "ok", "anchor": course.TABLE2[split], "rows": None, "baselines": []}
    board: dict = {}
    try:
        if split == "dev":
            board = build.scoreboard()
            section["rows"] = board["rows"]
            section["baselines"] = board.get("baselines") or []
            section["statistics"] = board.get("statistics")
            section["told_apart"] = told_apart(section["rows"], section["baselines"])
    except Missing as err:
        return missing(err.stage, err.reason)
    # both splits' files from either page: the test predictions are what one would submit
    # a row whose predictions are another row's (ScoreRow.file_row) links to that row's file
    section["downloads"] = {
        row.name: {s: prediction_path(s, row.file_row.name) for s in PREDICTION_SPLITS} for row in scoreboard_rows()
    }
    section["row_changes"] = {row.name: row.changes() for row in scoreboard_rows()}
    section["intended_training"] = intended_training()
    section["lstm_training"] = lstm_training()
    if split == "dev":
        section["intended_on_gold"] = board.get("intended_minus_notebook_on_gold")
        section["lstm_on_gold"] = board.get("lstm_minus_notebook_on_gold")
    return section


def intended_training() -> dict:
    """The intended model's training beside the notebook model's, from the two shipped
    checkpoints' provenance: dev accuracy (gold evidence) epoch by epoch, each best epoch, and
    whether fixing the two bugs helped, measured, not asserted."""
    from claimtrace.models.intended import intended_provenance

    intended = intended_provenance()
    notebook = json.loads((ASSETS_DIR / PROVENANCE_FILE).read_text(encoding="utf-8"))

    def best(provenance: dict) -> dict:
        record = provenance["history"][provenance["best_epoch"] - 1]
        return {
            "epoch": provenance["best_epoch"],
            "dev_correct": record["dev_correct"],
            "dev_accuracy": record["dev_accuracy"],
        }

    curve = [
        {
            "epoch": a["epoch"],
            "intended_train": a["train_accuracy"],
            "intended_dev": a["dev_accuracy"],
            "notebook_train": b["train_accuracy"],
            "notebook_dev": b["dev_accuracy"],
        }
        for a, b in zip(intended["history"], notebook["history"], strict=True)
    ]
    mine, theirs = best(intended), best(notebook)
    return {
        "intended": mine,
        "notebook": theirs,
        "claims": 154,
        "curve": curve,
        "helped": mine["dev_correct"] > theirs["dev_correct"],
    }


def lstm_training() -> dict | None:
    """The notebook's LSTM as claimtrace trained it beside the log the notebook printed for it,
    epoch by epoch, from the shipped checkpoint's provenance (no torch); None without it."""
    path = ASSETS_DIR / PROVENANCE_FILES["lstm"]
    if not path.is_file():
        return None
    provenance = json.loads(path.read_text(encoding="utf-8"))
    best = provenance["history"][provenance["best_epoch"] - 1]
    claims = provenance["accuracy_with_gold_evidence"]["dev"]["notebook"]["claims"]
    return {
        "best_epoch": provenance["best_epoch"],
        "dev_correct": best["dev_correct"],
        "claims": claims,
        "interval": S.wilson(best["dev_correct"], claims).to_dict(),
        "seed": provenance["seed"],
        "training_seconds": provenance["training_seconds"],
        "curve": provenance["beside_the_notebook"],
        "report": {key: figure.shown for key, figure in course.REPORT_LSTM_VS_TRANSFORMER.items()},
    }


class UnknownRow(DataError):
    """An address that names no scoreboard row (or a split without row predictions): a 404, not
    a damaged build."""


def row_predictions(build: BuildReader, split: str, name: str) -> dict[str, dict]:
    """One scoreboard row's predictions of dev or test in the course's shape (UnknownRow for an
    unknown row or split; Missing when the build lacks them; a DataError naming a damaged file)."""
    if split not in PREDICTION_SPLITS:
        raise UnknownRow(f"no row predictions for {split!r}: expected one of {', '.join(PREDICTION_SPLITS)}")
    try:
        row = scoreboard_row(name)
    except DataError as err:
        raise UnknownRow(str(err)) from None
    return build.predictions(split, row.retrieval, row.model, row.protocol)


# --- every figure with its interval, every comparison tested ---------------------------------------

#: The baseline whose accuracy the accuracy chart shows beside the classifier's.
ALWAYS_SUPPORTS = "baseline:always-SUPPORTS"
#: The verdict of a comparison whose Holm-corrected p is below the significance level.
MORE = S.verdict(0.0)


def told_apart(rows: list[dict], baselines: list[dict]) -> dict:
    """How many of the scoreboard's rows and baselines differ from the notebook's row by more
    than chance, in HM (paired bootstrap) and in A (McNemar's exact test), each Holm-corrected
    by the build over every comparison it tested together: counted from the build's verdicts.

    Returns
    -------
    dict
        ``{"rows", "baselines", "tested", "rows_hm", "rows_a", "baselines_hm", "baselines_a",
        "rows_hm_names"}``: counts, and the names of the rows whose HM differs.
    """
    rows = [r for r in rows if r.get("paired")]
    baselines = [b for b in baselines if b.get("paired")]

    def count(entries: list[dict], on_hm: bool) -> int:
        return sum((e["paired"]["HM"] if on_hm else e["paired"])["verdict"] == MORE for e in entries)

    return {
        "rows": len(rows),
        "baselines": len(baselines),
        "tested": len(rows) + len(baselines),
        "rows_hm": count(rows, True),
        "rows_a": count(rows, False),
        "baselines_hm": count(baselines, True),
        "baselines_a": count(baselines, False),
        "rows_hm_names": [r["name"] for r in rows if r["paired"]["HM"]["verdict"] == MORE],
    }


def with_intervals(page: dict) -> None:
    """Give every figure of an Explore page its 95% interval, in place: each accuracy its Wilson
    interval; on dev, the figures the build's scoreboard already has (the course's scores'
    intervals beside them, the retrieval variants' F, the notebook row's per-label recall), the
    paired difference of gold and retrieved evidence, and the accuracy chart's rows."""
    for protocols in page["accuracy"].values():
        for figures in (protocols or {}).values():
            figures["interval"] = S.wilson(figures["correct"], figures["claims"]).to_dict()
    board = page["scoreboard"] or {}
    rows = {r["name"]: r for r in board.get("rows") or []}
    page["gold_vs_retrieved"] = page["accuracy_chart"] = page["notebook_row"] = page["course_score_intervals"] = None
    if NOTEBOOK_ROW.name not in rows:
        return
    page["notebook_row"] = rows[NOTEBOOK_ROW.name]
    page["course_score_intervals"] = {
        protocol: {"intervals": rows[name]["intervals"], "paired": rows[name].get("paired")}
        for protocol in (page["course_scores"] or {})
        for name in [f"{NOTEBOOK_ROW.retrieval}+{NOTEBOOK_ROW.model}+{protocol}"]
    }
    _course_intervals(page["course"], rows[NOTEBOOK_ROW.name], len(page["claims"]))
    if page["retrieval_variants"]:
        page["retrieval_variants"] = variants_tested(page["retrieval_variants"], rows)
    if page["accuracy"]["gold"] and page["accuracy"]["retrieved"]:
        page["gold_vs_retrieved"] = page["classifier_paired"]
        page["accuracy_chart"] = accuracy_chart_rows(page["accuracy"], board["baselines"], page["gold_vs_retrieved"])


def _course_intervals(figures: dict, notebook_row: dict, claims: int) -> None:
    """The course block's figures with their intervals: this build's F, A and HM beside Table 2
    (the scoreboard's notebook row), Table 2's A as a count of claims (Wilson; the course
    published no per-claim results, so its F and HM have none), and each accuracy count."""
    table2 = figures.get("table2")
    if table2:
        for metric, pair in table2.items():
            pair["interval"] = notebook_row["intervals"][metric]
        table2["A"]["course_interval"] = S.wilson(round(table2["A"]["course"] * claims), claims).to_dict()
    for pair in (figures.get("accuracy") or {}).values():
        pair["course_interval"] = S.wilson(pair["course"], claims).to_dict()
        pair["build_interval"] = None if pair["build"] is None else S.wilson(pair["build"], claims).to_dict()


def variants_tested(variants: list[dict], rows: dict[str, dict]) -> list[dict]:
    """Each retrieval variant's F with its interval, and its F minus the notebook retrieval's on
    the same claims (the build's paired bootstrap, read off the variant's row with the notebook's
    model and protocol: F depends on the retrieval only), Holm-corrected over the variants."""
    out = [dict(v) for v in variants]
    compared = []
    for variant in out:
        row = rows[f"{variant['variant']}+{NOTEBOOK_ROW.model}+{NOTEBOOK_ROW.protocol}"]
        variant["interval"] = row["intervals"]["F"]
        if row.get("paired"):
            compared.append((variant, row["paired"]["F"]))
    for (variant, _), tested in zip(compared, S.with_holm([gap for _, gap in compared]), strict=True):
        variant["paired"] = tested
    return out


#: The accuracy chart's panels: each accuracy, and the paired difference.
ACCURACY_PANELS = ("A", "gold − retrieved")


def accuracy_chart_rows(accuracy: dict, baselines: list[dict], gap: dict) -> list[dict]:
    """The accuracy chart's rows (:func:`claimtrace.web.pictures.interval_chart`): each
    accuracy with its Wilson interval, always-SUPPORTS's beside them, and gold minus retrieved
    evidence with its paired interval in a panel of its own."""
    rows = [
        {
            "name": f"{source} evidence, {protocol}",
            "kind": "notebook" if (source, protocol) == ("retrieved", NOTEBOOK_ROW.protocol) else "row",
            "A": accuracy[source][protocol]["interval"],
        }
        for source in ("gold", "retrieved")
        for protocol in PROTOCOLS
    ]
    rows += [
        {"name": "always SUPPORTS (baseline)", "kind": "baseline", "A": b["intervals"]["A"]}
        for b in baselines
        if b["name"] == ALWAYS_SUPPORTS
    ]
    rows.append({"name": "gold − retrieved, notebook", "kind": "row", ACCURACY_PANELS[1]: gap["A"]})
    return rows
