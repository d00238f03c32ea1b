"""The LLM pages' data, read from the build: every labelled dev claim with its passages' ids in
the build's order, their texts once each, the notebook classifier's verdicts, and a claim page's
second opinion."""

from __future__ import annotations

from claimtrace import __version__
from claimtrace.evaluation.llm import protocol_constants
from claimtrace.web.views.llm import evaluation_data, half_width, passage_texts, second_opinion_data


def test_the_evaluation_data_is_the_builds(demo_build):
    data = evaluation_data(demo_build, __version__)
    claims = demo_build.claims("dev")
    retrieval = demo_build.retrieval("dev")
    verdicts = demo_build.verdict_table("dev", "retrieved")
    on_gold = demo_build.verdict_table("dev", "gold")
    assert [row["id"] for row in data["claims"]] == [cid for cid, c in claims.items() if c.label]
    for row in data["claims"]:
        assert row["retrieved"] == retrieval[row["id"]]["evidences"]
        assert row["gold"] == list(claims[row["id"]].evidences)
        assert row["notebook"] == {"retrieved": verdicts[row["id"]]["notebook"], "gold": on_gold[row["id"]]["notebook"]}
    assert sum(data["label_counts"].values()) == len(data["claims"]) == 154
    assert {k: v for k, v in data["protocol"].items() if k in protocol_constants()} == protocol_constants()
    assert data["half_width"]["20"] == round(half_width(20), 2) == 0.22


def test_every_passage_shown_has_its_text_once(demo_build):
    data = evaluation_data(demo_build, __version__)
    texts = passage_texts(demo_build, data)
    shown = {pid for row in data["claims"] for pid in row["retrieved"] + row["gold"]}
    assert set(texts) == shown
    first = data["claims"][0]
    assert texts[first["retrieved"][0]] == demo_build.passage_text(first["retrieved"][0])
    assert texts[first["gold"][0]] == demo_build.gold_texts()[first["gold"][0]]


def test_a_claim_pages_second_opinion(demo_site_data):
    trace = demo_site_data.trace("claim-752")
    opinion = second_opinion_data(trace)
    assert opinion["gold"] == trace["claim"]["gold"] and opinion["label"] == "SUPPORTS"
    assert opinion["notebook"]["retrieved"] == trace["classifier"]["notebook"]["verdict"]
    typed = demo_site_data.typed_claims.trace_text("Sea levels are rising.")
    opinion = second_opinion_data(typed)
    assert opinion["id"] is None and opinion["label"] is None and opinion["gold"] == [] and opinion["typed"]
    assert opinion["text"] == "Sea levels are rising." and opinion["rule"] == "notebook"
    assert opinion["notebook"] == {"retrieved": typed["classifier"]["alone"]["verdict"], "gold": None}
