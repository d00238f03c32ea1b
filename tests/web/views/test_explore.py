"""Explore's data (claimtrace.web.views.explore): one row per claim of a split, read from the
build's records and verdicts, and the split's figures counted from those rows."""

from __future__ import annotations

from collections import Counter

import pytest

from claimtrace import constants as C
from claimtrace.course import TABLE2
from claimtrace.evaluation.scorer import evidence_f
from claimtrace.web.views.explore import OUTSIDE_COURSE_PREFIX, UnknownRow, explore, row_predictions
from claimtrace.workdir.reader import Build

#: The scoreboard row of the notebook's pipeline: its retrieval, its model, its protocol.
NOTEBOOK_ROW = "notebook+notebook+notebook"


@pytest.fixture(scope="module")
def dev(demo_build) -> dict:
    return explore(demo_build, "dev")


def test_one_row_per_claim_in_file_order_from_the_build(dev, demo_build):
    claims, records, verdicts = demo_build.claims("dev"), demo_build.retrieval("dev"), demo_build.verdicts("dev")
    assert [row["id"] for row in dev["claims"]] == list(claims)
    for position, row in enumerate(dev["claims"]):
        claim, record = claims[row["id"]], records[row["id"]]
        assert row["position"] == position and row["label"] == claim.label
        assert row["gold_count"] == len(claim.evidences) and row["passed"] == record["passed"]
        assert row["fallback"] == record["fallback"] and row["F"] == evidence_f(record["evidences"], claim.evidences)
        for source in ("gold", "retrieved"):
            assert row[source] == {p: verdicts[row["id"]][source][p]["verdict"] for p in C.PROTOCOLS}


def test_the_splits_figures_are_counted_from_its_rows(dev, demo_build):
    rows = dev["claims"]
    for source in ("gold", "retrieved"):
        for protocol in C.PROTOCOLS:
            right = sum(row[source][protocol] == row["label"] for row in rows)
            figures = dev["accuracy"][source][protocol]
            assert figures["correct"] == right and figures["claims"] == len(rows)
            assert figures["accuracy"] == pytest.approx(right / len(rows))
            assert dev["verdict_counts"][source][protocol] == {
                label: Counter(row[source][protocol] for row in rows)[label] for label in C.LABELS
            }
    assert dev["fallbacks"] == sum(row["fallback"] for row in rows)
    assert dev["fallback_share"] == dev["fallbacks"] / len(rows)
    returned = [e for record in demo_build.retrieval("dev").values() for e in record["evidences"]]
    assert dev["evidence_ids"] == {
        "returned": len(returned),
        "outside_course": sum(e.startswith(OUTSIDE_COURSE_PREFIX) for e in returned),
    }
    assert {"F", "A", "HM", "intervals"} <= dev["course_scores"]["notebook"].keys()
    assert dev["scoreboard"]["rows"] and dev["retrieval_variants"] is not None


def test_an_unlabelled_split_has_verdicts_but_no_scores(demo_build):
    test = explore(demo_build, "test")
    assert not test["labelled"] and test["accuracy"] == {"gold": None, "retrieved": None}
    assert list(test["verdict_counts"]) == ["retrieved"] and test["course_scores"] is None
    assert all("gold" not in row and "F" not in row and row["gold_count"] is None for row in test["claims"])
    assert test["scoreboard"]["rows"] is None and test["scoreboard"]["downloads"]  # test predictions, no scores
    assert explore(demo_build, "train")["scoreboard"] is None


def test_a_split_before_the_classifier_stage_keeps_its_retrieval(demo_build, tmp_path):
    root = tmp_path / "work"
    root.mkdir()
    for entry in demo_build.root.iterdir():
        if entry.name != "classifier":
            (root / entry.name).symlink_to(entry)
    partial = explore(Build(root, demo_build.data_dir), "dev")
    assert partial["retrieval"] == {"status": "ok", "source": "build"}
    assert partial["classifier"]["status"] == "missing" and "claimtrace build" in partial["classifier"]["reason"]
    assert partial["accuracy"] == {"gold": None, "retrieved": None} and partial["verdict_counts"] == {}
    assert partial["course_scores"] is None
    assert all(
        row["retrieved"] == len(row_record["evidences"])
        for row, row_record in zip(partial["claims"], demo_build.retrieval("dev").values(), strict=True)
    )


def test_row_predictions_are_for_dev_and_test_rows_only(demo_build):
    with pytest.raises(UnknownRow):
        row_predictions(demo_build, "train", NOTEBOOK_ROW)
    with pytest.raises(UnknownRow):
        row_predictions(demo_build, "dev", "no-such-row")
    # the notebook's own row is the build's predictions, as the notebook would submit them
    assert row_predictions(demo_build, "dev", NOTEBOOK_ROW) == demo_build.course_predictions("dev")


def test_explore_scoreboard_and_its_downloads(web_client, demo_build):
    explore = web_client.get("/explore/dev.json").json()
    board = explore["scoreboard"]
    assert board["status"] == "ok" and board["anchor"] == TABLE2["dev"]
    assert board["rows"] == demo_build.scoreboard()["rows"]
    assert explore["retrieval_variants"][-1]["variant"] == "bm25"
    page = web_client.get("/explore/dev.html").text
    assert "What each quirk cost" in page and "0.0430" in page  # the anchor's F
    test_board = web_client.get("/explore/test.json").json()["scoreboard"]
    assert test_board["rows"] is None and test_board["anchor"] == TABLE2["test"]
    assert board["downloads"] == test_board["downloads"]  # both splits' files from either page
    path = test_board["downloads"]["unpadded-tags+intended+notebook"]["test"]
    assert path == "predictions/test/unpadded-tags+intended+notebook.json"
    served = web_client.get("/" + path)
    assert served.status_code == 200
    assert served.json() == demo_build.predictions("test", "unpadded-tags", "intended", "notebook")
    assert web_client.get("/predictions/test/nothing.json").status_code == 404
    assert web_client.get("/predictions/train/bm25+intended+alone.json").status_code == 404
