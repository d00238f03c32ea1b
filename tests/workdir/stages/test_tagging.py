"""claimtrace.workdir.stages.tagging: the corpus figures the tagging stage adds to its summary."""

from __future__ import annotations

from claimtrace import course
from claimtrace.constants import EVIDENCE_PASSAGES
from claimtrace.workdir.stages.tagging import corpus_figures


def test_passages_fall_in_the_reports_buckets_and_tags_are_counted_once_each():
    passages = {
        "a": "one two three four five",  # 5 words: <=5
        "b": "one two three four five six",  # 6: 6-10
        "c": " ".join(["w"] * 20),  # 20: 11-20
        "d": " ".join(["w"] * 201),  # 201: >200
        "e": "spaced\tout\n words",  # 3, whatever the whitespace
    }
    rows = [{"id": "a", "tags": ["x", "y"]}, {"id": "b", "tags": []}, {"id": "c", "tags": ["x", "x", "z"]}]
    figures = corpus_figures(passages, rows)
    assert list(figures["length_buckets"]) == list(course.TABLE1)
    assert figures["length_buckets"] == {
        "<=5": 2,
        "6-10": 1,
        "11-20": 1,
        "21-50": 0,
        "51-100": 0,
        "101-200": 0,
        ">200": 1,
    }
    assert figures["tags_per_passage"]["0"] == 1 and figures["tags_per_passage"]["2"] == 2
    assert sum(figures["tags_per_passage"].values()) == len(rows)


def test_the_buckets_bounds_are_the_reports():
    assert [course.length_bucket(n) for n in (0, 5, 6, 10, 11, 20, 21, 50, 51, 100, 101, 200, 201)] == [
        "<=5",
        "<=5",
        "6-10",
        "6-10",
        "11-20",
        "11-20",
        "21-50",
        "21-50",
        "51-100",
        "51-100",
        "101-200",
        "101-200",
        ">200",
    ]
    assert sum(course.TABLE1.values()) == EVIDENCE_PASSAGES
