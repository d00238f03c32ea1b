"""The site's front door: the landing page at ``/`` (the walkthrough at its own address), every
page's favicon, description and preview picture (``og:image``), served and exported; the verdict's
softmax; the live page's example claims, Ctrl+Enter and busy state; Explore's empty result; the
header's menu button at 390 px. Browser tests are marked ``browser`` (Chromium, as tests/web/).
"""

from __future__ import annotations

import re
import struct
from html import unescape
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import urljoin, urlparse

import numpy as np
import pytest

from claimtrace.constants import LABELS
from claimtrace.course import WALKTHROUGH_CLAIM
from claimtrace.evaluation.significance import verdicts_paired
from claimtrace.explain.confidence import softmax
from claimtrace.web.previews import PREVIEW_SIZE, site_card, verdict_card
from tests.web.conftest import ARTIFACTS

#: One page of each kind, served: each must carry a favicon, a description and a preview.
SERVED = [
    "/",
    "/walkthrough",
    "/walkthrough.html",
    "/claim/claim-871.html",
    "/explore/dev.html",
    "/live.html",
    "/live.html?text=Greenland+is+gaining+ice",
    "/parity.html",
    "/results.html",
    "/methods.html",
    "/methods/limitations.html",
    "/tour.html",
    "/seeds.html",
    "/compare/index.html",
    "/evaluation.html",
    "/nowhere.html",
]


class Head(HTMLParser):
    """A page's <link rel=icon>, <meta name|property=...> and its first <p class="lead">."""

    def __init__(self):
        super().__init__()
        self.icon: str | None = None
        self.meta: dict[str, str] = {}
        self.h1 = ""
        self.lead = ""
        self._in: str | None = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "link" and a.get("rel") == "icon":
            self.icon = a.get("href")
        elif tag == "meta" and ("name" in a or "property" in a):
            self.meta[a.get("name") or a["property"]] = a.get("content", "")
        elif tag == "h1" and not self.h1:
            self._in = "h1"
        elif tag == "p" and a.get("class") == "lead" and not self.lead:
            self._in = "lead"

    def handle_endtag(self, tag):
        if (tag, self._in) in (("h1", "h1"), ("p", "lead")):
            self._in = None

    def handle_data(self, data):
        if self._in == "h1":
            self.h1 += data
        elif self._in == "lead":
            self.lead += data


def head_of(html: str) -> Head:
    parsed = Head()
    parsed.feed(html)
    return parsed


def png_size(body: bytes) -> tuple[int, int]:
    assert body[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", body[16:24])


# --- the landing page and the walkthrough's own address ----------------------------------------------


def test_root_is_the_landing_page_and_the_walkthrough_keeps_claim_752(web_client, demo_site_data):
    landing = web_client.get("/").text
    assert 'data-page="home"' in landing and 'id="findings"' in landing and 'id="doors"' in landing
    for link in ('href="walkthrough.html"', 'href="compare/index.html"', 'href="explore/dev.html"', 'href="tour.html"'):
        assert link in landing, link
    assert web_client.get("/index.html").text == landing
    twin = web_client.get("/index.json").json()
    assert twin == demo_site_data.landing() and twin["findings"]["status"] == "ok"
    for path in ("/walkthrough", "/walkthrough.html"):
        page = web_client.get(path).text
        assert f"{WALKTHROUGH_CLAIM}: one claim through every stage" in page and 'id="verdict"' in page
    assert web_client.get("/walkthrough.json").json()["claim"]["id"] == WALKTHROUGH_CLAIM
    # every page's brand goes home, and the navigation's first link to the walkthrough
    page = web_client.get("/claim/claim-871.html").text
    assert '<a class="brand" href="../index.html">' in page and '<a href="../walkthrough.html"' in page


def test_landing_lead_is_two_short_sentences(web_client):
    lead = " ".join(head_of(web_client.get("/").text).lead.split())
    sentences = [s for s in re.split(r"(?<=\.)\s+", lead) if s]
    assert len(sentences) == 2, sentences
    assert len(lead.split()) <= 60 and all(len(s.split()) <= 40 for s in sentences)


def test_findings_are_the_builds_figures_with_intervals_and_paired_tests(web_client, demo_build):
    findings = web_client.get("/index.json").json()["findings"]["items"]
    assert [f["key"] for f in findings] == ["majority", "alone", "gold", "bm25"]
    board = demo_build.scoreboard()
    claims = demo_build.claims("dev")
    majority = next(b for b in board["baselines"] if b["name"].startswith("baseline:always-"))
    notebook = board["rows"][0]
    assert notebook["name"] == "notebook+notebook+notebook"
    first = findings[0]
    assert first["other"]["successes"] == round(majority["A"] * len(claims))
    assert first["notebook"]["successes"] == round(notebook["A"] * len(claims))
    assert (
        first["test"]["p"] == majority["paired"]["p_holm"] and first["test"]["verdict"] == majority["paired"]["verdict"]
    )
    gold = verdicts_paired(
        claims,
        demo_build.verdict_of("dev", "notebook", "gold", "notebook"),
        demo_build.verdict_of("dev", "notebook", "retrieved", "notebook"),
    )
    assert findings[2]["test"]["p"] == gold["p"]
    page = web_client.get("/").text
    for f in findings:
        assert f["other"]["lower"] <= f["other"]["estimate"] <= f["other"]["upper"]
        assert f["sentence"].endswith(("more than chance.", "cannot be told apart."))
        assert "95% interval" in f["sentence"] and f["test"]["name"] in f["test"]["text"]
        item = unescape(re.search(rf'<li id="finding-{f["key"]}"[^>]*>(.*?)</li>', page, re.S).group(1))
        assert item == f'{f["sentence"]} <small class="muted test">{f["test"]["text"]}.</small>'

    label = majority["name"].removeprefix("baseline:always-")
    assert findings[0]["sentence"].startswith(
        f"Of the {len(claims)} dev claims, always answering {label} gets {first['other']['successes']} right ("
    )


# --- every page's favicon, description and preview picture --------------------------------------------


@pytest.mark.parametrize("path", SERVED)
def test_every_served_page_has_a_favicon_a_description_and_a_preview_that_resolve(web_client, path):
    answer = web_client.get(path)
    head = head_of(answer.text)
    assert head.meta.get("description") and head.meta["og:description"] == head.meta["description"]
    assert head.meta["twitter:card"] == "summary_large_image" and head.meta["og:title"]
    base = "http://testserver" + urlparse(path).path
    icon = web_client.get(urljoin(base, head.icon))
    assert icon.status_code == 200 and icon.headers["content-type"] == "image/svg+xml" and b"<svg" in icon.content
    picture = web_client.get(urljoin(base, head.meta["og:image"]))
    assert picture.status_code == 200 and picture.headers["content-type"] == "image/png"
    assert png_size(picture.content) == PREVIEW_SIZE
    assert head.meta["twitter:image"] == head.meta["og:image"]
    claim = re.search(r"claim-\d+", path) or (re.search("walkthrough", path) and WALKTHROUGH_CLAIM)
    if claim:  # a claim's page shows its own verdict card
        expected = claim if isinstance(claim, str) else claim.group(0)
        assert head.meta["og:image"].endswith(f"preview/{expected}.png")


def test_preview_pictures_are_the_same_bytes_each_time_and_small(web_client, demo_site_data):
    trace = demo_site_data.trace("claim-871")
    card = verdict_card(trace)
    assert card == verdict_card(trace) and card == web_client.get("/preview/claim-871.png").content
    assert site_card(demo_site_data.landing()) == web_client.get("/preview/index.png").content
    assert len(card) < 12_000, len(card)
    assert web_client.get("/preview/claim-999999.png").status_code == 404
    assert web_client.get("/preview/nothing.gif").status_code == 404


@pytest.fixture(scope="module")
def exported(demo_site_data, tmp_path_factory) -> Path:
    from claimtrace.web.site import write_site

    out = tmp_path_factory.mktemp("front-door-site")
    write_site(None, out, site_data=demo_site_data, splits=("dev",), only=("claim-871",))
    return out


def test_every_exported_page_has_a_favicon_a_description_and_a_preview_that_resolve(exported, web_client):
    pages = [p for p in exported.rglob("*.html")]
    assert {"index.html", "walkthrough.html", "live.html"} <= {p.name for p in pages}
    for page in pages:
        head = head_of(page.read_text(encoding="utf-8"))
        assert head.meta.get("description"), page
        icon = (page.parent / head.icon).resolve()
        assert icon.is_file() and b"<svg" in icon.read_bytes(), page
        picture = (page.parent / head.meta["og:image"]).resolve()
        assert picture.is_file() and png_size(picture.read_bytes()) == PREVIEW_SIZE, page
    # the same pictures as the server's, and the landing's words as served
    for name in ("index", WALKTHROUGH_CLAIM, "claim-871"):
        assert (exported / "preview" / f"{name}.png").read_bytes() == web_client.get(f"/preview/{name}.png").content
    exported_findings = re.findall(r'<li id="finding-[^"]+"[^>]*>(.*?)</li>', (exported / "index.html").read_text())
    served_findings = re.findall(r'<li id="finding-[^"]+"[^>]*>(.*?)</li>', web_client.get("/").text)
    assert exported_findings == served_findings and len(served_findings) == 4


# --- the verdict's softmax --------------------------------------------------------------------------


def test_softmax_is_one_implementation_shown_beside_the_logits(web_client, demo_site_data):
    shares = softmax([1.0, 2.0, 3.0, 1000.0])
    assert np.isclose(sum(shares), 1.0) and np.argmax(shares) == 3 and all(np.isfinite(shares))
    trace = web_client.get("/claim/claim-871.json").json()
    for protocol in ("alone", "notebook"):
        got = trace["classifier"][protocol]
        assert got["softmax"] == softmax(got["logits"])
        assert LABELS[int(np.argmax(got["softmax"]))] == got["verdict"]
    page = web_client.get("/claim/claim-871.html").text
    row = re.search(r'<tr class="softmax"><th class="l">alone, softmax</th>(.*?)</tr>', page).group(1)
    assert re.findall(r">(\d+\.\d)%<", row) == [f"{100 * v:.1f}" for v in trace["classifier"]["alone"]["softmax"]]
    assert "not a probability that the claim is true" in page


# --- the live page's example claims -------------------------------------------------------------------


def test_live_page_offers_one_dev_claim_per_label_picked_from_the_build(web_client, demo_site_data):
    examples = demo_site_data.example_claims()
    claims = demo_site_data.claims("dev")
    assert [e["label"] for e in examples] == [
        label for label in LABELS if any(c.label == label for c in claims.values())
    ]
    alone = demo_site_data.build.verdict_of("dev", "notebook", "retrieved", "alone")
    for example in examples:
        assert claims[example["claim_id"]].label == example["label"]
        right = [cid for cid, c in claims.items() if c.label == example["label"] and alone[cid] == c.label]
        assert example["claim_id"] == (
            right[0] if right else next(cid for cid, c in claims.items() if c.label == example["label"])
        )
    page = web_client.get("/live.html").text
    for example in examples:
        assert f'href="live.html?claim={example["claim_id"]}"' in page


# --- in Chromium ----------------------------------------------------------------------------------------


@pytest.fixture()
def narrow(browser):
    context = browser.new_context(viewport={"width": 390, "height": 844})
    yield context.new_page()
    context.close()


@pytest.mark.browser
def test_menu_button_opens_the_navigation_at_390_px(narrow, web_server):
    page = narrow
    page.goto(web_server + "/", wait_until="load")
    button = page.locator("header .menu-button")
    nav = page.locator("#site-nav")
    assert button.is_visible() and button.get_attribute("aria-controls") == "site-nav"
    assert button.get_attribute("aria-expanded") == "false" and not nav.is_visible()
    button.focus()
    page.keyboard.press("Enter")
    assert button.get_attribute("aria-expanded") == "true" and nav.is_visible()
    assert page.locator("#site-nav a", has_text="Explore").is_visible()
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "front-door-menu-390.png"))
    page.keyboard.press("Tab")
    page.keyboard.press("Escape")
    assert button.get_attribute("aria-expanded") == "false" and not nav.is_visible()
    assert page.evaluate("document.activeElement.classList.contains('menu-button')")
    button.click()
    page.locator("#site-nav a", has_text="Explore").click()
    page.wait_for_url("**/explore/dev.html")
    # the header stays at the top while the page scrolls
    page.mouse.wheel(0, 2000)
    page.wait_for_timeout(200)
    assert page.locator("header.top").bounding_box()["y"] == 0


@pytest.mark.browser
def test_wide_header_shows_the_navigation_without_a_button(browser, web_server):
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.goto(web_server + "/", wait_until="load")
    assert not page.locator("header .menu-button").is_visible() and page.locator("#site-nav").is_visible()
    context.close()


@pytest.mark.browser
def test_live_page_example_claims_and_ctrl_enter_trace_a_claim(browser, web_server, demo_site_data):
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.goto(web_server + "/live.html", wait_until="load")
    example = demo_site_data.example_claims()[-1]
    page.locator(f'a.example[data-claim="{example["claim_id"]}"]').click()
    page.wait_for_url(f"**/live.html?claim={example['claim_id']}")
    assert example["claim_id"] in page.locator("#live-trace .trace-title").inner_text()
    box = page.locator("#claim-text")
    box.fill("Arctic sea ice is shrinking every decade")
    # the busy state is set before the page goes: watch for it as the form is sent
    page.evaluate(
        """() => { const form = document.querySelector('.claim-form');
        new MutationObserver(() => { sessionStorage.setItem('busy', form.getAttribute('aria-busy')); })
          .observe(form, { attributes: true, attributeFilter: ['aria-busy'] }); }"""
    )
    box.press("Control+Enter")
    page.wait_for_url("**/live.html?text=Arctic*")
    assert page.evaluate("sessionStorage.getItem('busy')") == "true"
    assert "your claim" in page.locator("#live-trace .trace-title").inner_text()
    assert page.locator("#live-trace #verdict").is_visible()
    context.close()


@pytest.mark.browser
def test_explore_says_when_no_claim_matches_and_resets(browser, web_server):
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.goto(web_server + "/explore/dev.html", wait_until="load")
    assert not page.locator("#no-match").is_visible()
    page.fill("#f-text", "no claim says zzzqqq")
    assert page.locator("#no-match").is_visible() and page.locator("#f-count").inner_text().startswith("0 of")
    page.locator("#filters-reset").click()
    assert not page.locator("#no-match").is_visible() and page.locator("#f-text").input_value() == ""
    assert page.locator("#f-count").inner_text().startswith("154 of 154")
    context.close()


@pytest.mark.browser
@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize("width", [1280, 390])
def test_axe_finds_nothing_on_the_exported_landing(axe, exported, width, scheme):
    """The served landing is in test_a11y.py (both widths, both themes); an exported claim page
    (the walkthrough's kind) too, at 1280 px."""
    found = axe.violations((exported / "index.html").as_uri(), width, scheme)
    assert found == [], found


@pytest.mark.browser
@pytest.mark.parametrize("width", [1280, 390])
def test_screenshots_of_the_landing_a_claim_and_the_live_page(browser, web_server, width):
    context = browser.new_context(viewport={"width": width, "height": 900})
    page = context.new_page()
    ARTIFACTS.mkdir(exist_ok=True)
    for name, path in (("landing", "/"), ("claim", "/claim/claim-871.html"), ("live", "/live.html")):
        page.goto(web_server + path, wait_until="load")
        page.screenshot(path=str(ARTIFACTS / f"front-door-{name}-{width}.png"), full_page=name == "landing")
    context.close()
