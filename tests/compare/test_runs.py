"""A predictions file beside the build's pipeline (claimtrace.compare.runs)."""

from __future__ import annotations

import json

import pytest

from claimtrace.compare.runs import compare, explained_wins, load_run, pipeline_found_gold, read_run
from claimtrace.data import files as data
from claimtrace.data.files import DataError
from claimtrace.evaluation.scorer import MAX_PREDICTIONS_BYTES


@pytest.fixture(scope="module")
def baseline_path(data_dir):
    return data.course_file(data_dir, "baseline")


@pytest.fixture(scope="module")
def dev_claims(demo_build):
    return demo_build.claims("dev")


@pytest.fixture(scope="module")
def baseline_report(demo_build, baseline_path, dev_claims):
    run = load_run(baseline_path, "course baseline", {"dev": dev_claims}, "dev")
    return compare(demo_build, [run], "dev")


def test_scores_equal_evaluate(baseline_report, baseline_path, data_dir):
    from claimtrace.evaluation.audit import report_path

    expected = report_path(baseline_path, data_dir).scored.course
    (run,) = baseline_report["runs"]
    assert (run["F"], run["A"], run["HM"], run["claims"]) == (expected.F, expected.A, expected.HM, 154)
    # the course's published figures for its baseline
    assert (round(run["F"], 4), round(run["A"], 4), round(run["HM"], 4)) == (0.3378, 0.3506, 0.3441)
    by_claim = {row["claim_id"]: row for row in expected.per_claim}
    for row in baseline_report["claims"]:
        entry = row["runs"]["course baseline"]
        assert entry["F"] == by_claim[row["claim_id"]]["F"]
        assert entry["correct"] == by_claim[row["claim_id"]]["correct"]


def test_the_builds_own_export_reproduces_its_row_and_differs_nowhere(demo_build, dev_claims, tmp_path):
    path = tmp_path / "notebook.json"
    path.write_text(json.dumps(demo_build.course_predictions("dev")), encoding="utf-8")
    report = compare(demo_build, [load_run(path, "export", {"dev": dev_claims}, "dev")], "dev")
    (run,) = report["runs"]
    row = next(r for r in demo_build.scoreboard()["rows"] if r["name"] == "notebook+notebook+notebook")
    assert (run["F"], run["A"], run["HM"]) == (row["F"], row["A"], row["HM"])
    assert run["same_label_as_notebook"] == 154
    for claim in report["claims"]:
        entry = claim["runs"]["export"]
        assert entry["label"] == claim["notebook"]["verdicts"]["notebook"]
        assert entry["evidences"] == claim["notebook"]["evidences"]
        assert [p["stopped_by"] for p in entry["passages"]] == ["returned"] * len(entry["evidences"])
        assert [p["returned_rank"] for p in entry["passages"]] == list(range(1, len(entry["evidences"]) + 1))
        assert entry["why"] == []


def test_a_gold_passage_is_explained_as_the_walkthrough_explains_a_missed_one(baseline_report, web_client, demo_build):
    """The baseline names gold passages the notebook missed; each one's view is the walkthrough's."""
    checked = 0
    for row in baseline_report["claims"][:40]:
        entry = row["runs"]["course baseline"]
        gold_views = {p["id"]: p for p in entry["passages"] if p["gold"] and p["stopped_by"] != "returned"}
        if not gold_views:
            continue
        page = web_client.get(f"/claim/{row['claim_id']}.json").json()
        missed = {p["id"]: p for p in page["retrieval"]["missed_gold"]}
        for pid, view in gold_views.items():
            assert view == missed[pid]
            checked += 1
    assert checked >= 10


def test_a_missed_gold_passage_s_numbers_are_the_retrieval_model_s(baseline_report, demo_build):
    """Independent of the view: a filtered-out passage's cosine and overlap fail the filter, and
    a returned one is the record's own."""
    retriever = demo_build.retriever()
    for row in baseline_report["claims"]:
        for passage in row["runs"]["course baseline"]["passages"]:
            if passage["stopped_by"] == "cosine":
                assert passage["cosine"] <= 0.55 < 1 and passage["shared"] > 0
            if passage["stopped_by"] == "no tags":
                assert retriever.position(passage["id"]) is None
            if passage["stopped_by"] == "not in the build":
                assert demo_build.passage_text(passage["id"]) is None


def test_baseline_figures_on_the_demo_build(baseline_report):
    (run,) = baseline_report["runs"]
    found = pipeline_found_gold(baseline_report)
    assert run["found_gold"] == 105
    assert found["notebook"] < run["found_gold"] and found["bm25"] < run["found_gold"]
    wins = explained_wins(baseline_report, "course baseline")
    assert len(wins) == 3 and all(w["why"] for w in wins)
    passages = {p["id"] for r in baseline_report["claims"] for p in r["runs"]["course baseline"]["passages"]}
    in_build = {
        p["id"] for r in baseline_report["claims"] for p in r["runs"]["course baseline"]["passages"] if p["in_build"]
    }
    assert (len(passages), len(in_build)) == (917, 251)


def test_several_runs_make_a_leaderboard(demo_build, baseline_path, dev_claims, tmp_path):
    gold = tmp_path / "gold.json"
    gold.write_text(
        json.dumps({c.id: {"claim_label": c.label, "evidences": list(c.evidences)} for c in dev_claims.values()}),
        encoding="utf-8",
    )
    runs = [
        load_run(baseline_path, "baseline", {"dev": dev_claims}, "dev"),
        load_run(gold, "oracle", {"dev": dev_claims}, "dev"),
    ]
    report = compare(demo_build, runs, "dev", passages=False)
    assert report["leaderboard"] == ["oracle", "baseline"]
    assert report["nobody_right"] == []
    for row in report["claims"]:
        assert row["runs_right"] == 1 + row["runs"]["baseline"]["correct"]
        assert row["runs_found_gold"] == 1 + row["runs"]["baseline"]["found_gold"]
    with pytest.raises(DataError, match="two runs are named 'baseline'"):
        compare(demo_build, [runs[0], runs[0]], "dev")


def test_test_split_reports_agreement_not_scores(demo_build, tmp_path):
    path = tmp_path / "test.json"
    path.write_text(json.dumps(demo_build.course_predictions("test")), encoding="utf-8")
    claims = demo_build.claims("test")
    report = compare(demo_build, [load_run(path, "export", {"test": claims}, "test")], "test")
    (run,) = report["runs"]
    assert report["labelled"] is False and run["F"] is None and report["leaderboard"] == []
    assert run["same_label_as_notebook"] == run["claims"] == len(claims)
    assert run["claims_sharing_a_passage_with_notebook"] == sum(
        bool(r["evidences"]) for r in demo_build.retrieval("test").values()
    )


# --- bad input: one message naming the file, the claim and the field --------------------------


def _baseline(data_dir) -> dict:
    return json.loads(data.course_file(data_dir, "baseline").read_text(encoding="utf-8"))


def test_a_missing_claim_is_scored_as_eval_py(demo_build, data_dir, dev_claims, tmp_path):
    from claimtrace.evaluation.audit import report_path

    raw = _baseline(data_dir)
    first = sorted(raw)[0]
    del raw[first]
    path = tmp_path / "partial.json"
    path.write_text(json.dumps(raw), encoding="utf-8")
    run = load_run(path, None, {"dev": dev_claims}, "dev")
    (summary,) = compare(demo_build, [run], "dev", passages=False)["runs"]
    expected = report_path(path, data_dir).scored
    assert (summary["F"], summary["A"], summary["HM"], summary["claims"]) == (
        expected.course.F,
        expected.course.A,
        expected.course.HM,
        153,
    )
    assert summary["strict"] == {key: getattr(expected.strict, key) for key in ("F", "A", "HM", "claims")}
    assert summary["strict_note"].startswith("skipping 1 claim raised")
    assert run.missing == (first,)


def test_a_file_over_the_cap_is_refused_before_it_is_read(data_dir, dev_claims, tmp_path):
    path = tmp_path / "huge.json"
    with path.open("wb") as out:
        out.truncate(MAX_PREDICTIONS_BYTES + 1)
    with pytest.raises(DataError, match=rf"{path}: 8,388,609 bytes, over the 8 MiB"):
        load_run(path, None, {"dev": dev_claims}, "dev")
    with pytest.raises(DataError, match=r"upload: 8,388,609 bytes, over the 8 MiB"):
        read_run(b" " * (MAX_PREDICTIONS_BYTES + 1), "upload", None, {"dev": dev_claims}, "dev")


# --- a class: each passage's view computed once per claim, the same rows -------------------------


def _odd_runs(demo_build, data_dir, dev_claims, tmp_path) -> list:
    """Four runs naming many of the same passages: the course baseline, its lists with a repeated
    id and a passage outside the build, the gold lists past six ids, and the build's own."""
    baseline = _baseline(data_dir)
    odd = {
        cid: {**entry, "evidences": [*entry["evidences"][:2], entry["evidences"][0], "evidence-1208000"]}
        for cid, entry in list(baseline.items())[:120]
    }
    pool = list(baseline.values())
    long = {
        c.id: {"claim_label": c.label, "evidences": [*c.evidences, *pool[k]["evidences"]]}
        for k, c in enumerate(dev_claims.values())
    }
    files = {"baseline": baseline, "odd": odd, "long": long, "notebook": demo_build.course_predictions("dev")}
    runs = []
    for name, body in files.items():
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps(body), encoding="utf-8")
        runs.append(load_run(path, name, {"dev": dev_claims}, "dev"))
    return runs


def test_a_class_s_passage_views_are_each_run_s_own(demo_build, data_dir, dev_claims, tmp_path):
    from claimtrace.explain.retrieval import RetrievalView

    runs = _odd_runs(demo_build, data_dir, dev_claims, tmp_path)
    report = compare(demo_build, runs, "dev")
    records = demo_build.retrieval("dev")
    fallbacks, shared = 0, 0
    for row in report["claims"]:
        record = records[row["claim_id"]]
        fallbacks += bool(record["fallback"])
        for run in runs:
            entry = row["runs"][run.name]
            if entry is None:
                assert row["claim_id"] not in run.predictions
                continue
            # the straightforward path: the claim's view of this run's list alone
            alone = RetrievalView(demo_build, record).passages(entry["evidences"], row["gold"])
            assert json.dumps(entry["passages"]) == json.dumps(alone)
            shared += len(entry["passages"])
    assert fallbacks > 0 and shared > 4 * 154
    for run in runs[:2]:  # a run alone gets the same rows as among others
        (alone,) = compare(demo_build, [run], "dev")["claims"][:1]
        assert json.dumps(alone["runs"][run.name]) == json.dumps(report["claims"][0]["runs"][run.name])
