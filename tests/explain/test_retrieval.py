"""The retrieval views (claimtrace.explain.retrieval): the notebook's filter rule, once, and the
first rule that kept a passage out of a claim's six, for any passage."""

from __future__ import annotations

import pytest

from claimtrace.constants import COSINE_THRESHOLD, OVERLAP_THRESHOLD
from claimtrace.explain.retrieval import FailedTest, RetrievalView, Stop, filter_failures, filter_stop, passes_filter


@pytest.mark.parametrize(
    "cosine, overlap, failed",
    [
        (0.9, 0.9, []),
        (COSINE_THRESHOLD, 0.9, ["cosine"]),  # a test keeps a value strictly above its threshold
        (0.9, OVERLAP_THRESHOLD, ["overlap"]),
        (0.2, 0.1, ["cosine", "overlap"]),  # in the order the query states them
        (COSINE_THRESHOLD + 1e-9, OVERLAP_THRESHOLD + 1e-9, []),
    ],
)
def test_the_filter_keeps_cosine_above_055_and_overlap_above_05(cosine, overlap, failed):
    assert [test.name for test in filter_failures(cosine, overlap)] == failed
    assert passes_filter(cosine, overlap) == (not failed)


def test_a_failed_test_holds_its_value_and_threshold():
    assert filter_failures(0.25, 0.75) == [FailedTest("cosine", 0.25, COSINE_THRESHOLD)]


def test_the_first_stop_is_no_shared_tag_then_cosine_then_overlap():
    assert filter_stop({"shared": 0, "cosine": 0.1, "overlap": 0.0}) == Stop(
        "no shared tag", "it shares no tag with the claim (overlap 0)"
    )
    assert filter_stop({"shared": 1, "cosine": 0.5, "overlap": 0.2}) == Stop("cosine", "cosine 0.500 ≤ 0.55")
    assert filter_stop({"shared": 1, "cosine": 0.7, "overlap": 0.25}) == Stop("overlap", "overlap 0.250 ≤ 0.5")
    assert filter_stop({"shared": 2, "cosine": 0.7, "overlap": 0.75}) is None


@pytest.fixture(scope="module")
def gold_rows(demo_build) -> list[tuple[dict, dict]]:
    """Every dev claim's gold passages as the view sees them, with the claim's record."""
    records = demo_build.retrieval("dev")
    found = []
    for claim in demo_build.claims("dev").values():
        record = records[claim.id]
        for row in RetrievalView(demo_build, record).passages(claim.evidences, claim.evidences):
            found.append((row, record))
    return found


def test_each_passage_is_stopped_by_the_first_rule_it_fails(gold_rows):
    seen = set()
    for row, record in gold_rows:
        seen.add(row["stopped_by"])
        assert row["gold"]
        if row["stopped_by"] == "returned":
            assert record["evidences"][row["returned_rank"] - 1] == row["id"]
        elif row["stopped_by"] == "not in the build":
            assert not row["in_build"] and row["score"] is None
        elif row["stopped_by"] == "no tags":
            assert row["in_build"] and not row["retrievable"] and row["score"] is None
        elif record["fallback"]:
            assert row["stopped_by"] == "fallback" and "nothing passed the filter" in row["why"]
        elif not passes_filter(row["cosine"], row["overlap"]):
            assert Stop(row["stopped_by"], row["why"]) == filter_stop(row)
        else:
            assert row["stopped_by"] in ("max shared", "past the sixth")
    assert {"returned", "fallback", "cosine", "no tags"} <= seen


def test_a_passage_outside_the_build_is_said_to_be(demo_build):
    record = next(iter(demo_build.retrieval("dev").values()))
    (row,) = RetrievalView(demo_build, record).passages(["no-such-passage"])
    assert row["stopped_by"] == "not in the build" and not row["in_build"] and not row["gold"]
    assert row["cosine"] is row["overlap"] is row["score"] is row["shared"] is None
