"""Explore's data (claimtrace.web.views.explore): one row per claim of a split, read from the
build's records and verdicts, and the split's figures counted from those rows."""

from __future__ import annotations

import json
import re
from collections import Counter

import pytest

from claimtrace.constants import LABELS, PROTOCOLS
from claimtrace.course import TABLE2
from claimtrace.evaluation.scorer import evidence_f
from claimtrace.evaluation.statistics import holm, wilson
from claimtrace.web.views.explore import OUTSIDE_COURSE_PREFIX, UnknownRow, explore, row_predictions
from claimtrace.workdir.reader import BuildReader

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
            assert row[source] == {p: verdicts[row["id"]][source][p]["verdict"] for p in PROTOCOLS}


def test_the_splits_figures_are_counted_from_its_rows(dev, demo_build):
    rows = dev["claims"]
    for source in ("gold", "retrieved"):
        for protocol in PROTOCOLS:
            right = sum(row[source][protocol] == row["label"] for row in rows)
            figures = dev["accuracy"][source][protocol]
            assert figures["correct"] == right and figures["claims"] == len(rows)
            assert figures["accuracy"] == pytest.approx(right / len(rows))
            assert dev["verdict_counts"][source][protocol] == {
                label: Counter(row[source][protocol] for row in rows)[label] for label in LABELS
            }
    assert dev["fallbacks"] == sum(row["fallback"] for row in rows)
    assert dev["fallback_share"] == dev["fallbacks"] / len(rows)
    returned = [e for record in demo_build.retrieval("dev").values() for e in record["evidences"]]
    assert dev["evidence_ids"] == {
        "returned": len(returned),
        "outside_course": sum(e.startswith(OUTSIDE_COURSE_PREFIX) for e in returned),
    }
    assert dev["course_scores"]["notebook"].keys() == {"F", "A", "HM"}
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
    partial = explore(BuildReader(root, demo_build.data_dir), "dev")
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


# --- every figure with its interval, every comparison tested ---------------------------------------


def test_every_scoreboard_figure_has_the_builds_interval_in_the_pages_json(web_client, demo_build):
    """/explore/dev.json carries each row's and each baseline's intervals and tests exactly as
    the build's scoreboard.json holds them, and the method they were made by."""
    board = web_client.get("/explore/dev.json").json()["scoreboard"]
    built = json.loads((demo_build.root / "scoreboard.json").read_text(encoding="utf-8"))
    assert [r["intervals"] for r in board["rows"]] == [r["intervals"] for r in built["rows"]]
    assert [r.get("paired") for r in board["rows"]] == [r.get("paired") for r in built["rows"]]
    assert board["baselines"] == built["baselines"] and len(board["baselines"]) == 3
    assert board["statistics"] == built["statistics"]
    assert all({"A", "F", "HM", "macro_f1", "recall"} <= r["intervals"].keys() for r in board["rows"])
    assert all(r.get("paired") for r in board["rows"] if r["name"] != NOTEBOOK_ROW)


def test_the_more_than_chance_sentence_counts_the_builds_verdicts(web_client, demo_build):
    """The page's sentence "N of the M other rows differ ... by more than chance" says what the
    build's verdicts say, row by row."""
    built = demo_build.scoreboard()
    compared = [r for r in built["rows"] if r["name"] != NOTEBOOK_ROW]
    differ = [r["name"] for r in compared if r["paired"]["HM"]["verdict"] == "more than chance"]
    told = web_client.get("/explore/dev.json").json()["scoreboard"]["told_apart"]
    assert told["rows"] == len(compared) and told["rows_hm_names"] == differ and told["rows_hm"] == len(differ)
    assert told["rows_a"] == sum(r["paired"]["verdict"] == "more than chance" for r in compared)
    assert told["baselines_hm"] == sum(b["paired"]["HM"]["verdict"] == "more than chance" for b in built["baselines"])
    assert told["tested"] == len(compared) + len(built["baselines"])
    page = web_client.get("/explore/dev.html").text
    sentence = re.search(r'id="told-apart"><strong>(\d+) of the (\d+) other rows differ', page)
    assert sentence and (int(sentence.group(1)), int(sentence.group(2))) == (len(differ), len(compared))
    method = re.search(r'id="scoreboard-method">(.*?)</p>', page, re.S).group(1)
    assert "10,000 resamples, seed 2024" in method and "Wilson" in method and "Holm" in method
    assert f"over the {told['tested']} comparisons" in method


def test_each_accuracy_has_its_wilson_interval_and_gold_minus_retrieved_is_the_reports(dev):
    """Each accuracy carries its Wilson interval; gold minus retrieved evidence is the build's two
    verdicts paired; the chart's rows hold them, always SUPPORTS's accuracy beside them."""
    for source in ("gold", "retrieved"):
        for protocol in PROTOCOLS:
            figures = dev["accuracy"][source][protocol]
            assert figures["interval"] == wilson(figures["correct"], figures["claims"]).to_dict()
    chart = {row["name"]: row for row in dev["accuracy_chart"]}
    assert chart["always SUPPORTS (baseline)"]["kind"] == "baseline"
    assert chart["retrieved evidence, notebook"]["A"] == dev["accuracy"]["retrieved"]["notebook"]["interval"]
    assert chart["gold − retrieved, notebook"]["gold − retrieved"] == dev["gold_vs_retrieved"]["A"]


def test_gold_minus_retrieved_is_the_classifier_stages_as_evaluate_reports_it(dev, demo_build):
    """The page's paired figure is the one the classifier stage stored, and ``claimtrace
    evaluate`` reports the same; both equal the test made afresh on the stored verdicts."""
    from claimtrace.evaluation.significance import labels_paired

    verdicts, gold = demo_build.verdicts("dev"), demo_build.claims("dev")
    ids = sorted(verdicts)
    direct = labels_paired(
        [gold[c].label for c in ids],
        [verdicts[c]["gold"]["notebook"]["verdict"] for c in ids],
        [verdicts[c]["retrieved"]["notebook"]["verdict"] for c in ids],
    )
    stored = demo_build.classifier_summary()["gold_minus_retrieved"]["dev"]
    assert dev["gold_vs_retrieved"] == stored == direct
    assert dev["gold_vs_retrieved"]["verdict"] == "more than chance"  # 52 claims against 1 on the demo build


def test_the_course_figures_and_the_variants_carry_the_scoreboards_intervals(dev):
    """The course's scores and this build's Table 2 row read the scoreboard's intervals; each
    retrieval variant's F its row's, and its test against the notebook retrieval is Holm-corrected
    over the variants."""
    rows = {r["name"]: r for r in dev["scoreboard"]["rows"]}
    notebook = rows[NOTEBOOK_ROW]
    for protocol in PROTOCOLS:
        row = rows[f"notebook+notebook+{protocol}"]
        assert dev["course_score_intervals"][protocol]["intervals"] is row["intervals"]
        assert dev["course_scores"][protocol]["A"] == pytest.approx(row["A"])
    assert dev["course_score_intervals"]["alone"]["paired"] == rows["notebook+notebook+alone"]["paired"]
    table2 = dev["course"]["table2"]
    assert {m: table2[m]["interval"] for m in ("F", "A", "HM")} == {
        m: notebook["intervals"][m] for m in ("F", "A", "HM")
    }
    assert table2["A"]["course_interval"]["successes"] == 86  # Table 2's A = 0.55844 = 86/154
    variants = {v["variant"]: v for v in dev["retrieval_variants"]}
    assert "paired" not in variants["notebook"]
    tested = [v for v in dev["retrieval_variants"] if "paired" in v]
    assert [v["paired"]["p_holm"] for v in tested] == pytest.approx(holm([v["paired"]["p"] for v in tested]))
    for name, variant in variants.items():
        assert variant["interval"] == rows[f"{name}+notebook+notebook"]["intervals"]["F"]
        assert variant["F"] == pytest.approx(variant["interval"]["estimate"])
    assert variants["bm25"]["paired"]["verdict"] == "more than chance"
    assert dev["notebook_row"] is notebook


def test_the_test_split_shows_no_scores_nor_their_intervals(web_client):
    """Test labels are not public: no figure, so no interval and no test."""
    test = web_client.get("/explore/test.json").json()
    assert test["gold_vs_retrieved"] is None and test["accuracy_chart"] is None and test["notebook_row"] is None
    assert test["course_score_intervals"] is None
    assert test["scoreboard"]["baselines"] == [] and "told_apart" not in test["scoreboard"]
    page = web_client.get("/explore/test.html").text
    main = page.split("<main", 1)[1]  # the head's description speaks of the site, not this split
    assert 'id="told-apart"' not in main and "95% interval" not in main


def test_dev_holds_the_error_analysis_by_label_and_the_found_count(dev, demo_build):
    """/explore/dev.json: per gold label the notebook's verdicts' recall, precision and F1 and the
    retrieval's mean evidence F and gold found, each with its interval; the claims with a gold
    passage found, with its Wilson interval; each claim row says whether it was found."""
    claims, records = demo_build.claims("dev"), demo_build.retrieval("dev")
    found = [not set(records[c]["evidences"]).isdisjoint(claim.evidences) for c, claim in claims.items()]
    assert [row["found"] for row in dev["claims"]] == found
    assert dev["gold_found"] == wilson(sum(found), len(found)).to_dict()
    analysis = dev["by_label"]
    assert analysis["found"] == dev["gold_found"] and [r["label"] for r in analysis["labels"]] == list(LABELS)
    for entry in analysis["labels"]:
        rows = [row for row in dev["claims"] if row["label"] == entry["label"]]
        said = [row for row in dev["claims"] if row["retrieved"]["notebook"] == entry["label"]]
        right = sum(row["retrieved"]["notebook"] == entry["label"] for row in rows)
        assert entry["claims"] == len(rows) and entry["predicted"] == len(said) and entry["correct"] == right
        assert entry["recall"] == wilson(right, len(rows)).to_dict()
        assert entry["found"] == wilson(sum(row["found"] for row in rows), len(rows)).to_dict()
        assert entry["F1"]["method"] == "percentile bootstrap"
        if rows:
            assert entry["evidence_F"]["estimate"] == pytest.approx(sum(row["F"] for row in rows) / len(rows))
    assert len(analysis["chart"]) == len(LABELS) and analysis["panels"][:3] == ["recall", "precision", "F1"]


def test_the_claims_table_carries_found_for_the_filter(dev):
    from claimtrace.web.render import claims_table

    table = claims_table(dev)
    at = table["fields"].index("found")
    assert [row[at] for row in table["rows"]] == [int(row["found"]) for row in dev["claims"]]
