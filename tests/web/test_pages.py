"""The page registry (claimtrace.web.pages): every page answers at its file, its JSON twin and its
aliases, and the format is read off the address."""

from __future__ import annotations

import pytest

from claimtrace.web.pages import (
    CLAIM,
    EXPLORE,
    LANDING,
    PAGES,
    ROW_PREDICTIONS,
    WALKTHROUGH,
    Address,
    Asked,
    split_name,
)


@pytest.mark.parametrize(
    "name, asked",
    [("claim-752.json", ("claim-752", "json")), ("claim-752.html", ("claim-752", "html")), ("dev", ("dev", "html"))],
)
def test_the_format_is_read_off_the_name(name, asked):
    assert split_name(name) == Asked(*asked)


def test_a_keyed_route_gives_the_key_and_its_parts():
    assert CLAIM.asked({"name": "claim-752.json"}) == Asked("claim-752", "json")
    assert EXPLORE.asked({"name": "train"}) == Asked("train", "html")
    row = ROW_PREDICTIONS.asked({"key0": "dev", "name": "bm25+notebook+alone.json"})
    assert row == Asked(("dev", "bm25+notebook+alone"), "json")
    assert ROW_PREDICTIONS.path(row.key) == "predictions/dev/bm25+notebook+alone.json"


def test_a_one_page_entry_answers_at_its_files_with_its_own_key():
    assert WALKTHROUGH.routes() == [
        Address("/walkthrough", WALKTHROUGH.key, "html"),
        Address("/walkthrough.html", WALKTHROUGH.key, "html"),
        Address("/walkthrough.json", WALKTHROUGH.key, "json"),
    ]
    assert LANDING.routes() == [
        Address("/", None, "html"),
        Address("/index.html", None, "html"),
        Address("/index.json", None, "json"),
    ]
    assert [page.formats for page in PAGES if page.template is None] == [("json",)] * 4


def test_every_exported_page_is_served_at_its_file_and_twin(web_client, demo_site_data):
    chosen = {"dev": ["claim-752"]}
    for page in PAGES:
        for key in page.export_keys(demo_site_data, chosen):
            for path, kind in ((page.path(key), page.formats[0]), (page.twin_path(key), "json")):
                if path is None:
                    continue
                response = web_client.get("/" + path)
                assert response.status_code == 200, path
                assert ("json" if kind == "json" else "html") in response.headers["content-type"], path


def test_every_entry_is_data_naming_its_template_title_and_functions():
    """A page names its template's file (one of web/templates), its title and its data function;
    no entry holds a lambda, and only a page whose template reads more names a context."""
    from claimtrace.web.render import TEMPLATES

    for page in PAGES:
        functions = [page.data_function, page.context, page.keys]
        assert all(f is None or f.__name__ != "<lambda>" for f in functions), page.name
        if page.template is None:
            assert page.twin is None and page.context is None and not page.kept, page.name
            continue
        assert (TEMPLATES / page.template).is_file() and page.title and page.data_name, page.name
    named = {page.name: page.context.__name__ for page in PAGES if page.context is not None}
    assert named == {
        "walkthrough": "claim_context",
        "claim": "claim_context",
        "live": "live_context",
        "evaluation": "evaluation_context",
    }


def test_a_title_is_read_off_the_pages_data(demo_site_data):
    from claimtrace.web.render import Renderer

    html = EXPLORE.render(Renderer(demo_site_data), EXPLORE.data(demo_site_data, "test"), "test")
    assert "<title>Explore: every test claim · claimtrace</title>" in html
    html = CLAIM.render(Renderer(demo_site_data), CLAIM.data(demo_site_data, "claim-752"), "claim-752")
    assert "<title>claim-752: one claim through every stage · claimtrace</title>" in html
