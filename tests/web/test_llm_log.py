"""The header's "LLM settings" button and the audit log page, in Chromium.

The button opens the one provider settings dialog on a page that is not the evaluation page,
from the keyboard (Escape closes it, the focus comes back), served and from a static export
opened from disk; what it saves is what the evaluation page and a claim page's second opinion
then use. The audit log page, given calls written into its localStorage: its counts are the
calls', its filter shows only the chosen feature and outcome, a call opened shows the whole
answer and takes a decision, its CSV parses back to the calls, and clearing asks first. axe on
both, at 1280 and 390 px. No provider is called: the calls are written by the test.
"""

from __future__ import annotations

import csv
import io
import json
from collections import Counter

import pytest

from claimtrace.web.app import create_app
from claimtrace.web.views.llm import AI_LOG_DATA
from tests.web.conftest import RUN, serving

pytestmark = pytest.mark.browser

#: Where the screenshots go (the brief's folder; looked at by hand).
SHOTS = "/work/shots"

USER = "Claim: The sea is rising.\n\nPassages:\n[evidence-1] Tide gauges show a rise.\n[evidence-2] Satellites, too, say so."


def _call(n: int, where: str, status: str, **fields) -> dict:
    """One audit record as app-llm-page.js writes it."""
    label = fields.pop("label", "SUPPORTS" if status == "ok" else None)
    record = {
        "id": f"t{n}",
        "time": f"2025-06-0{n % 9 + 1}T10:00:0{n % 10}.000Z",
        "where": where,
        "claim_id": f"claim-{700 + n}",
        "claim_text": "The sea is rising.",
        "rule": None,
        "condition": "retrieved",
        "provider": "openai-compatible",
        "base_url": "http://127.0.0.1:9/v1",
        "model": "stand-in-model",
        "prompt_version": "v1",
        "system": "You are a fact-checker.",
        "user": USER,
        "output": None if status == "failed" else '{"label": "SUPPORTS", "evidence_ids": ["evidence-1"]}',
        "status": status,
        "label": label,
        "cited_ids": ["evidence-1"] if status == "ok" else [],
        "rationale": None if status == "failed" else "",
        "error": "HTTP 500" if status == "failed" else None,
        "latency_ms": None if status == "failed" else 100 + n,
        "tokens_in": None if status == "failed" else 40,
        "tokens_out": None if status == "failed" else 9,
        "attempts": 5 if status == "failed" else 1,
        "decision": None,
        "decided_label": None,
    }
    record.update(fields)
    return record


#: Calls from both features, every outcome, two models, every decision; one answer with commas,
#: quotes and line breaks, citing a passage it was not shown.
CALLS = [
    _call(1, "evaluation", "ok", decision="accepted", decided_label="SUPPORTS"),
    _call(2, "evaluation", "unusable", output="I cannot say.", error="no JSON object in the answer"),
    _call(3, "evaluation", "failed"),
    _call(4, "evaluation", "ok", label="REFUTES"),
    _call(
        5,
        "claim",
        "ok",
        label="DISPUTED",
        cited_ids=["evidence-2", "evidence-9"],
        rationale='Some say "yes", others no,\nso: disputed.',
        output='Here it is:\n```json\n{"label": "DISPUTED", "evidence_ids": ["evidence-2", "evidence-9"],'
        ' "rationale": "Some say \\"yes\\", others no,\\nso: disputed."}\n```',
        decision="edited",
        decided_label="NOT_ENOUGH_INFO",
    ),
    _call(6, "claim", "ok", provider="anthropic", base_url="", model="claude-3-5-haiku-latest", decision="rejected"),
    _call(7, "claim", "failed", provider="anthropic", base_url="", model="claude-3-5-haiku-latest"),
]


@pytest.fixture(scope="module")
def site(demo_site_data):
    with serving(create_app(site_data=demo_site_data)) as base:
        yield base


@pytest.fixture(scope="module")
def exported(demo_site_data, tmp_path_factory):
    from claimtrace.web.site import write_site

    out = tmp_path_factory.mktemp("site")
    write_site(None, out, site_data=demo_site_data, splits=("dev",), only=("claim-752",))
    return out


@pytest.fixture()
def open_at(browser):
    """A function opening a URL at a width, in a context of its own (its storage fresh): the
    page, its script errors in ``page.problems``."""
    contexts = []

    def make(url: str, width: int = 1280):
        context = browser.new_context(viewport={"width": width, "height": 900}, accept_downloads=True, bypass_csp=True)
        contexts.append(context)
        page = context.new_page()
        page.problems = []
        page.on("pageerror", lambda error: page.problems.append(f"page error: {error}"))
        page.on("console", lambda m: m.type == "error" and page.problems.append(f"console: {m.text}"))
        page.goto(url, wait_until="load")
        return page

    yield make
    for context in contexts:
        context.close()


def _with_calls(page, calls=CALLS) -> None:
    page.evaluate("calls => localStorage.setItem('claimtrace.llm.audit', JSON.stringify(calls))", calls)
    page.reload(wait_until="load")


def _kept(page) -> list[dict]:
    return page.evaluate("() => JSON.parse(localStorage.getItem('claimtrace.llm.audit') || '[]')")


# ---------------------------------------------------------------- the header's settings


def _header_button(page):
    """The header's button, shown: on a narrow screen it is folded with the links, behind Menu."""
    button = page.locator("#llm-settings-button")
    if not button.is_visible():
        page.click("header .menu-button")
    return button


def _settings_from_the_header(page, model: str) -> None:
    """The dialog opened from the keyboard, closed by Escape (the focus back on the button),
    opened again and saved."""
    button = _header_button(page)
    assert button.is_visible() and button.get_attribute("aria-haspopup") == "dialog"
    button.focus()
    page.keyboard.press("Enter")
    page.wait_for_selector("dialog#llm-settings[open]")
    assert page.evaluate("() => document.activeElement.closest('dialog') !== null")
    page.keyboard.press("Escape")
    page.wait_for_selector("dialog#llm-settings:not([open])", state="attached")
    assert page.evaluate("() => document.activeElement.id") == "llm-settings-button"
    page.keyboard.press("Enter")
    page.wait_for_selector("dialog#llm-settings[open]")
    page.select_option("#llm-provider", "openai-compatible")
    page.fill("#llm-base-url", "http://127.0.0.1:9/v1")
    page.fill("#llm-model", model)
    page.fill("#llm-key", "sk-header-test")
    page.click("#llm-save")
    page.wait_for_selector("dialog#llm-settings:not([open])", state="attached")
    assert page.evaluate("() => document.activeElement.id") == "llm-settings-button"


def _seen_by_the_evaluation_page(page, url: str, model: str) -> None:
    page.goto(url, wait_until="load")
    assert model in page.locator("#llm-provider-status").inner_text()
    assert page.locator("#llm-start").is_enabled()
    page.click("#llm-open-settings")  # the same dialog, filled with what the header saved
    assert page.locator("#llm-model").input_value() == model
    assert page.locator("#llm-key").input_value() == "sk-header-test"


@pytest.mark.parametrize(("kind", "width"), [("served", 1280), ("exported", 1280), ("served", 390)])
def test_the_headers_button_sets_the_provider_the_evaluation_page_uses(open_at, site, exported, kind, width):
    base = site + "/" if kind == "served" else exported.as_uri() + "/"
    page = open_at(base + "results.html", width)
    # nothing of the settings' code before the button is used
    assert page.evaluate("() => !window.claimtrace.llmSettings && !document.querySelector('script[src*=app-llm]')")
    _settings_from_the_header(page, f"header-model-{kind}")
    assert page.evaluate("() => [...document.scripts].filter(s => /app-llm/.test(s.src)).map(s => s.src)") == [
        base + "static/" + page.locator("#llm-settings-button").get_attribute("data-scripts").split("/")[-1]
    ]
    _seen_by_the_evaluation_page(page, base + "evaluation.html", f"header-model-{kind}")
    assert not page.problems, page.problems


def test_the_headers_button_on_a_claim_page_updates_its_second_opinion(open_at, site):
    page = open_at(site + "/claim/claim-752.html")
    page.wait_for_selector("#second-opinion[data-ready=true]")
    assert "No provider set" in page.locator("#second-opinion-status").inner_text()
    _settings_from_the_header(page, "claim-page-model")
    assert "Your model: claim-page-model" in page.locator("#second-opinion-status").inner_text()
    assert page.locator("#second-opinion-ask").is_enabled()
    assert page.evaluate("() => document.querySelectorAll('dialog#llm-settings').length") == 1
    assert not page.problems, page.problems


@pytest.mark.parametrize("width", [1280, 390])
@pytest.mark.parametrize("kind", ["served", "exported"])
def test_axe_with_the_settings_open(axe, open_at, site, exported, kind, width):
    url = site + "/results.html" if kind == "served" else (exported / "results.html").as_uri()
    page = open_at(url, width)
    _header_button(page).click()
    page.wait_for_selector("dialog#llm-settings[open]")
    if kind == "served":
        page.screenshot(path=f"{SHOTS}/llm-log-settings-{width}.png")
    assert axe.on(page) == []


# ---------------------------------------------------------------- the audit log page


def _counts_shown(page) -> dict[str, int]:
    return page.evaluate(
        "() => Object.fromEntries([...document.querySelectorAll('[data-count]')]"
        ".filter(c => c.closest('#ai-log-summary')).map(c => [c.dataset.count, +c.textContent]))"
    )


def _counts_of(calls) -> dict[str, int]:
    counts = Counter()
    for call in calls:
        counts[f"feature:{call['where']}"] += 1
        counts[f"model:{call['provider']} · {call['model']}"] += 1
        counts[f"outcome:{call['status']}"] += 1
        counts[f"decision:{call['decision'] or 'none'}"] += 1
    return dict(counts)


def test_the_logs_counts_are_its_calls_and_the_filter_shows_only_the_chosen(open_at, site):
    page = open_at(site + "/ai-log.html")
    _with_calls(page)
    assert page.locator("#ai-log-count").inner_text() == "7 calls kept in this browser."
    assert _counts_shown(page) == _counts_of(CALLS)
    assert "7 calls, 2 failed; 3 decisions taken on 5 answers." in page.locator("#ai-log-summary").inner_text()
    assert page.locator("#ai-log details").count() == 7
    page.select_option("#ai-log-where", "claim")
    shown = page.locator("#ai-log details")
    assert shown.count() == 3 and set(shown.evaluate_all("ds => ds.map(d => d.dataset.where)")) == {"claim"}
    assert page.locator("#ai-log-shown").inner_text() == "Showing 3 of 7 calls, claim page second opinion."
    page.select_option("#ai-log-status", "failed")
    assert shown.evaluate_all("ds => ds.map(d => d.dataset.id)") == ["t7"]
    page.select_option("#ai-log-where", "")
    assert shown.evaluate_all("ds => ds.map(d => d.dataset.id)") == ["t7", "t3"]  # latest first
    assert _counts_shown(page) == _counts_of(CALLS)  # the counts are the whole log's
    assert not page.problems, page.problems


def _facts(review) -> dict[str, str]:
    return dict(
        zip(review.locator(".ai-facts dt").all_text_contents(), review.locator(".ai-facts dd").all_text_contents())
    )


def test_a_call_reviewed_in_full_and_decided_from_the_log(open_at, site):
    page = open_at(site + "/ai-log.html")
    _with_calls(page)
    call = page.locator("#ai-log details[data-id=t5]")
    call.locator("summary").click()
    review = call.locator(".ai-review")
    assert review.locator(".ai-output").inner_text() == CALLS[4]["output"]
    assert review.locator(".ai-user").inner_text() == "user: " + USER
    assert review.locator(".ai-system").inner_text() == "system: You are a fact-checker."
    assert _facts(review) == {
        "Feature": "claim page second opinion, claim claim-705, retrieved passages",
        "Model": "stand-in-model (openai-compatible at http://127.0.0.1:9/v1), prompt v1",
        "Call": "2025-06-06T10:00:05.000Z · 105 ms · tokens 40 in, 9 out · 1 attempt",
        "Outcome": "ok (scored)",
        "Label read": "DISPUTED",
        "Its reason": 'Some say "yes", others no,\nso: disputed.',
    }
    cited = review.locator(".ai-cited li").all_text_contents()
    assert cited == ["evidence-2 Satellites, too, say so.", "evidence-9 (not among the passages shown)"]
    assert review.locator(".ai-decision").inner_text() == "Your decision: edited (NOT_ENOUGH_INFO)."
    # decided again from the log: kept with the call, counted, said in its line
    page.click("#call-t5-reject")
    assert [c["decision"] for c in _kept(page) if c["id"] == "t5"] == ["rejected"]
    changed = [{**c, "decision": "rejected", "decided_label": None} if c["id"] == "t5" else c for c in CALLS]
    assert _counts_shown(page) == _counts_of(changed)
    assert call.locator("summary").inner_text().endswith("decision: rejected")
    assert "rejected" in review.locator(".ai-decision").inner_text()
    # an old record without its rationale: read again from the answer
    old = {key: value for key, value in CALLS[4].items() if key != "rationale"}
    _with_calls(page, [old])
    page.locator("#ai-log details summary").click()
    assert _facts(page.locator(".ai-review"))["Its reason"] == 'Some say "yes", others no,\nso: disputed.'
    # a failed call shows its error and no decision to take
    _with_calls(page, [CALLS[2]])
    page.locator("#ai-log details summary").click()
    assert "(no answer: HTTP 500)" in page.locator(".ai-output").inner_text()
    assert page.locator(".ai-review .decision").count() == 0
    assert not page.problems, page.problems


def test_the_csv_parses_back_to_the_calls(open_at, site):
    page = open_at(site + "/ai-log.html")
    _with_calls(page)
    with page.expect_download() as info:
        page.click("#ai-log-csv")
    raw = open(info.value.path(), "rb").read()
    assert info.value.suggested_filename == "claimtrace-ai-log.csv"
    assert raw.startswith(b"\xef\xbb\xbf") and b"\r\n" in raw
    rows = list(csv.reader(io.StringIO(raw.decode("utf-8-sig"), newline="")))
    assert rows[0] == AI_LOG_DATA["fields"] and len(rows) == 1 + len(CALLS)

    def cell(value) -> str:
        if value is None:
            return ""
        return " ".join(value) if isinstance(value, list) else str(value)

    assert rows[1:] == [[cell(call[field]) for field in AI_LOG_DATA["fields"]] for call in CALLS]
    with page.expect_download() as info:
        page.click("#ai-log-export")
    assert json.loads(open(info.value.path(), "rb").read()) == CALLS
    assert not page.problems, page.problems


def test_clearing_asks_first_and_cancel_keeps_the_log(open_at, site):
    page = open_at(site + "/ai-log.html")
    _with_calls(page)
    for cancel in (lambda: page.click("#ai-log-confirm-cancel"), lambda: page.keyboard.press("Escape")):
        page.click("#ai-log-clear")
        page.wait_for_selector("dialog#ai-log-confirm[open]")
        assert "All 7 calls" in page.locator("#ai-log-confirm-text").inner_text()
        assert page.locator("#ai-log-confirm-clear").inner_text() == "Delete 7 calls"
        assert page.evaluate("() => document.activeElement.id") == "ai-log-confirm-cancel"
        cancel()
        page.wait_for_selector("dialog#ai-log-confirm:not([open])", state="attached")
        assert _kept(page) == CALLS and page.locator("#ai-log details").count() == 7
        assert page.evaluate("() => document.activeElement.id") == "ai-log-clear"
    page.click("#ai-log-clear")
    page.click("#ai-log-confirm-clear")
    page.wait_for_selector("dialog#ai-log-confirm:not([open])", state="attached")
    # the dialog's close event, whose handler clears the log and says so, comes in a task after
    # it loses `open`; the protocol's own calls may run first
    page.wait_for_function("() => /deleted/.test(document.getElementById('ai-log-count').textContent)", timeout=5_000)
    assert _kept(page) == [] and page.locator("#ai-log details").count() == 0
    assert page.locator("#ai-log-count").inner_text() == "7 calls deleted: the log is empty."
    assert not page.problems, page.problems


@pytest.mark.parametrize("width", [1280, 390])
def test_axe_and_screenshots_of_the_log(axe, open_at, site, width):
    page = open_at(site + "/ai-log.html", width)
    _with_calls(page)
    page.locator("#ai-log details[data-id=t5] summary").click()
    page.add_style_tag(content="header.top { position: static; }")  # once atop a full-page shot, not mid-way
    page.screenshot(path=f"{SHOTS}/llm-log-page-{width}.png", full_page=True)
    assert axe.on(page) == []
    page.click("#ai-log-clear")
    page.wait_for_selector("dialog#ai-log-confirm[open]")
    page.screenshot(path=f"{SHOTS}/llm-log-clear-{width}.png")
    assert page.evaluate(RUN) == []


def test_the_exported_log_page_works_from_disk(axe, open_at, exported):
    page = open_at((exported / "ai-log.html").as_uri(), 390)
    _with_calls(page)
    assert _counts_shown(page) == _counts_of(CALLS)
    page.locator("#ai-log details[data-id=t1] summary").click()
    assert _facts(page.locator(".ai-review"))["Label read"] == "SUPPORTS"
    assert not page.problems, page.problems
    assert axe.on(page) == []
