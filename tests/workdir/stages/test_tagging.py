"""claimtrace.workdir.stages.tagging: the corpus figures the tagging stage adds to its summary, and
the stage's second half made from its inputs without the corpus."""

from __future__ import annotations

import json
import shutil
import weakref

import pytest

from claimtrace import course, errors
from claimtrace.constants import EVIDENCE_PASSAGES
from claimtrace.workdir.builder import build
from claimtrace.workdir.reader import BuildReader
from claimtrace.workdir.stages.tagging import corpus_figures, finish_tagging, prepare_tagging


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


class _Corpus(dict):
    """A corpus whose end a test can see (a plain dict takes no weak reference)."""


def test_after_its_stems_the_stage_reads_its_inputs_not_the_corpus(tmp_path, data_dir, small_evidence):
    """What the tagging stage needs of the corpus is taken before the vectorizer's fit
    (prepare_tagging), so that the build lets go of the corpus there: the inputs hold none of it,
    and the tags and summary made from them (two processes) are the files the build wrote."""
    root = tmp_path / "w"
    with pytest.warns(errors.EvidenceChecksumWarning):
        build(root, data_dir, small_evidence, processes=1, until="tagging")
    tags = root / "tagging" / "tags"
    written = {path.name: path.read_bytes() for path in sorted(tags.iterdir())}
    summary_path = root / "tagging" / "summary.json"
    summary = json.loads(summary_path.read_text(encoding="utf-8"))
    shutil.rmtree(tags)
    summary_path.unlink()
    (root / "tagging" / "vectorizer.npz").unlink()  # fitted again, from the inputs
    corpus = _Corpus(json.loads(small_evidence.read_text(encoding="utf-8")))
    alive = weakref.ref(corpus)
    reader = BuildReader(root, data_dir)
    inputs = prepare_tagging(reader, corpus, processes=1)
    del corpus
    assert alive() is None
    remade = finish_tagging(reader, inputs, processes=2)
    assert {path.name: path.read_bytes() for path in sorted(tags.iterdir())} == written
    for figures in (summary, remade):
        figures.pop("timings")
    assert remade == summary
