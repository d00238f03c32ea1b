"""The scoreboard (evaluation/scoreboard.py): its rows and what each changes, one row scored as
the course scores it, a retrieval's figures on one split and BM25's row of the variants table;
on the demo build, its rows against the figures other stages computed another way."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from statsmodels.stats.contingency_tables import mcnemar
from statsmodels.stats.proportion import proportion_confint

from claimtrace.cli.main import main
from claimtrace.course import TABLE2
from claimtrace.data.files import Claim, parse_claims
from claimtrace.errors import DataError
from claimtrace.evaluation import statistics as S
from claimtrace.evaluation.scoreboard import (
    FALLBACK_SHARE,
    SCORE_MODELS,
    SCORE_RETRIEVALS,
    SHORT_SHARE,
    ScoreRow,
    bm25_variant_row,
    evidence_source,
    row_result,
    scoreboard,
    scoreboard_row,
    scoreboard_rows,
    split_figures,
)
from claimtrace.evaluation.scorer import evaluate
from claimtrace.pipeline.retrieval import VARIANTS

#: Three labelled claims and what a row predicts for them, scored by hand:
#: claim-1 finds one of its two gold passages among two (P = R = 1/2, F = 1/2), label right;
#: claim-2 finds its one gold passage alone (F = 1), label wrong;
#: claim-3 finds none (F = 0), label right. F = 1/2, A = 2/3, HM = 2FA / (F + A) = 4/7.
GOLD = {
    "claim-1": Claim("claim-1", "one", "SUPPORTS", ("e1", "e2")),
    "claim-2": Claim("claim-2", "two", "REFUTES", ("e3",)),
    "claim-3": Claim("claim-3", "three", "NOT_ENOUGH_INFO", ("e4", "e5")),
}
PREDICTED = {
    "claim-1": {"claim_text": "one", "claim_label": "SUPPORTS", "evidences": ["e1", "e9"]},
    "claim-2": {"claim_text": "two", "claim_label": "SUPPORTS", "evidences": ["e3"]},
    "claim-3": {"claim_text": "three", "claim_label": "NOT_ENOUGH_INFO", "evidences": ["e6"]},
}


class _Build:
    """What a scoreboard reads of a build: its claims and a row's predictions (the same for
    every row here), with the rows asked for kept."""

    root = Path("stub")
    data_dir = Path("stub-data")  # no course baseline file there: the label baselines only

    def __init__(self):
        self.asked: list[tuple[str, str, str, str]] = []

    def claims(self, split: str) -> dict[str, Claim]:
        return GOLD

    def predictions(self, split: str, retrieval: str, model: str, protocol: str) -> dict[str, dict]:
        self.asked.append((split, retrieval, model, protocol))
        return PREDICTED

    def verdict_of(self, split: str, model: str, source: str, protocol: str) -> dict[str, str]:
        """Each claim's verdict: the predictions' labels, whichever model and evidence."""
        return {cid: entry["claim_label"] for cid, entry in PREDICTED.items()}


def test_the_rows_are_every_retrieval_model_and_protocol_the_notebooks_own_first():
    rows = scoreboard_rows()
    assert len(rows) == len(SCORE_RETRIEVALS) * len(SCORE_MODELS) * 2 == 30
    assert len({row.name for row in rows}) == 30
    assert rows[0] == ScoreRow("notebook", "notebook", "notebook") and rows[0].name == "notebook+notebook+notebook"
    assert [row.protocol for row in rows[:2]] == ["notebook", "alone"]  # batches of 16 first, then alone
    assert [row.retrieval for row in rows[:: 2 * len(SCORE_MODELS)]] == list(SCORE_RETRIEVALS)  # retrieval-major
    assert set(SCORE_RETRIEVALS) == {*VARIANTS, "bm25"}


def test_a_row_says_what_it_changes_from_the_notebooks_pipeline():
    assert ScoreRow("notebook", "notebook", "notebook").changes() == []
    assert ScoreRow("cosine-once", "notebook", "notebook").changes() == [VARIANTS["cosine-once"].description]
    bm25 = ScoreRow("bm25", "intended", "alone").changes()
    assert len(bm25) == 3 and bm25[0].startswith("BM25 over the raw passage text") and "not a quirk" in bm25[0]
    assert bm25[1] == SCORE_MODELS["intended"] and bm25[2] == "each claim alone (a batch of one)"


def test_a_rows_file_row_holds_the_same_predictions(demo_build):
    """The intended model's and the LSTM's alone rows share their notebook rows' files: the
    build's predictions of both are the same, claim for claim."""
    for row in scoreboard_rows():
        if row.file_row != row:
            assert row.model in ("intended", "lstm") and row.protocol == "alone"
            for split in ("dev", "test"):
                assert demo_build.predictions(split, row.retrieval, row.model, "alone") == demo_build.predictions(
                    split, row.retrieval, row.model, "notebook"
                )
        else:
            assert row.protocol == "notebook" or row.model == "notebook"


def test_a_row_is_found_by_name_and_an_unknown_name_lists_them():
    assert scoreboard_row("bm25+intended+notebook") == ScoreRow("bm25", "intended", "notebook")
    with pytest.raises(DataError, match=r"unknown scoreboard row 'bm25\+nobody\+alone': expected one of notebook"):
        scoreboard_row("bm25+nobody+alone")


def test_the_notebooks_own_retrieval_is_the_classifiers_retrieved_evidence():
    assert evidence_source("notebook") == "retrieved"
    assert [evidence_source(name) for name in ("bm25", "unpadded-tags")] == ["bm25", "unpadded-tags"]


def test_a_row_is_scored_as_the_course_scores_its_predictions():
    build = _Build()
    result = row_result(build, "dev", ScoreRow("bm25", "intended", "alone"))
    assert build.asked == [("dev", "bm25", "intended", "alone")]
    row = next(row for row in scoreboard(_Build(), "dev")["rows"] if row["name"] == "bm25+intended+alone")
    assert {key: row[key] for key in result.summary()} == result.summary()
    assert row["F"] == pytest.approx(1 / 2) and row["A"] == pytest.approx(2 / 3) and row["HM"] == pytest.approx(4 / 7)
    assert row["claims"] == 3 and row["skipped_missing"] == 0 and row["ignored_extra"] == 0
    assert (row["name"], row["retrieval"], row["model"], row["protocol"]) == (
        "bm25+intended+alone",
        "bm25",
        "intended",
        "alone",
    )
    assert row["reference"] is True and row["changes"] == ScoreRow("bm25", "intended", "alone").changes()


def test_a_row_missing_a_claim_names_the_build_and_the_row():
    class Short(_Build):
        def predictions(self, *row):
            return {cid: entry for cid, entry in PREDICTED.items() if cid != "claim-2"}

    with pytest.raises(DataError, match=r"^stub \(dev, row notebook\+notebook\+alone\): no prediction for 1 of the 3"):
        row_result(Short(), "dev", ScoreRow("notebook", "notebook", "alone"))


def test_the_scoreboard_scores_every_row_beside_the_course_anchor():
    build = _Build()
    board = scoreboard(build, "dev")
    assert board["split"] == "dev" and board["anchor"] == TABLE2["dev"]
    assert [row["name"] for row in board["rows"]] == [row.name for row in scoreboard_rows()]
    rows_asked, baselines_asked = build.asked[:-1], build.asked[-1:]
    assert [(r, m, p) for _, r, m, p in rows_asked] == [(r.retrieval, r.model, r.protocol) for r in scoreboard_rows()]
    assert baselines_asked == [("dev", "notebook", "notebook", "notebook")]  # the label baselines' passages
    assert [b["name"] for b in board["baselines"]] == ["baseline:always-SUPPORTS", "baseline:random-label"]
    assert [row["reference"] for row in board["rows"]] == [row.retrieval == "bm25" for row in scoreboard_rows()]
    assert scoreboard(_Build(), "train")["anchor"] is None  # the course reported no train figures


def test_split_figures_on_a_labelled_split():
    records = [
        {"claim_id": cid, "evidences": entry["evidences"], "fallback": cid == "claim-3"}
        for cid, entry in PREDICTED.items()
    ]
    figures = split_figures(records, GOLD, FALLBACK_SHARE, labelled=True)
    assert list(figures) == ["claims", "fallback_share", "F"]  # the order the summaries are written in
    assert figures["claims"] == 3 and figures["fallback_share"] == pytest.approx(1 / 3)
    assert figures["F"] == pytest.approx(1 / 2)


def test_split_figures_without_labels_or_records():
    records = [{"claim_id": "claim-1", "evidences": ["e1"] * 6}, {"claim_id": "claim-2", "evidences": ["e3"]}]
    assert split_figures(records, GOLD, SHORT_SHARE, labelled=False) == {"claims": 2, "short_share": 0.5}
    assert split_figures([], GOLD, SHORT_SHARE, labelled=True) == {"claims": 0, "short_share": 0.0, "F": 0.0}


def test_bm25s_row_of_the_variants_table():
    row = bm25_variant_row({"claims": 154, "short_share": 0.0, "F": 0.25}, passages=5240)
    assert row == {
        "variant": "bm25",
        "description": "BM25 over the raw passage text (k1 = 1.2, b = 0.75): a standard retriever, not a quirk",
        "F": 0.25,
        "fallback_share": 0.0,
        "claims": 154,
        "passages": 5240,
        "reference": True,
    }


def test_the_demo_scoreboard_agrees_with_the_figures_the_stages_computed_another_way(demo_build):
    """The course scorer over a row's predictions against the retrieval and BM25 stages' F (their
    records' per-claim F, summed in file order) and the classifier stage's accuracy."""
    rows = {row["name"]: row for row in demo_build.scoreboard()["rows"]}
    retrieval_dev = demo_build.retrieval_summary()["splits"]["dev"]
    bm25_dev = demo_build.bm25_summary()["splits"]["dev"]
    accuracy = demo_build.classifier_summary()["dev"]["retrieved"]
    for protocol in ("notebook", "alone"):
        own = rows[f"notebook+notebook+{protocol}"]
        assert own["F"] == pytest.approx(retrieval_dev["F"], abs=1e-12)
        assert own["A"] == pytest.approx(accuracy[protocol]["accuracy"], abs=1e-12)
        for model in SCORE_MODELS:
            assert rows[f"bm25+{model}+{protocol}"]["F"] == pytest.approx(bm25_dev["F"], abs=1e-12)
    assert demo_build.bm25_summary()["row"]["F"] == bm25_dev["F"]


# --- the scoreboard with its uncertainty (statsmodels and a plain loop as references) ---------

NOTEBOOK = "notebook+notebook+notebook"


def _per_claim(build, name):
    row = next(r for r in build.scoreboard()["rows"] if r["name"] == name)
    retrieval, model, protocol = row["retrieval"], row["model"], row["protocol"]
    predicted = parse_claims(build.predictions("dev", retrieval, model, protocol), name, labelled=True)
    result = evaluate(predicted, build.claims("dev"))
    return row, [r["F"] for r in result.per_claim], [r["correct"] for r in result.per_claim]


def test_every_row_has_its_intervals_and_its_test_against_the_notebooks_row(demo_build):
    board = demo_build.scoreboard()
    assert board["statistics"]["resamples"] == S.RESAMPLES and board["statistics"]["seed"] == S.SEED
    _, f_notebook, right_notebook = _per_claim(demo_build, NOTEBOOK)
    for row in board["rows"]:
        _, f, right = _per_claim(demo_build, row["name"])
        lower, upper = proportion_confint(sum(right), len(right), alpha=1 - S.LEVEL, method="wilson")
        a = row["intervals"]["A"]
        assert a["estimate"] == row["A"] and abs(a["lower"] - lower) < 1e-12 and abs(a["upper"] - upper) < 1e-12
        assert row["intervals"]["F"]["estimate"] == row["F"]
        assert {"macro_f1", "recall", "HM"} <= set(row["intervals"])
        if row["name"] == NOTEBOOK:
            assert "paired" not in row
            continue
        table = np.zeros((2, 2), dtype=int)
        for one, other in zip(right, right_notebook, strict=True):
            table[int(not one), int(not other)] += 1
        assert abs(row["paired"]["mcnemar"]["exact_p"] - mcnemar(table, exact=True).pvalue) < 1e-12
        assert row["paired"]["p_holm"] >= row["paired"]["p"]
        assert row["paired"]["verdict"] in ("more than chance", "cannot be told apart")


def test_the_notebook_rows_f_interval_is_a_plain_loop_over_the_same_resamples(demo_build):
    row, f, _ = _per_claim(demo_build, NOTEBOOK)
    indices = np.random.default_rng(S.SEED).integers(0, len(f), size=(S.RESAMPLES, len(f))).tolist()
    means = sorted(math.fsum(f[i] for i in resample) / len(f) for resample in indices)
    tail = (1 - S.LEVEL) / 2
    h = (len(means) - 1) * tail
    lower = means[math.floor(h)] + (h - math.floor(h)) * (means[math.floor(h) + 1] - means[math.floor(h)])
    assert abs(row["intervals"]["F"]["lower"] - lower) < 1e-12


def test_always_supports_and_a_random_label_are_baselines_beside_the_rows(demo_build, capsys):
    baselines = {b["name"]: b for b in demo_build.scoreboard()["baselines"]}
    always = baselines["baseline:always-SUPPORTS"]
    gold = [c.label for c in demo_build.claims("dev").values()]
    assert always["baseline"] is True and always["A"] == gold.count("SUPPORTS") / len(gold)
    assert "baseline:random-label" in baselines and "paired" in always
    assert main(["evaluate", "--workdir", str(demo_build.root), "--split", "dev", "--json"], standalone_mode=False) in (
        0,
        None,
    )
    report = json.loads(capsys.readouterr().out)
    assert report["scoreboard"]["baselines"][0]["name"] == "baseline:always-SUPPORTS"
    assert report["gold_vs_retrieved"]["mcnemar"]["b"] >= 0 and "interval" in report["classifier"]["gold"]["alone"]
