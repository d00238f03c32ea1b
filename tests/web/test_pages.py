"""The page registry (claimtrace.web.pages) and the routes made from it (claimtrace.web.routes):
every page answers at its file, its JSON twin and its aliases, the format read off the address,
and a new page is one entry."""

from __future__ import annotations

import pytest
from fastapi.routing import APIRoute
from fastapi.testclient import TestClient

from claimtrace.web.app import create_app
from claimtrace.web.pages import CLAIM, EXPLORE, PAGES, ROW_PREDICTIONS, WALKTHROUGH, Address, Asked, Page, split_name
from claimtrace.web.routes import page_router, site_routers

#: The site's page addresses, in the order the server tries them (the static files come first,
#: the actions last: a typed claim posted, an uploaded run, /claim's redirect).
PAGE_ROUTES = [
    "/",
    "/index.html",
    "/index.json",
    "/api/table.json",
    "/api/build.json",
    "/live",
    "/live.json",
    "/live.html",
    "/predictions/{key0}/{name}",
    "/explore",
    "/explore.json",
    "/explore/{name}",
    "/predictions/{name}",
    "/compare",
    "/compare/",
    "/compare/index.html",
    "/compare/index.json",
    "/compare/{name}",
    "/claim/{name}",
]


def _paths(router) -> list[str]:
    return [route.path for route in router.routes if isinstance(route, APIRoute)]


def test_the_routes_are_the_registrys_addresses_in_its_order():
    static, *page_routers, actions = site_routers()
    assert [path for router in page_routers for path in _paths(router)] == PAGE_ROUTES
    assert _paths(static) == ["/static/{name}"]
    assert _paths(actions) == ["/live.html", "/live", "/api/trace", "/api/trace", "/api/compare", "/claim"]


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
        Address("/", WALKTHROUGH.key, "html"),
        Address("/index.html", WALKTHROUGH.key, "html"),
        Address("/index.json", WALKTHROUGH.key, "json"),
    ]
    assert [page.formats for page in PAGES if page.template is None] == [("json",)] * 4


def test_every_exported_page_is_served_at_its_file_and_twin(web_client, web_tracer):
    chosen = {"dev": ["claim-752"]}
    for page in PAGES:
        for key in page.export_keys(web_tracer, chosen):
            for path, kind in ((page.path(key), page.formats[0]), (page.twin_path(key), "json")):
                if path is None:
                    continue
                response = web_client.get("/" + path)
                assert response.status_code == 200, path
                assert ("json" if kind == "json" else "html") in response.headers["content-type"], path


def test_a_new_page_is_one_entry(web_tracer):
    """A page that is only its data needs no route of its own: its file, its twin and its key's
    format come from its entry."""
    shelf = Page(
        "shelf",
        "shelf/{key}.html",
        "shelf/{key}.json",
        data=lambda tracer, key: {"shelf": key, "claims": len(tracer.claims(key))},
        template=lambda renderer, data, root: f"<p>{data['shelf']}: {data['claims']} claims ({root or '.'})</p>",
        keys=lambda tracer, claim_ids: list(claim_ids),
    )
    app = create_app(tracer=web_tracer)
    app.include_router(page_router(shelf))
    with TestClient(app) as client:
        assert client.get("/shelf/dev.json").json() == {"shelf": "dev", "claims": len(web_tracer.claims("dev"))}
        page = client.get("/shelf/dev")
        assert page.status_code == 200 and page.text == f"<p>dev: {len(web_tracer.claims('dev'))} claims (../)</p>"
        assert client.get("/shelf/dev.html").text == page.text
