"""An LLM run read against the build (claimtrace.compare.llm_report, compare.runs): the passages
shown are the build's, and the site's upload takes a run and names it."""

from __future__ import annotations

import json

import pytest

from claimtrace.compare.llm_client import Provider
from claimtrace.compare.llm_report import passages_for, sample_of
from claimtrace.compare.llm_run import Settings, run
from claimtrace.evaluation import llm as P
from tests.support.fake_provider import FakeProvider


@pytest.fixture(scope="module")
def llm_run(demo_build, tmp_path_factory):
    out = tmp_path_factory.mktemp("llm") / "run.json"
    with FakeProvider(refuse=[0]) as fake:
        run(demo_build, Settings(Provider("openai-compatible", fake.base_url, "fake"), n=10, seed=4), out)
        asked = [request["body"]["messages"][1]["content"] for request in fake.requests]
    return out, asked


def test_the_passages_shown_are_those_the_classifier_read(demo_build, llm_run):
    _, asked = llm_run
    ids = sample_of(demo_build, "dev", 10, 4, False)
    claims = demo_build.claims("dev")
    for cid in ids:
        retrieved = demo_build.retrieval("dev")[cid]["evidences"]
        shown = passages_for(demo_build, "dev", claims[cid], "retrieved")
        assert [pid for pid, _ in shown] == retrieved
        assert all(text == demo_build.passage_text(pid) and text for pid, text in shown)
        assert P.user_prompt(claims[cid].text, shown) in asked
    gold = passages_for(demo_build, "dev", claims[ids[0]], "gold")
    assert [pid for pid, _ in gold] == list(claims[ids[0]].evidences)


def test_the_site_takes_an_uploaded_run_and_names_it(demo_build, llm_run):
    from fastapi.testclient import TestClient

    from claimtrace.web.app import create_app
    from claimtrace.web.site_data import SiteData

    out, _ = llm_run
    with TestClient(create_app(site_data=SiteData(demo_build))) as client:
        answer = client.post("/api/compare?name=fake", content=out.read_bytes())
        assert answer.status_code == 201, answer.text
        page = client.get("/" + answer.json()["url"].replace(".html", ".json")).json()
    texts = [finding["text"] for finding in page["run"]["audit"]]
    assert any(text.startswith("an LLM run of fake (prompt v1, retrieved passages, 10 dev claims") for text in texts)
    assert not any("of no course claim" in text or "missing" in text for text in texts)
    assert page["run"]["llm"]["counts"]["unusable"] == 1 and "±0.31" in page["run"]["llm"]["note"]
    assert json.loads(out.read_text())[P.RUN_KEY]["sample"]["claim_ids"] == sample_of(demo_build, "dev", 10, 4, False)


def test_the_run_s_own_figures_equal_evaluate_s_on_the_same_claims(demo_build, llm_run):
    from claimtrace.compare.llm_report import llm_report
    from claimtrace.evaluation.scorer import evaluate
    from claimtrace.evaluation.significance import figures_of
    from claimtrace.evaluation.submission import read_submission

    out, _ = llm_run
    value = json.loads(out.read_text())
    gold = demo_build.claims("dev")
    read = read_submission(value, str(out))
    scored = {cid: claim for cid, claim in read.entries.items() if cid in gold}
    figures = figures_of(evaluate(scored, gold, skip_missing=True))
    report = llm_report(demo_build, value)
    assert report["accuracy"] == figures["A"] and report["macro_f1"] == figures["macro_f1"]


def test_calls_are_made_at_most_concurrency_at_a_time(demo_build, tmp_path):
    import threading
    import time

    lock, state = threading.Lock(), {"now": 0, "most": 0}

    def counted(request):
        with lock:
            state["now"] += 1
            state["most"] = max(state["most"], state["now"])
        time.sleep(0.05)
        with lock:
            state["now"] -= 1
        return None

    with FakeProvider(script=counted) as fake:
        settings = Settings(Provider("openai-compatible", fake.base_url, "fake"), n=12, seed=1, concurrency=3)
        run(demo_build, settings, tmp_path / "run.json")
    assert state["most"] == 3
