"""The site in a real headless Chromium (Debian's /usr/bin/chromium, driven by Playwright):
pages load without console errors, navigation works, live editing recomputes the verdict in the
browser. Screenshots go to test-artifacts/ (gitignored).

The server is uvicorn in a thread on 127.0.0.1 (conftest ``web_server``). Nothing is fetched
from the internet: requests to any other host are aborted and fail the test.
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlparse

import numpy as np
import pytest

from claimtrace.constants import LABELS, MAX_LEN
from claimtrace.course import NOTEBOOK_URL, WALKTHROUGH_CLAIM
from tests.web.conftest import ARTIFACTS

pytestmark = pytest.mark.browser


@pytest.fixture()
def page(browser, web_server):
    """A fresh page that records console errors, page errors and any request off 127.0.0.1."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.problems = []
    host = urlparse(web_server).netloc

    def on_console(message):
        if message.type in ("error", "warning"):
            page.problems.append(f"console {message.type}: {message.text}")

    def on_request(route):
        url = urlparse(route.request.url)
        if url.scheme in ("data", "blob", "file") or url.netloc == host:
            route.continue_()
        else:
            page.problems.append(f"off-site request: {route.request.url}")
            route.abort()

    page.on("console", on_console)
    page.on("pageerror", lambda error: page.problems.append(f"page error: {error}"))
    page.route("**/*", on_request)
    yield page
    context.close()


def _shot(page, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=False)


def test_walkthrough_explore_and_another_claim(page, web_server, demo_site_data):
    page.goto(web_server + "/walkthrough.html", wait_until="load")
    assert "most expensive electricity" in page.locator("h1").inner_text()
    for stage in ("preprocess", "tags", "vectors", "filter", "retrieved", "input", "model", "quirk", "verdict"):
        assert page.locator(f"section#{stage}").is_visible()
    _shot(page, "walkthrough-top")
    page.locator("section#verdict").scroll_into_view_if_needed()
    _shot(page, "walkthrough-verdict")

    page.click("header nav >> text=Explore")
    page.wait_for_url("**/explore/dev.html")
    rows = page.locator("#claims-table tbody tr")
    assert rows.count() == 100 and page.locator("#f-count").inner_text().startswith("154 of 154")
    _shot(page, "explore-dev")

    # filters and sorting run in the page, over every claim; a page of 100 rows is drawn
    page.select_option("#f-fallback", "yes")
    fallbacks = sum(r["fallback"] for r in demo_site_data.build.retrieval("dev").values())
    assert page.locator("#claims-table tbody tr").count() == min(fallbacks, 100)
    assert page.locator("#f-count").inner_text().startswith(f"{fallbacks} of 154")
    assert all(r.get_attribute("data-fallback") == "yes" for r in rows.all())
    page.click("#page-next")
    assert page.locator("#claims-table tbody tr").count() == fallbacks - 100
    page.select_option("#f-fallback", "")
    page.fill("#f-text", "greenland")
    visible = page.locator("#claims-table tbody tr")
    assert 1 <= visible.count() < 100
    page.fill("#f-text", "")
    page.click("#claims-table thead th[data-key=f]")
    page.click("#claims-table thead th[data-key=f]")  # descending
    first_f = float(page.locator("#claims-table tbody tr").first.get_attribute("data-f"))
    assert first_f == max(float(r.get_attribute("data-f")) for r in page.locator("#claims-table tbody tr").all())

    # open another claim from the table, then a batch neighbour from its verdict
    target = page.locator("#claims-table tbody tr").nth(5)
    claim_id = target.get_attribute("data-id")
    target.locator("a").first.click()
    page.wait_for_url(f"**/claim/{claim_id}.html")
    assert claim_id in page.locator(".claim-head .cid").inner_text()
    neighbour = page.locator("ul.neighbours a").first
    neighbour_id = neighbour.inner_text()
    neighbour.click()
    page.wait_for_url(f"**/claim/{neighbour_id}.html")
    assert page.locator("section#verdict .verdict").first.is_visible()
    _shot(page, "another-claim")
    page.go_back()
    page.wait_for_url(f"**/claim/{claim_id}.html")
    assert not page.problems, page.problems


def _verdict_changer(site_data) -> str:
    """A model input whose claim-alone verdict differs from claim-752's: one vocabulary word
    repeated to fill the input (found with the table, so it holds for any checkpoint)."""
    classifier = site_data.build.classifier()
    original = site_data.trace(WALKTHROUGH_CLAIM)["classifier"]["alone"]["verdict"]
    vocab = classifier.vocab.tokens
    for token_id in range(4, len(vocab)):
        ids = [1] + [token_id] * (MAX_LEN - 2) + [2]
        if LABELS[int(np.argmax(classifier.table.logits(np.array(ids))))] != original:
            return " ".join([vocab[token_id]] * (MAX_LEN - 2))
    pytest.fail("no single word changes claim-752's verdict with this checkpoint")


def test_live_editing_changes_the_verdict_in_the_browser(page, web_server, demo_site_data):
    page.goto(web_server + "/live.html", wait_until="load")
    page.wait_for_selector("body[data-editor=ready]", timeout=30_000)
    server = demo_site_data.trace(WALKTHROUGH_CLAIM)["classifier"]["alone"]
    shown = page.locator("#editor-out .verdict").first.inner_text()
    assert shown == server["verdict"]
    computed = page.evaluate("window.claimtrace.recompute()")
    assert np.abs(np.array(computed["logits"]) - server["logits"]).max() < 1e-6
    _shot(page, "live-before")

    requests = []
    page.on("request", lambda request: requests.append(request.url))
    changer = _verdict_changer(demo_site_data)
    page.fill("#model-input", changer)
    new = page.locator("#editor-out .verdict").first.inner_text()
    assert new != server["verdict"] and new in LABELS
    assert "changed" in page.locator("#editor-out").inner_text()
    assert requests == []  # recomputed in the browser, no server call
    page.click("#reset-input")
    assert page.locator("#editor-out .verdict").first.inner_text() == server["verdict"]

    # unknown words become <unk>; the input is cut at 128 tokens
    result = page.evaluate("window.claimtrace.recompute('zzzunknownword ' + 'warm '.repeat(300))")
    assert result["unknown"] == 1 and result["real"] == MAX_LEN and result["pads"] == 0
    assert not page.problems, page.problems


#: What the page's compute returns for one model input, kept to what explain_input also gives.
_COMPUTE_EVERY_CLAIM = """async (claims) => {
    const tables = window.claimtrace.table;
    const table = await tables.load();
    return claims.map((claim) => {
        const r = tables.compute(table, claim.ids, tables.words(claim.text));
        return {
            logits: r.logits, verdict: r.verdict, real: r.real, pads: r.padding.count,
            positions: r.tokens.map((t) => t.position), ids: r.tokens.map((t) => t.id),
            shares: r.tokens.map((t) => t.share), padding: r.padding.share, words: r.wordsTotal,
        };
    });
}"""


def test_the_pages_compute_gives_explain_inputs_numbers(page, web_server, demo_site_data):
    """The editor's arithmetic (compute, app-table.js) run in the page over every dev claim's
    128 ids: explain_input's logits, every token's, the padding's and the words' shares within
    1e-6 (the page sums the float32 table in float64, the server the float64 table) and its
    verdicts exactly."""
    from claimtrace.explain.verdict import explain_input

    build = demo_site_data.build
    classifier, encoded, verdicts = build.classifier(), build.inputs("dev", "retrieved"), build.verdicts("dev")
    claims = [{"ids": ids.tolist(), "text": text} for ids, text in zip(encoded.input_ids, encoded.texts, strict=True)]
    page.goto(web_server + "/live.html", wait_until="load")
    computed = page.evaluate(_COMPUTE_EVERY_CLAIM, claims)

    assert len(computed) == len(encoded) == 154
    logits, shares = [], []
    for claim_id, claim, mine in zip(encoded.claim_ids, claims, computed, strict=True):
        stored = verdicts[claim_id]["retrieved"]["alone"].get("torch_logits")
        server = explain_input(classifier, claim["ids"], claim["text"], stored)
        parts = server["contributions"]
        assert mine["verdict"] == server["alone"]["verdict"], claim_id
        assert (mine["real"], mine["pads"]) == (server["real_tokens"], server["pad_tokens"]), claim_id
        assert mine["positions"] == [t["position"] for t in parts["tokens"]], claim_id
        assert mine["ids"] == [t["id"] for t in parts["tokens"]], claim_id
        logits.append(np.subtract(mine["logits"], server["alone"]["logits"]))
        shares.append(np.subtract(mine["shares"], [t["contribution"] for t in parts["tokens"]]).ravel())
        shares.append(np.subtract(mine["padding"], parts["padding"]["contribution"]))
        shares.append(np.subtract(mine["words"], parts["words_total"]))
    assert np.abs(np.concatenate(logits)).max() < 1e-6
    assert np.abs(np.concatenate(shares)).max() < 1e-6
    assert not page.problems, page.problems


def test_typing_a_claim_traces_it_through_the_server(page, web_server, preprocessor):
    text = 'Greenland is <b>gaining</b> ice & "cooling"'
    page.goto(web_server + "/live.html", wait_until="load")
    page.fill("#claim-text", text)
    with page.expect_navigation():
        page.click(".claim-form button")
    page.wait_for_selector("body[data-editor=ready]", timeout=30_000)
    assert page.locator(".live-trace .claim-text").inner_text() == '“Greenland is <b>gaining</b> ice & "cooling"”'
    assert page.locator(".live-trace section#filter").is_visible()
    assert page.locator("#model-input").input_value().startswith(preprocessor.preprocess(text).text() + " ")
    _shot(page, "live-typed")
    assert not page.problems, page.problems


def test_unknown_claim_page_in_the_browser(page, web_server):
    response = page.goto(web_server + "/claim/claim-424242.html")
    assert response.status == 404
    assert "no claim “claim-424242”" in page.locator("main").inner_text()
    page.click("text=Explore every claim")
    page.wait_for_url("**/explore/dev.html")
    # only the expected 404 of the first navigation was logged
    assert all("404" in problem for problem in page.problems), page.problems


def test_static_site_works_from_files(page, demo_site_data, tmp_path):
    """`claimtrace site` output opened straight from disk (file://): relative links, the
    editor working from the table embedded in live.html."""
    from claimtrace.web.site import write_site

    out = tmp_path / "site"
    write_site(None, out, site_data=demo_site_data, splits=("dev",), limit=3)
    page.goto((out / "walkthrough.html").as_uri())
    assert "most expensive electricity" in page.locator("h1").inner_text()
    page.click("header nav >> text=Explore")
    page.wait_for_url("**/explore/dev.html")
    assert page.locator("#f-count").inner_text().startswith("154 of 154")
    page.select_option("#f-fallback", "yes")
    assert not page.locator("#f-count").inner_text().startswith("154 of")
    page.click("header nav >> text=Live")
    page.wait_for_url("**/live.html")
    page.wait_for_selector("body[data-editor=ready]", timeout=30_000)
    assert page.locator("#claim-text").is_disabled() and "needs the server" in page.locator(".live-head").inner_text()
    before = page.locator("#editor-out .verdict").first.inner_text()
    page.fill("#model-input", _verdict_changer(demo_site_data))
    assert page.locator("#editor-out .verdict").first.inner_text() != before
    _shot(page, "static-live")
    assert not page.problems, page.problems


def test_course_figures_beside_the_builds_on_claim_752(page, web_server, demo_site_data):
    page.goto(web_server + "/walkthrough", wait_until="load")
    pairs = page.locator("section#filter .vs")
    assert pairs.count() >= 3
    texts = [pairs.nth(i).inner_text() for i in range(pairs.count())]
    passed = demo_site_data.trace(WALKTHROUGH_CLAIM)["retrieval"]["passed"]
    assert any("course run 8" in t and f"this build {passed}" in t for t in texts), texts
    assert page.locator("section#input .vs").first.inner_text().startswith("course run 37")
    assert "course run 167,592" in page.locator("section#tags .quirk").inner_text()
    page.locator("section#filter .pairs").last.scroll_into_view_if_needed()
    _shot(page, "course-pairs-claim-752")
    page.goto(web_server + "/explore/dev.html", wait_until="load")
    assert "0.04299" in page.locator("#table2").inner_text()
    assert "89/154" in page.locator("#course-figures").inner_text()
    page.locator("#course-figures").scroll_into_view_if_needed()
    _shot(page, "course-figures-explore")
    assert not page.problems, page.problems


def test_missed_gold_rows_on_claim_375(page, web_server, demo_site_data):
    page.goto(web_server + "/claim/claim-375.html", wait_until="load")
    missed = demo_site_data.trace("claim-375")["retrieval"]["missed_gold"]
    rows = page.locator("#missed-gold tbody tr")
    assert rows.count() == len(missed) > 0
    for i, row in enumerate(missed):
        text = rows.nth(i).inner_text()
        assert row["id"] in text and row["why"] in text
        assert all(tag in text for tag in row["tags"])
    tags = page.locator("#passage-tags .tok")
    assert tags.count() == 7  # the seven tags behind "2 ÷ min(13, 7)"
    page.locator("#missed-gold").scroll_into_view_if_needed()
    _shot(page, "missed-gold-claim-375")
    assert not page.problems, page.problems


@pytest.mark.parametrize(
    "path",
    [
        "/",
        "/walkthrough.html",
        "/claim/claim-375.html",
        "/explore/dev.html",
        "/explore/train.html",
        "/live.html",
        "/tour.html",
        "/methods/assumptions.html",
        "/nowhere.html",
    ],
)
def test_nothing_scrolls_sideways_at_390_px(browser, web_server, path):
    context = browser.new_context(viewport={"width": 390, "height": 844})
    page = context.new_page()
    try:
        page.goto(web_server + path, wait_until="load")
        width = page.evaluate("document.documentElement.scrollWidth")
        assert width <= 390, f"{path} is {width} px wide at 390 px"
        ARTIFACTS.mkdir(exist_ok=True)
        name = path.strip("/").replace("/", "-").replace(".html", "") or "index"
        page.screenshot(path=str(ARTIFACTS / f"390-{name}.png"), full_page=False)
    finally:
        context.close()


def test_static_export_walked_link_by_link_from_files(page, demo_site_data, tmp_path):
    """A `--limit` export from file://: every link of every page reached from the front page
    leads to a written file (links to what was not exported are disabled and marked), and the
    live page shows a non-default claim's own model input and verdict."""
    from urllib.parse import unquote

    from claimtrace.web.site import write_site

    out = tmp_path / "site"
    write_site(None, out, site_data=demo_site_data, limit=2)
    start = (out / "index.html").as_uri()
    seen, queue = {start}, [start]
    while queue:
        url = queue.pop()
        page.goto(url, wait_until="load")
        # the one link off the site: the original notebook on GitHub, marked rel="external"
        outside = page.eval_on_selector_all('a[rel~="external"]', "links => links.map(a => a.href)")
        assert set(outside) <= {NOTEBOOK_URL}, (url, outside)
        hrefs = page.eval_on_selector_all('a[href]:not([rel~="external"])', "links => links.map(a => a.href)")
        for href in hrefs:
            target = href.split("#")[0].split("?")[0]
            assert target.startswith("file://"), (url, href)
            path = Path(unquote(urlparse(target).path))
            assert path.is_file(), (url, href)
            if path.suffix == ".html" and target not in seen:
                seen.add(target)
                queue.append(target)
        disabled = page.locator("a[aria-disabled=true]")
        if disabled.count():
            assert page.locator(".export-note").count() == 1 and "--json" in page.locator(".export-note").inner_text()
        if "/claim/" in url:  # the verdict's charts, drawn from static/table.js
            page.wait_for_selector("body[data-charts=ready]", timeout=30_000)
            claim_id = Path(urlparse(url).path).stem
            real = demo_site_data.trace(claim_id)["classifier"]["real_tokens"]
            assert page.locator("#static-charts-out table.chart.tokens tbody tr").count() >= real
            # the charts carry no verdict line of their own (section 9 gives it, per protocol)
            assert page.locator("#static-charts-out .verdict").count() == 0
            assert (
                page.locator("#static-charts-out table.chart.sum tr.win th").inner_text()
                == (demo_site_data.trace(claim_id)["classifier"]["alone"]["verdict"])
            )
    written = {p.as_uri() for p in out.rglob("*.html")}
    assert seen == written - {(out / "404.html").as_uri()}, written - seen

    claim_id = next(
        p.stem
        for p in sorted((out / "claim").glob("*.html"))
        if p.stem != WALKTHROUGH_CLAIM and p.stem in demo_site_data.claims("train")
    )
    trace = demo_site_data.trace(claim_id)
    page.goto((out / "live.html").as_uri() + f"?claim={claim_id}")
    page.wait_for_selector("body[data-editor=ready]", timeout=30_000)
    assert page.locator("#model-input").input_value() == trace["classifier"]["text"]
    assert page.locator("[data-live-claim]").first.inner_text() == claim_id
    assert page.locator("#claim-text").input_value() == trace["claim"]["text"]
    assert page.locator("#editor-out .verdict").first.inner_text() == trace["classifier"]["alone"]["verdict"]
    assert page.locator("#live-trace").is_hidden()
    assert page.locator("#live-other-claim a").get_attribute("href").endswith(f"claim/{claim_id}.html")
    _shot(page, "static-live-other-claim")
    assert not page.problems, page.problems


def test_static_claim_page_shows_what_the_servers_shows(page, web_server, demo_site_data, tmp_path):
    """A static claim page from file:// (its repeated parts put back from static/shared-dev.js,
    its model input written from the table) shows the server's text, stage by stage."""
    from claimtrace.web.site import write_site

    out = tmp_path / "site"
    write_site(None, out, site_data=demo_site_data, splits=("dev",), limit=3)
    assert list(demo_site_data.claims("dev"))[:2] == [WALKTHROUGH_CLAIM, "claim-375"]
    parts = [
        "header.top",
        ".claim-head h1",
        "nav.toc",
        *(f"section#{stage}" for stage in ("preprocess", "tags", "vectors", "filter", "retrieved", "input")),
        "section#model",
        "section#quirk",
        "section#verdict .verdicts",
        "section#verdict table.logits",
        "section#fixes",
        "footer",
    ]

    def texts() -> list[str]:
        return [page.locator(selector).first.inner_text() for selector in parts]

    page.goto(web_server + "/claim/claim-375.html", wait_until="load")
    served = texts()
    page.goto((out / "claim" / "claim-375.html").as_uri(), wait_until="load")
    page.wait_for_selector("body[data-charts=ready]", timeout=30_000)
    assert page.locator("template[data-shared]").count() == 0
    assert texts() == served
    assert not page.problems, page.problems


def test_explore_filters_and_sort_live_in_the_url(page, web_server):
    page.goto(web_server + "/explore/dev.html", wait_until="load")
    page.select_option("#f-fallback", "yes")
    page.click("#claims-table thead th[data-key=f]")
    page.click("#claims-table thead th[data-key=f]")  # descending
    assert "fallback=yes" in page.url and "sort=f" in page.url and "dir=desc" in page.url
    shown = page.locator("#claims-table tbody tr:visible").count()
    first = page.locator("#claims-table tbody tr:visible").first.get_attribute("data-id")
    page.goto(page.url, wait_until="load")  # the shared link gives the same view
    assert page.locator("#f-fallback").input_value() == "yes"
    assert page.locator("#claims-table tbody tr:visible").count() == shown
    assert page.locator("#claims-table tbody tr:visible").first.get_attribute("data-id") == first
    assert page.locator("th[data-key=f]").get_attribute("aria-sort") == "descending"
    assert not page.problems, page.problems


def test_live_form_is_a_share_link_and_stale_results_are_marked(page, web_server, demo_site_data):
    """The claim form is a GET: after tracing, the address bar traces the same text again on
    reload. While the box holds another text, the results below are marked stale; the editor's
    live region announces one line, not the tables."""
    text = "Arctic sea ice is growing"
    page.goto(web_server + "/live.html", wait_until="load")
    page.wait_for_selector("body[data-editor=ready]", timeout=30_000)
    summary = page.locator("#editor-summary")
    assert summary.get_attribute("aria-live") == "polite" and page.locator("#editor-out[aria-live]").count() == 0
    verdict = demo_site_data.trace(WALKTHROUGH_CLAIM)["classifier"]["alone"]["verdict"]
    assert summary.inner_text().startswith(f"Claim alone: {verdict}") and "\n" not in summary.inner_text()
    assert page.locator("#stale-note").is_hidden() and page.locator("#live-trace[data-stale]").count() == 0
    page.fill("#claim-text", text)
    assert page.locator("#stale-note").is_visible()
    assert page.locator("#live-trace[data-stale]").count() == 1 and page.locator("#editor[data-stale]").count() == 1
    with page.expect_navigation():
        page.click(".claim-form button")
    assert "text=Arctic+sea+ice+is+growing" in page.url
    page.wait_for_selector("body[data-editor=ready]", timeout=30_000)
    assert page.locator("#stale-note").is_hidden() and page.locator("#live-trace[data-stale]").count() == 0
    assert page.locator(".live-trace .claim-text").inner_text() == f"“{text}”"
    page.reload(wait_until="load")  # a reload traces again, no form to resubmit
    assert page.locator(".live-trace .claim-text").inner_text() == f"“{text}”"
    assert page.locator("#share-link").get_attribute("href").endswith("text=Arctic%20sea%20ice%20is%20growing")
    assert not page.problems, page.problems


def test_a_page_being_built_shows_itself_once_the_build_has_written_it(browser, axe, demo_build, tmp_path, monkeypatch):
    """`serve --while-building` in Chromium: /results while the build holds the workdir is
    "Being built"; while it still is, the page asks again (every second here, 5 s as served) and
    takes the new answer's message in place, with no reload; once the sweep is written and the
    build has let go, it reloads itself into the results. axe-core passes on the waiting page at
    both widths; screenshots of the
    waiting page at 1280 and 390 px go to test-artifacts/."""
    from claimtrace.web import app as app_module
    from claimtrace.web.app import create_app
    from claimtrace.workdir.builder import workdir_lock
    from tests.web.conftest import serving
    from tests.web.test_app import _partial_copy

    monkeypatch.setattr(app_module, "BEING_BUILT_REFRESH", 1)
    partial = _partial_copy(demo_build, tmp_path / "work", ("sweep", "scoreboard.json", "manifest.json"))
    ARTIFACTS.mkdir(exist_ok=True)
    with serving(create_app(partial)) as base:
        context = browser.new_context(viewport={"width": 1280, "height": 900})
        page = context.new_page()
        errors = []
        page.on("pageerror", lambda error: errors.append(str(error)))
        try:
            with workdir_lock(partial.work):
                page.goto(base + "/results", wait_until="load")
                assert page.locator("body[data-page=error] [data-reload-while='503']").count() == 1
                assert "Being built" in page.locator("h1").inner_text()
                page.screenshot(path=str(ARTIFACTS / "being-built-1280.png"), full_page=True)
                page.set_viewport_size({"width": 390, "height": 844})
                page.screenshot(path=str(ARTIFACTS / "being-built-390.png"), full_page=True)
                for width in (1280, 390):  # the error page's type, as it waits: axe-core at both widths
                    assert not axe.violations(base + "/results", width), width
                page.evaluate("window.sameDocument = true; document.querySelector('h1').dataset.asked = 'not yet'")
                page.wait_for_timeout(1_500)  # asked again meanwhile: still being built, no reload...
                assert page.evaluate("window.sameDocument === true") and page.locator("body[data-page=error]").count()
                assert page.locator("h1[data-asked]").count() == 0  # ...its message taken from the new answer
                for name in ("sweep", "scoreboard.json"):
                    (partial.root / name).symlink_to(demo_build.root / name)
            page.wait_for_selector("body[data-page=results]", timeout=15_000)
        finally:
            context.close()
    assert not errors, errors
