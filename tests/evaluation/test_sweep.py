"""The threshold sweep (evaluation/sweep.py): its grid, and on the demo build its points against
full retrievals with the same thresholds (Retriever.retrieve), its notebook setting against the
figures the retrieval and classifier stages computed, and its intervals and test."""

from __future__ import annotations

import numpy as np
import pytest

from claimtrace.evaluation import sweep as sweep_module
from claimtrace.evaluation.baselines import majority_label
from claimtrace.evaluation.scorer import evidence_scores
from claimtrace.evaluation.sweep import NOTEBOOK, RULES, SCORE_GRID, ClaimColumns, settings
from claimtrace.pipeline.retrieval import Thresholds, fallback_six

#: Four points off the notebook's setting, one per sweep: each compared with a full retrieval.
CHECKED = (("cosine", 0.3), ("overlap", 0.2), ("top_n", 3), ("score", 1.2))


def test_grid_holds_the_notebook_setting_once_per_sweep():
    points = settings()
    assert len(points) == 21 + 21 + 10 + 31
    for parameter in ("cosine", "overlap", "top_n"):
        marked = [v for p, v, s in points if p == parameter and s == NOTEBOOK]
        assert marked == [NOTEBOOK._asdict()[parameter]]
    # the score threshold's sweep holds each rule's own threshold once (the rule's notebook setting)
    scores = [v for p, v, s in points if p == "score"]
    assert scores == list(SCORE_GRID) and SCORE_GRID[0] == 0.0 and SCORE_GRID[-1] == 3.0
    for rule in RULES:
        assert scores.count(rule.score_threshold) == 1


@pytest.fixture(scope="module")
def sweep_file(demo_build):
    return demo_build.sweep()


def _point(sweep_file, rule, parameter, value):
    (point,) = [p for p in sweep_file["curves"][rule][parameter] if p["value"] == value]
    return point


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.name)
def test_points_equal_a_full_retrieval(demo_build, sweep_file, rule):
    """At three settings per rule, every dev claim's passages are what Retriever.retrieve with those
    thresholds gives, and the curve's F is the course's F of those retrievals."""
    retriever = demo_build.retriever()
    claims = demo_build.claims("dev")
    records = demo_build.retrieval("dev")
    for parameter, value in CHECKED:
        setting = NOTEBOOK._replace(**{parameter: value})
        score = rule.score_threshold if setting.score is None else setting.score
        thresholds = Thresholds(setting.cosine, setting.overlap, score)
        figures, fallbacks = [], 0
        for cid in sorted(claims):
            tags = records[cid]["tags"]
            full = retriever.retrieve(tags, rule.cosine_in_score, k=setting.top_n, thresholds=thresholds)
            positions, fell_back = ClaimColumns.from_retriever(retriever, tags, rule).retrieve(setting, score)
            assert list(positions) == full.evidences, (rule.name, setting, cid)
            assert fell_back == full.fallback
            fallbacks += fell_back
            figures.append(evidence_scores([retriever.ids[p] for p in full.evidences], claims[cid].evidences))
        point = _point(sweep_file, rule.name, parameter, value)
        precision, recall, f = np.array(figures).T
        assert (point["F"], point["P"], point["R"]) == (float(f.mean()), float(precision.mean()), float(recall.mean()))
        assert point["fallbacks"] == fallbacks
        for key in ("F", "P", "R"):
            interval = point[f"{key}_interval"]
            assert interval["method"] == "percentile bootstrap" and interval["estimate"] == point[key]
            assert interval["lower"] <= point[key] <= interval["upper"]


def test_fallback_top_ten_begins_with_every_shorter_top(demo_build):
    retriever = demo_build.retriever()
    for record in list(demo_build.retrieval("dev").values())[:20]:
        s = retriever.scores(record["tags"])
        ten = fallback_six(s.positions, s.score, len(retriever), 10)
        for k in (1, 3, 6):
            assert list(fallback_six(s.positions, s.score, len(retriever), k)) == list(ten[:k])


def test_notebook_setting_is_the_builds_retrieval_and_verdicts(demo_build, sweep_file):
    """The notebook rule at the notebook's setting: the retrieval stage's dev F and fallback share,
    and the classifier stage's accuracy alone on retrieved evidence."""
    summary = demo_build.retrieval_summary()["splits"]["dev"]
    alone = demo_build.classifier_summary()["dev"]["retrieved"]["alone"]
    at = NOTEBOOK._asdict() | {"score": RULES[0].score_threshold}
    for parameter in ("cosine", "overlap", "top_n", "score"):
        point = _point(sweep_file, "notebook", parameter, at[parameter])
        assert point["key"] == _notebook_key(sweep_file, "notebook")
        assert point["F"] == pytest.approx(summary["F"], abs=1e-15)
        assert point["fallback"] == summary["fallback_share"]
        assert point["correct"] == alone["correct"]


def test_best_setting_is_named_and_tested(sweep_file):
    for rule in RULES:
        best = sweep_file["best"][rule.name]
        every = [p for curve in sweep_file["curves"][rule.name].values() for p in curve]
        assert best["HM"] == max(p["HM"] for p in every)
        tests = sweep_file["tests"][rule.name]
        assert tests["reference"] == "notebook setting"
        figures = tests["figures"]["notebook setting"]
        assert figures["A"]["method"] == "Wilson score" and figures["F"]["lower"] <= figures["F"]["estimate"]
        if best["key"] != _notebook_key(sweep_file, rule.name):
            assert "best setting" in tests["paired"]
            assert tests["paired"]["best setting"]["HM"]["verdict"] in ("more than chance", "cannot be told apart")


def _notebook_key(sweep_file, rule):
    """The key of the notebook's setting, read off its point."""
    return _point(sweep_file, rule, "top_n", NOTEBOOK.top_n)["key"]


def test_the_sweep_holds_one_claims_columns_at_a_time(demo_build, monkeypatch):
    """Every setting's retrieval of a claim is taken from its columns, then they are let go:
    holding every claim's columns for both rules at once was the course-scale build's peak
    memory (docs/benchmarks.md, "The 1,208,827-passage synthetic build")."""
    live, most = [0], [0]

    class Counted(ClaimColumns):
        def __new__(cls, *columns):
            live[0] += 1
            most[0] = max(most[0], live[0])
            return super().__new__(cls, *columns)

        def __del__(self):
            live[0] -= 1

    monkeypatch.setattr(sweep_module, "ClaimColumns", Counted)
    every = demo_build.claims("dev")
    claims = {cid: every[cid] for cid in sorted(every)[:12]}
    records = demo_build.retrieval("dev")
    preprocess = demo_build.preprocessor.preprocess
    classifier = demo_build.classifier()
    result = sweep_module.sweep(
        demo_build.retriever(),
        claims,
        {cid: records[cid]["tags"] for cid in claims},
        {cid: preprocess(claim.text).text() for cid, claim in claims.items()},
        demo_build.passage_stems,
        classifier.vocab,
        classifier.table,
        majority_label(demo_build.claims("train")),
    )
    assert result["claims"] == len(claims)
    assert most[0] == 1 and live[0] == 0
