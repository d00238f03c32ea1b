"""claimtrace.web.views.methods: the methods page's documents hold no figure typed by hand, every
placeholder is filled from the build or the course's figures, and every chip that cites a step of
the notebook links to that step on the page and to the notebook's cells. The statements and the
decisions each have a page of their own (``methods/<slug>.html``), served and exported alike,
chained by their previous and next links and listed on the methods page."""

from __future__ import annotations

import html
import json
import re
from urllib.parse import urlparse

import pytest

from claimtrace import course
from claimtrace.web import markdown
from claimtrace.web.views.data_overview import MODELS
from claimtrace.web.views.methods import DATA_STATEMENT, STEPS_FILE, decisions, series_slugs, slug_of, statements

#: Numerals in the documents that are names, not figures: the course's code, years, the notebook's
#: file name, the report's tables, BM25, macro-F1, number formats and hashes.
NAMES = re.compile(r"COMP90042|Wed5PM_Group1|\b20(?:20|24|26)\b|Table [12]\b|BM25|macro-F1|float(?:16|32)|md5|sha256")
NUMBER = re.compile(r"\d")


def _documents() -> list[str]:
    return [STEPS_FILE, DATA_STATEMENT, *(model.card for model in MODELS), *statements(), *decisions()]


@pytest.mark.parametrize("relative", _documents())
def test_no_document_types_a_figure(relative):
    text = markdown.PLACEHOLDER.sub("", markdown.read(relative))
    typed = [line for line in NAMES.sub("", text).splitlines() if NUMBER.search(line)]
    assert typed == [], f"{relative}: a figure typed by hand (use a placeholder): {typed}"


@pytest.fixture(scope="module")
def page(web_client) -> dict:
    return web_client.get("/methods.json").json()


def _text(fragment: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", " ", fragment))


def test_every_number_on_the_documents_comes_from_the_figures(page):
    figures = page["figures"]
    rendered = [page["data_statement"], *page["models"]]
    rendered += [
        {"title": d["title"], "html": d["lead"] + d["html"]} for d in (*page["statements"], *page["decisions"])
    ]
    rendered += [{"title": step["heading"], "html": step["html"]} for step in page["steps"]]
    for document in rendered:
        text = NAMES.sub("", _text(document["html"]) + " " + document["title"])
        for value in sorted(figures.values(), key=len, reverse=True):  # the longest first: 0.253 (39/154, ...)
            text = text.replace(value, " ")
        assert not NUMBER.search(text), (document["title"], re.findall(r"\S*\d\S*", text))


def test_the_figures_are_the_builds(page, demo_site_data):
    figures, build = page["figures"], demo_site_data.build
    assert figures["dev_claims"] == f"{len(build.claims('dev')):,}"
    assert figures["passages"] == f"{build.build_record()['corpus']['passages']:,}"
    row = next(r for r in build.scoreboard()["rows"] if r["name"] == "notebook+notebook+notebook")
    a = row["intervals"]["A"]
    assert figures["notebook.A"].startswith(f"{a['estimate']:.3f} ({a['successes']}/{a['n']}, 95% Wilson interval")
    assert figures["notebook.never"] == "REFUTES and DISPUTED"
    assert (
        "more than chance" in figures["supports_vs_notebook"]
        or "cannot be told apart" in figures["supports_vs_notebook"]
    )


def test_every_model_has_a_card_and_the_steps_are_the_notebooks(page):
    assert [card["name"] for card in page["models"]] == [model.name for model in MODELS]
    assert all(card["title"].startswith("Model card:") for card in page["models"])
    assert [(s["number"], s["heading"], s["anchor"]) for s in page["steps"]] == [
        (step.number, step.title, step.anchor) for step in course.STEPS.values()
    ]
    assert len(page["decisions"]) >= 4 and all(d["title"].startswith("Decision:") for d in page["decisions"])
    assert [d["slug"] for d in page["statements"]] == ["assumptions", "limitations", "language-models"]
    assert all(d["lead"] and d["summary"] and not d["html"].startswith("<p>") for d in page["statements"])


def test_a_document_is_escaped_and_a_missing_figure_is_named():
    out = markdown.render("<script>alert(1)</script> **{{ x }}**\n\n## part", {"x": "<b>"}, "t.md", shift=1)
    assert "<script>" not in out and "&lt;script&gt;" in out and "&lt;b&gt;" in out and "<h3>part</h3>" in out
    with pytest.raises(markdown.MissingFigure, match=r"t\.md: no figure for the placeholder \{\{ y \}\}"):
        markdown.fill("{{ y }}", {}, "t.md")


CITED = re.compile(
    r'<a class="cite" href="([^"#]*)#([^"]+)">notebook\.md §(\d+)[^<]*</a> <a class="cite-cell" href="([^"]+)"'
)


@pytest.mark.parametrize("path", ["/walkthrough.html", "/explore/dev.html", "/parity.html"])
def test_every_chip_links_to_a_step_that_exists_and_to_the_notebook(web_client, path):
    methods = web_client.get("/methods.html").text
    page = web_client.get(path).text
    chips = CITED.findall(page)
    assert chips, path
    for target, anchor, number, cell_url in chips:
        assert target.endswith("methods.html") and anchor == course.STEPS[int(number)].anchor
        assert f'id="{anchor}"' in methods
        assert cell_url == course.NOTEBOOK_URL
    sources = re.findall(r'<small class="vs-source">(.*?)</small>', page)
    assert all("notebook.md §" not in s or 'class="cite"' in s for s in sources)


def test_the_page_is_served_and_exported_alike(web_client, demo_site_data, tmp_path):
    from claimtrace.web.site import write_site

    served = web_client.get("/methods.html").text
    assert web_client.get("/methods").text == served
    write_site(None, tmp_path, site_data=demo_site_data, splits=("dev",), only=("claim-752",))
    exported = (tmp_path / "methods.html").read_text(encoding="utf-8")
    main = lambda page: page[page.index("<main") : page.index("</main>")]  # noqa: E731
    assert main(served) == main(exported)
    assert (tmp_path / "methods.json").is_file()


# -- the statements and decisions, each at its own address -------------------------------------------

#: A link of a series page to its neighbour: (rel, the page it goes to).
NEIGHBOUR = re.compile(r'<a href="\.\./methods/([a-z-]+)\.html" rel="(prev|next)"')


def _main(page_html: str) -> str:
    return page_html[page_html.index("<main") : page_html.index("</main>")]


def test_each_document_has_an_address_named_after_its_file():
    slugs = series_slugs()
    assert slugs == [slug_of(f) for f in (*statements(), *decisions())] and len(set(slugs)) == len(slugs)
    assert slug_of("decisions/01-exact-tfidf-tags.md") == "exact-tfidf-tags"
    assert slugs[:3] == ["assumptions", "limitations", "language-models"]


def test_the_previous_and_next_links_chain_through_every_document(web_client):
    slugs = series_slugs()
    walked, slug = [], slugs[0]
    while slug is not None:
        page = web_client.get(f"/methods/{slug}.html")
        assert page.status_code == 200, slug
        walked.append(slug)
        links = dict((rel, target) for target, rel in NEIGHBOUR.findall(page.text))
        at = len(walked) - 1
        assert links.get("prev") == (slugs[at - 1] if at else None), slug
        assert '<a href="../methods.html#series">All statements and decisions</a>' in page.text
        assert 'data-page="methods"' in page.text  # the navigation marks Methods as the current section
        slug = links.get("next")
        assert len(walked) <= len(slugs)
    assert walked == slugs
    twin = web_client.get(f"/methods/{slugs[-1]}.json").json()
    assert twin["next"] is None and twin["previous"]["slug"] == slugs[-2] and twin["index"] == "methods.html#series"


def test_the_methods_page_lists_each_document_and_keeps_the_old_anchors(web_client, page):
    methods = web_client.get("/methods.html").text
    listed = re.findall(r'<li id="(?:statement|decision)-[^"]+"><a href="methods/([a-z-]+)\.html">', methods)
    assert listed == series_slugs()
    for decision in page["decisions"]:  # links to the decisions' old anchors still land on them
        assert f'id="decision-{decision["name"]}"' in methods
    assert 'id="decisions"' in methods and 'id="statements"' in methods and 'href="#series"' in methods


def test_a_document_page_is_its_twin_drawn(web_client, page):
    for kind, documents in (("statement", page["statements"]), ("decision", page["decisions"])):
        for number, doc in enumerate(documents, start=1):
            twin = web_client.get(f"/methods/{doc['slug']}.json").json()
            assert {key: twin[key] for key in doc} == doc
            assert (twin["kind"], twin["number"], twin["of"]) == (kind, number, len(documents))
            html_page = web_client.get(f"/methods/{doc['slug']}").text
            assert html_page == web_client.get(f"/methods/{doc['slug']}.html").text
            assert f"<h1>{html.escape(doc['title'], quote=False)}</h1>" in html_page.replace("&#39;", "'")
            assert f'<p class="lead">{doc["lead"]}</p>' in html_page
            description = re.search(r'<meta name="description" content="([^"]*)">', html_page).group(1)
            assert html.unescape(description) == doc["summary"]


def test_an_unknown_document_is_not_found(web_client):
    answer = web_client.get("/methods/nothing-here.html")
    assert answer.status_code == 404 and "methods page lists them all" in answer.text
    answer = web_client.get("/methods/nothing-here.json")
    assert answer.status_code == 404 and answer.json()["status"] == 404


def test_every_document_is_served_and_exported_alike(web_client, demo_site_data, tmp_path):
    from claimtrace.web.site import write_site

    write_site(None, tmp_path, site_data=demo_site_data, splits=("dev",), only=("claim-752",))
    for slug in series_slugs():
        exported = (tmp_path / "methods" / f"{slug}.html").read_text(encoding="utf-8")
        assert _main(web_client.get(f"/methods/{slug}.html").text) == _main(exported), slug
        twin = (tmp_path / "methods" / f"{slug}.json").read_text(encoding="utf-8")
        assert json.loads(twin) == web_client.get(f"/methods/{slug}.json").json(), slug
        for link in re.findall(r'href="([^"#?]+)', _main(exported)):  # every link of the page leads to a file
            if not link.startswith("http"):
                assert (tmp_path / "methods" / link).resolve().is_file(), (slug, link)


def test_what_the_language_model_statement_says_is_what_the_code_does(page):
    """The statement on where a language model enters says where the browser keeps what, whom it
    calls and what the browser does not do: held here to the scripts and the policy that do it."""
    from claimtrace.web.policy import PROVIDER_ORIGINS
    from claimtrace.web.render import STATIC
    from claimtrace.web.views.llm import AI_LOG_DATA

    statement = _text(next(d for d in page["statements"] if d["slug"] == "language-models")["html"])
    harness = (STATIC / "app-llm.js").read_text(encoding="utf-8")
    pages = (STATIC / "app-llm-page.js").read_text(encoding="utf-8") + (STATIC / "app-llm-score.js").read_text(
        encoding="utf-8"
    )
    # the audit log: localStorage, its latest calls, as many as the statement says
    assert f"latest {page['figures']['ai_log_kept']} calls" in statement
    assert re.search(rf"AUDIT_MAX = {AI_LOG_DATA['kept']};", harness)
    assert "window.localStorage.setItem(AUDIT_SLOT" in harness
    # the key: this tab's sessionStorage, or localStorage when remembered
    # (the settings' dialog keeps them: its own part since the header's button opens it)
    dialog = (STATIC / "app-llm-settings.js").read_text(encoding="utf-8")
    assert "settings.remember ? window.localStorage : window.sessionStorage" in dialog and "fetch(" not in dialog
    assert "sessionStorage" in statement and "localStorage" in statement
    # one request leaves the browser, to the provider's address; the pages make none of their own
    assert harness.count("fetch(") == 1 and "fetch(request.url" in harness and "fetch(" not in pages
    assert {urlparse(origin).hostname for origin in PROVIDER_ORIGINS} == {"api.anthropic.com", "api.openai.com"}
    assert "Anthropic" in statement and "OpenAI" in statement and "--llm-origin" in statement
    # where it enters: every feature the audit log names is one the statement names, asked from the pages
    run = (STATIC / "app-llm-run.js").read_text(encoding="utf-8")
    assert set(AI_LOG_DATA["where"]) == {"evaluation", "claim", "typed claim"}
    assert '"evaluation"' in run and '"claim"' in pages and '"typed claim"' in pages
    assert "The LLM page" in statement and "A claim page's second opinion" in statement
    assert "the claim you typed" in statement and "no gold passages" in statement
    # the contamination probe is the command line's alone
    assert "probe" not in (harness + pages).lower()
