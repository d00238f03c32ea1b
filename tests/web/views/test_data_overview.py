"""claimtrace.web.views.data_overview: the data at a glance adds up, read off the build's stages."""

from __future__ import annotations

import pytest

from claimtrace import course
from claimtrace.constants import LABELS, TAGS_PER_PASSAGE
from claimtrace.web.views.data_overview import MODELS, corpus, label_balance


@pytest.fixture(scope="module")
def build(demo_site_data):
    return demo_site_data.build


def test_the_labels_of_each_split_add_up_with_their_intervals(build):
    for split in label_balance(build):
        claims = split["claims"]
        assert claims == len(build.claims(split["split"]))
        if split["gold"] is not None:
            assert sum(s["count"] for s in split["gold"].values()) == claims
        for model in split["models"]:
            if model["labels"] is None:
                assert model["reason"], model
                continue
            assert sum(s["count"] for s in model["labels"].values()) == claims
            for share in model["labels"].values():
                i = share["interval"]
                assert i["method"] == "Wilson score" and i["lower"] - 1e-12 <= i["estimate"] <= i["upper"] + 1e-12
    test = next(s for s in label_balance(build) if s["split"] == "test")
    assert test["gold"] is None
    assert [m["name"] for m in test["models"]] == [m.name for m in MODELS]


def test_the_verdicts_counted_are_the_builds(build):
    dev = next(s for s in label_balance(build) if s["split"] == "dev")
    verdicts = build.verdict_of("dev", "notebook", "retrieved", "notebook")
    counted = dev["models"][0]["labels"]
    assert {label: counted[label]["count"] for label in LABELS} == {
        label: sum(v == label for v in verdicts.values()) for label in LABELS
    }


def test_the_corpus_figures_add_up_to_its_passages(build):
    c = corpus(build)
    n = c["passages"]
    assert [row["bucket"] for row in c["lengths"]] == list(course.TABLE1)
    assert sum(row["build"]["count"] for row in c["lengths"]) == n
    assert [row["course"]["count"] for row in c["lengths"]] == list(course.TABLE1.values())
    assert sum(row["passages"]["count"] for row in c["tags_per_passage"]) == n
    assert [row["tags"] for row in c["tags_per_passage"]] == list(range(TAGS_PER_PASSAGE + 1))
    assert c["tags_per_passage"][0]["passages"]["count"] == c["untagged"]["count"]
    assert c["padded"]["count"] == build.tagging_summary()["passages_whose_tags_include_padding"]
    lengths = dict.fromkeys(course.TABLE1, 0)
    store = build.passages()
    for row in build.iter_tags():  # every passage once, by id
        lengths[course.length_bucket(len(store.get(row["id"]).split()))] += 1
    assert lengths == {row["bucket"]: row["build"]["count"] for row in c["lengths"]}
