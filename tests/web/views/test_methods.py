"""claimtrace.web.views.methods: the methods page's documents hold no figure typed by hand, every
placeholder is filled from the build or the course's figures, and every chip that cites a step of
the notebook links to that step on the page and to the notebook's cells."""

from __future__ import annotations

import html
import re

import pytest

from claimtrace import course
from claimtrace.web import markdown
from claimtrace.web.views.data_overview import MODELS
from claimtrace.web.views.methods import DATA_STATEMENT, STEPS_FILE, decisions

#: Numerals in the documents that are names, not figures: the course's code, years, the notebook's
#: file name, the report's tables, BM25, macro-F1, number formats and hashes.
NAMES = re.compile(r"COMP90042|Wed5PM_Group1|\b20(?:20|24|26)\b|Table [12]\b|BM25|macro-F1|float(?:16|32)|md5|sha256")
NUMBER = re.compile(r"\d")


def _documents() -> list[str]:
    return [STEPS_FILE, DATA_STATEMENT, *(model.card for model in MODELS), *decisions()]


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
    rendered = [page["data_statement"], *page["models"], *page["decisions"]]
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
