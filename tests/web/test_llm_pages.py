"""The LLM evaluation page and the audit log in Chromium, against the local stand-in provider
(tests/support/fake_provider.py; the real providers cannot be reached from here): a stratified
run of 20 dev claims with the paired result and its intervals, its export imported again
unchanged, a 429 retried, a malformed answer scored as wrong, and the key never sent to the
site nor kept in any record but its own slot.
"""

from __future__ import annotations

import json
from urllib.parse import urlparse

import pytest

from claimtrace.evaluation import llm as protocol
from claimtrace.evaluation import llm_score
from claimtrace.evaluation import statistics as S
from claimtrace.evaluation.scorer import evidence_f
from claimtrace.web.app import create_app
from tests.support.fake_provider import FakeProvider
from tests.web.conftest import ARTIFACTS, RUN, serving

pytestmark = pytest.mark.browser

KEY = "sk-test-0123456789-do-not-leak"


@pytest.fixture(scope="module")
def provider():
    # the first claim asked is rate-limited once; the second answers with no valid object
    with FakeProvider("openai", fail_first={0: 1}, malformed={1}, expected_key=KEY) as fake:
        yield fake


@pytest.fixture(scope="module")
def site(demo_site_data, provider):
    origin = f"http://127.0.0.1:{provider.port}"
    with serving(create_app(site_data=demo_site_data, llm_origins=(origin,))) as base:
        yield base


@pytest.fixture()
def page(browser, site):
    """A page recording every request to the site itself, console errors and page errors."""
    context = browser.new_context(viewport={"width": 1280, "height": 900}, accept_downloads=True)
    page = context.new_page()
    page.problems, page.own_requests = [], []
    host = urlparse(site).netloc

    def on_request(request):
        if urlparse(request.url).netloc == host:
            page.own_requests.append(request)

    page.on("request", on_request)
    page.on("console", lambda m: m.type in ("error", "warning") and page.problems.append(f"console: {m.text}"))
    page.on("pageerror", lambda error: page.problems.append(f"page error: {error}"))
    yield page
    context.close()


def _set_provider(page, base_url: str, key: str = KEY) -> None:
    page.click("#llm-open-settings")
    page.select_option("#llm-provider", "openai-compatible")
    page.fill("#llm-base-url", base_url)
    page.fill("#llm-model", "stand-in-model")
    page.fill("#llm-key", key)
    page.click("#llm-save")
    assert "stand-in-model" in page.locator("#llm-provider-status").inner_text()


def _stored(page) -> dict:
    return page.evaluate(
        """() => { const out = {};
        for (const [name, s] of [["local", localStorage], ["session", sessionStorage]])
          for (let i = 0; i < s.length; i++) out[name + ":" + s.key(i)] = s.getItem(s.key(i));
        return out; }"""
    )


def _download(page, button: str) -> bytes:
    with page.expect_download() as info:
        page.click(button)
    return open(info.value.path(), "rb").read()


def _labels(demo_site_data) -> dict[str, str]:
    return {cid: c.label for cid, c in demo_site_data.build.claims("dev").items()}


def _run(page, provider) -> str:
    """A stratified run of 20 dev claims, seed 2024, from the page: its results' text."""
    _set_provider(page, provider.openai_base_url)
    provider.requests.clear()
    page.fill("#llm-n", "20")
    page.fill("#llm-concurrency", "1")  # one call at a time: the stand-in answers in the order asked
    page.fill("#llm-seed", "2024")
    page.check("#llm-stratified")
    page.click("#llm-start")
    page.wait_for_selector("#results:not([hidden])", timeout=60_000)
    return page.locator("#llm-results").inner_text()


def _check_run_file(run: dict, demo_site_data) -> dict:
    """The exported run is the protocol's: Python's sample, each answer judged as Python judges
    it, never the key. Its claim entries."""
    meta = run[protocol.RUN_KEY]
    assert meta["sample"]["claim_ids"] == protocol.sample_ids(_labels(demo_site_data), 20, 2024, stratified=True)
    assert meta["model"] == "stand-in-model" and meta["failed"] == {} and KEY not in json.dumps(run)
    entries = protocol.claim_entries(run)
    assert list(entries) == meta["sample"]["claim_ids"]
    statuses = [e["llm"]["status"] for e in entries.values()]
    assert statuses.count("unusable") == 1 and entries[meta["sample"]["claim_ids"][1]]["claim_label"] is None
    for entry in entries.values():
        answer = protocol.judge_answer(entry["llm"]["raw"])
        judged = (answer.status, answer.label, list(answer.cited_ids))
        assert judged == (entry["llm"]["status"], entry["claim_label"], entry["llm"]["cited_ids"])
    return entries


def _check_figures(page, run: dict, demo_site_data) -> None:
    """The figures shown are claimtrace.evaluation.llm_score's on the same run: every estimate,
    the Wilson intervals, McNemar's test and Cohen's h exactly; the bootstrap intervals come from
    the page's own seeded stream (numpy's PCG64 is not in the browser), so only their estimates."""
    figures = page.evaluate("() => claimtrace.llm.score(claimtrace.state.llm.run, claimtrace.state.llm.data)")
    build = demo_site_data.build
    claims = build.claims("dev")
    notebook = {cid: v["notebook"] for cid, v in build.verdict_table("dev", "retrieved").items()}
    shown = {cid: r["evidences"] for cid, r in build.retrieval("dev").items()}
    python = llm_score.score_run(run, claims, notebook, shown)
    close = {"abs": 1e-12}
    for mine, theirs in (
        (figures["accuracy"], python["accuracy"]),
        (figures["notebook_accuracy"], python["notebook_accuracy"]),
    ):
        assert (mine["estimate"], mine["lower"], mine["upper"]) == pytest.approx(
            (theirs["estimate"], theirs["lower"], theirs["upper"]), **close
        )
    assert figures["macro_f1"]["estimate"] == pytest.approx(python["macro_f1"]["estimate"], **close)
    paired = python["paired"]
    assert figures["paired"]["difference"] == pytest.approx(paired["A"]["estimate"], **close)
    assert (figures["paired"]["b"], figures["paired"]["c"]) == (paired["mcnemar"]["b"], paired["mcnemar"]["c"])
    assert figures["paired"]["p"] == pytest.approx(paired["mcnemar"]["exact_p"], rel=1e-9)
    assert figures["paired"]["h"] == pytest.approx(paired["cohens_h"], **close)
    cited = python["citations"]
    assert (figures["citations"]["cited"], figures["citations"]["valid"]) == (cited["cited"], cited["valid"])
    assert figures["citations"]["lower"] == pytest.approx(cited["validity"]["lower"], **close)
    assert figures["evidence_f"]["estimate"] == pytest.approx(python["evidence_f"]["estimate"], **close)
    assert (figures["latency"]["median"], figures["latency"]["p90"]) == pytest.approx(
        (python["latency"]["median_ms"], python["latency"]["p90_ms"]), **close
    )
    assert (figures["tokens"]["input"], figures["tokens"]["output"]) == (
        python["tokens"]["in"],
        python["tokens"]["out"],
    )
    assert figures["cost"]["usd"] == python["cost"]["usd"] == "unknown"  # no price for the stand-in's id
    assert figures["half_width"] == pytest.approx(python["interval_width"], **close)
    assert (figures["n"], figures["unusable"], figures["failed"]) == (
        python["counts"]["scored"],
        python["counts"]["unusable"],
        python["counts"]["failed"],
    )


def _check_key_kept_to_itself(page) -> None:
    """Never in a request to the site, never in a stored record but its own slot."""
    for request in page.own_requests:
        assert (
            KEY not in request.url and KEY not in json.dumps(request.headers) and KEY not in (request.post_data or "")
        )
    stored = _stored(page)
    assert stored.pop("session:claimtrace.llm.key") == KEY
    assert stored and not any(KEY in value for value in stored.values())
    audit = json.loads(stored["local:claimtrace.llm.audit"])
    assert len(audit) == 20 and {e["status"] for e in audit} == {"ok", "unusable"}


def _import(page, path) -> str:
    page.set_input_files("#llm-import", str(path))
    page.wait_for_selector(f"#llm-import-status[data-file='{path.name}']")
    return page.locator("#llm-import-status").get_attribute("data-verified")


def test_a_stratified_run_paired_exported_and_imported_unchanged(page, site, provider, demo_site_data, tmp_path):
    page.goto(site + "/evaluation.html", wait_until="load")
    assert "0.98/√N" in page.locator("#protocol").inner_text()
    results = _run(page, provider)
    assert "±0.22" in results and "McNemar’s exact p" in results and "Cohen’s h" in results
    assert "1 unusable (scored as wrong), 0 failed" in results
    # a 429 retried: 20 claims, 21 requests; each carried the key to the provider, and only there
    asked = [r for r in provider.requests if r["path"].endswith("/chat/completions")]
    assert len(asked) == 21 and all(r["headers"].get("authorization") == f"Bearer {KEY}" for r in asked)
    run_bytes = _download(page, "#llm-export")
    entries = _check_run_file(json.loads(run_bytes), demo_site_data)
    _check_figures(page, json.loads(run_bytes), demo_site_data)
    ARTIFACTS.mkdir(exist_ok=True)
    page.locator("#results").screenshot(path=str(ARTIFACTS / "evaluation-results-1280.png"))

    # imported again: verified, the same figures, exported again byte for byte
    path = tmp_path / "run.json"
    path.write_bytes(run_bytes)
    page.reload(wait_until="load")
    assert _import(page, path) == "true", page.locator("#llm-import-status").inner_text()
    assert page.locator("#llm-import-status").inner_text().endswith("every answer reads as it says.")
    assert page.locator("#llm-results").inner_text() == results
    assert _download(page, "#llm-export") == run_bytes

    # an edited run is said to be so: its seed, and an answer's citations
    edited = json.loads(run_bytes)
    first = list(entries)[0]
    edited[first]["llm"]["cited_ids"] = ["evidence-0"]
    edited[protocol.RUN_KEY]["sample"]["seed"] = 7
    path = tmp_path / "edited.json"
    path.write_text(json.dumps(edited))
    assert _import(page, path) == "false"
    said = page.locator("#llm-import-status").inner_text()
    assert "seed 7" in said and first in said

    _check_key_kept_to_itself(page)
    # Chromium logs the stand-in's 429 itself; nothing else may be said
    rate_limited = "console: Failed to load resource: the server responded with a status of 429 (Too Many Requests)"
    assert [p for p in page.problems if p != rate_limited] == []


def test_the_pages_statistics_are_the_evaluation_layers(page, site):
    """Macro-F1, Wilson, McNemar and the evidence F in the page's code, on small fixtures."""
    page.goto(site + "/evaluation.html", wait_until="load")
    gold = ["SUPPORTS", "REFUTES", "SUPPORTS", "DISPUTED", "NOT_ENOUGH_INFO", "SUPPORTS", "REFUTES"]
    said = ["SUPPORTS", "SUPPORTS", "NOT_ENOUGH_INFO", "DISPUTED", "NOT_ENOUGH_INFO", "REFUTES", "REFUTES"]
    js = "([g, s]) => claimtrace.llm.stats.macroF1(g, s)"
    assert page.evaluate(js, [gold, said]) == pytest.approx(S.macro_f1(gold, said), abs=1e-15)
    for k, n in ((0, 5), (3, 20), (20, 20), (77, 154)):
        got = page.evaluate("([k, n]) => claimtrace.llm.stats.wilson(k, n)", [k, n])
        wilson = S.wilson(k, n)
        assert (got["lower"], got["upper"]) == pytest.approx((wilson.lower, wilson.upper), abs=1e-12)
    for b, c in ((0, 0), (1, 8), (12, 30), (60, 45)):
        p = page.evaluate("([b, c]) => claimtrace.llm.stats.mcnemar(b, c).p", [b, c])
        assert p == pytest.approx(S.mcnemar_of_counts([b], [c])[0].exact_p, rel=1e-9)
    cases = [(["a", "b", "a"], ["a", "c"]), ([], ["a"]), (["x"], ["a"]), (["a", "b"], ["b", "a", "c"])]
    for predicted, gold_ids in cases:
        f = page.evaluate("([p, g]) => claimtrace.llm.stats.evidenceF(p, g)", [predicted, gold_ids])
        assert f == pytest.approx(evidence_f(predicted, gold_ids), abs=1e-15)


def test_anthropics_wire_format_and_a_wrong_key_failed_not_scored(browser, demo_site_data):
    with FakeProvider("anthropic", expected_key=KEY) as fake:
        app = create_app(site_data=demo_site_data, llm_origins=(fake.anthropic_base_url,))
        with serving(app) as base:
            context = browser.new_context(viewport={"width": 1280, "height": 900})
            page = context.new_page()
            page.goto(base + "/evaluation.html", wait_until="load")
            for key, expected in ((KEY, "0 failed"), ("sk-wrong", "4 failed")):
                page.click("#llm-open-settings")
                page.select_option("#llm-provider", "anthropic")
                page.fill("#llm-base-url", fake.anthropic_base_url)
                page.fill("#llm-model", "claude-3-5-haiku-latest")
                page.fill("#llm-key", key)
                page.click("#llm-save")
                page.fill("#llm-n", "4")
                page.uncheck("#llm-stratified")
                page.click("#llm-start")
                page.wait_for_selector("#llm-progress:has-text('Done')", timeout=60_000)
                assert (
                    expected in page.locator("#llm-progress").inner_text() + page.locator("#llm-results").inner_text()
                )
            context.close()
    calls = [r for r in fake.requests if r["path"] == "/v1/messages"]
    assert len(calls) == 8  # a 401 is not asked again
    first = calls[0]
    assert first["headers"]["x-api-key"] == KEY and first["headers"]["anthropic-version"] == "2023-06-01"
    assert first["headers"]["anthropic-dangerous-direct-browser-access"] == "true"
    assert first["body"]["max_tokens"] == 400 and first["body"]["temperature"] == 0
    assert first["body"]["system"] == protocol.SYSTEM_PROMPT_V1 and first["body"]["messages"][0]["role"] == "user"


def test_forget_remember_and_the_audit_log(page, site, provider):
    page.goto(site + "/evaluation.html", wait_until="load")
    _set_provider(page, provider.openai_base_url)
    page.click("#llm-open-settings")
    page.check("#llm-remember")
    page.click("#llm-save")
    stored = _stored(page)
    assert stored["local:claimtrace.llm.key"] == KEY and "session:claimtrace.llm.key" not in stored
    page.click("#llm-forget")
    stored = _stored(page)
    assert not any(name.endswith("claimtrace.llm.key") or name.endswith("claimtrace.llm.settings") for name in stored)
    assert page.locator("#llm-start").is_disabled()

    page.goto(site + "/ai-log.html", wait_until="load")
    count = page.locator("#ai-log-count").inner_text()
    assert count.endswith("kept in this browser.")
    log = json.loads(_download(page, "#ai-log-export"))
    assert len(log) == page.locator("#ai-log details").count() and KEY not in json.dumps(log)
    assert not page.problems, page.problems


def test_a_second_opinion_beside_the_notebooks_verdict(page, site, provider, demo_site_data):
    page.goto(site + "/evaluation.html", wait_until="load")
    _set_provider(page, provider.openai_base_url)
    page.goto(site + "/claim/claim-752.html", wait_until="load")
    assert "stand-in-model" in page.locator("#second-opinion-status").inner_text()
    page.check("#second-opinion-form input[value=gold]")
    page.click("#second-opinion-ask")
    page.wait_for_selector("#second-opinion-answer .opinion", timeout=30_000)
    said = page.locator("#second-opinion-answer").inner_text()
    notebook = demo_site_data.build.verdict_table("dev", "gold")["claim-752"]["notebook"]
    assert "Generated by stand-in-model" in said and f"batches of 16): {notebook}" in said
    page.select_option("#second-opinion-label", "REFUTES")
    page.click("#second-opinion-edit")
    assert "edited (REFUTES)" in page.locator("#second-opinion-status").inner_text()
    last = json.loads(_stored(page)["local:claimtrace.llm.audit"])[-1]
    assert (last["where"], last["claim_id"], last["condition"]) == ("claim", "claim-752", "gold")
    assert (last["decision"], last["decided_label"]) == ("edited", "REFUTES")
    assert "[evidence-67732]" in last["user"] and last["output"] and KEY not in json.dumps(last)
    asked = provider.requests[-1]["body"]["messages"][1]["content"]
    assert (
        asked
        == last["user"]
        == protocol.user_prompt(
            demo_site_data.build.claims("dev")["claim-752"].text,
            [
                (pid, demo_site_data.build.gold_texts()[pid])
                for pid in demo_site_data.build.claims("dev")["claim-752"].evidences
            ],
        )
    )
    for request in page.own_requests:
        assert KEY not in json.dumps(request.headers) and KEY not in (request.post_data or "")
    ARTIFACTS.mkdir(exist_ok=True)
    page.locator("#second-opinion").screenshot(path=str(ARTIFACTS / "second-opinion-1280.png"))
    page.set_viewport_size({"width": 390, "height": 900})
    page.locator("#second-opinion").screenshot(path=str(ARTIFACTS / "second-opinion-390.png"))
    rate_limited = "console: Failed to load resource: the server responded with a status of 429 (Too Many Requests)"
    assert [p for p in page.problems if p != rate_limited] == []


@pytest.mark.parametrize("path", ["/evaluation.html", "/ai-log.html"])
@pytest.mark.parametrize("width", [1280, 390])
def test_axe_and_screenshots(browser, axe, site, path, width):
    context = browser.new_context(viewport={"width": width, "height": 900}, bypass_csp=True)
    try:
        page = context.new_page()
        page.goto(site + path, wait_until="load")
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / f"{path.strip('/').split('.')[0]}-{width}.png"), full_page=True)
        assert axe.on(page) == []
        if path == "/evaluation.html":  # the dialog too
            page.click("#llm-open-settings")
            assert page.evaluate(RUN) == []
            page.screenshot(path=str(ARTIFACTS / f"evaluation-settings-{width}.png"))
    finally:
        context.close()
