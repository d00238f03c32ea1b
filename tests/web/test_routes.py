"""The routes made from the page registry (claimtrace.web.routes): the registry's addresses in its
order, a new page is one entry, and the body caps: the character limit decides, not the bytes,
and a body over the byte cap is refused before it is read."""

from __future__ import annotations

import pytest
from fastapi.routing import APIRoute
from fastapi.testclient import TestClient

from claimtrace.web.app import create_app
from claimtrace.web.pages import Page
from claimtrace.web.request_bodies import MAX_BODY_BYTES
from claimtrace.web.routes import page_router, site_routers
from claimtrace.web.typed_claims import MAX_TEXT_CHARS

#: The site's page addresses, in the order the server tries them (the static files come first,
#: the actions last: a typed claim posted, an uploaded run, /claim's redirect).
PAGE_ROUTES = [
    "/",
    "/index.html",
    "/index.json",
    "/walkthrough",
    "/walkthrough.html",
    "/walkthrough.json",
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
    "/parity",
    "/parity.html",
    "/parity.json",
    "/tour",
    "/tour.html",
    "/tour.json",
    "/results",
    "/results.html",
    "/results.json",
    "/attribution",
    "/attribution.html",
    "/attribution.json",
    "/methods",
    "/methods.html",
    "/methods.json",
    "/methods/{name}",
    "/seeds",
    "/seeds.html",
    "/seeds.json",
    "/evaluation",
    "/evaluation.html",
    "/evaluation.json",
    "/ai-log",
    "/ai-log.html",
    "/ai-log.json",
    "/compare",
    "/compare/",
    "/compare/index.html",
    "/compare/index.json",
    "/compare/class.html",
    "/compare/class.json",
    "/compare/{name}",
    "/claim/{name}",
]


def _paths(router) -> list[str]:
    return [route.path for route in router.routes if isinstance(route, APIRoute)]


def test_the_routes_are_the_registrys_addresses_in_its_order():
    static, *page_routers, actions, counterfactuals = site_routers()
    assert [path for router in page_routers for path in _paths(router)] == PAGE_ROUTES
    assert _paths(static) == ["/static/{name}", "/static/tour/{name}", "/preview/{name}"]
    assert _paths(actions) == ["/live.html", "/live", "/api/trace", "/api/trace", "/api/compare", "/claim"]
    assert _paths(counterfactuals) == ["/counterfactuals", "/counterfactuals.json", "/counterfactuals.html"]


def _shelf(site_data, split: str) -> dict:
    return {"shelf": split, "claims": len(site_data.claims(split))}


def test_a_new_page_is_one_entry(demo_site_data):
    """A page that is only its data needs no route of its own: its file, its twin and its key's
    format come from its entry, and the renderer draws it from its template, title and data name."""
    from jinja2 import ChoiceLoader, DictLoader

    shelf = Page(
        "shelf",
        "shelf/{key}.html",
        "shelf/{key}.json",
        data_function=_shelf,
        template="shelf.html",
        title="The {data[shelf]} shelf",
        data_name="s",
        keys=lambda site_data, claim_ids: list(claim_ids),
    )
    app = create_app(site_data=demo_site_data)
    app.include_router(page_router(shelf))
    env = app.state.site.renderer.env
    drawn = (
        "<title>{{ title }}</title><p data-page={{ page }}>{{ s.shelf }}: {{ s.claims }} claims ({{ root or '.' }})</p>"
    )
    env.loader = ChoiceLoader([DictLoader({"shelf.html": drawn}), env.loader])
    claims = len(demo_site_data.claims("dev"))
    with TestClient(app) as client:
        assert client.get("/shelf/dev.json").json() == {"shelf": "dev", "claims": claims}
        page = client.get("/shelf/dev")
        assert page.status_code == 200
        assert page.text == f"<title>The dev shelf</title><p data-page=shelf>dev: {claims} claims (../)</p>"
        assert client.get("/shelf/dev.html").text == page.text


@pytest.mark.parametrize("how", ["json", "escaped json", "form"])
def test_the_character_limit_decides_not_the_bytes(web_client, how):
    """15,000 CJK characters are within the 20,000-character limit however they are sent (a
    form takes 9 bytes a character, escaped JSON 6); 20,001 are refused for their characters."""
    import json

    def send(text):
        if how == "form":
            return web_client.post("/api/trace", data={"text": text})
        body = json.dumps({"text": text}, ensure_ascii=how == "escaped json").encode()
        assert len(body) < MAX_BODY_BYTES
        return web_client.post("/api/trace", content=body, headers={"content-type": "application/json"})

    assert send("海" * 15_000).status_code == 200
    refused = send("海" * (MAX_TEXT_CHARS + 1))
    assert refused.status_code == 413 and "characters" in refused.json()["error"]


def test_a_body_over_the_byte_cap_is_refused_before_it_is_read(web_client):
    response = web_client.post("/api/trace", content=b"x" * (MAX_BODY_BYTES + 1))
    assert response.status_code == 413


@pytest.mark.parametrize(
    ("path", "body"),
    [("/api/trace", {"json": {"text": "Ice is melting"}}), ("/live", {"data": {"text": "Ice is melting"}})],
)
def test_a_typed_claim_is_traced_off_the_event_loop(web_client, monkeypatch, path, body):
    """A typed claim's trace (tens of ms of CPU) runs in the thread pool: on the event loop it
    would hold every other request of the process until it ended."""
    import asyncio

    from claimtrace.web import routes

    seen = []
    traced = routes.live_response

    def recording(*args, **kwargs):
        try:
            asyncio.get_running_loop()
            seen.append("event loop")
        except RuntimeError:
            seen.append("thread pool")
        return traced(*args, **kwargs)

    monkeypatch.setattr(routes, "live_response", recording)
    assert web_client.post(path, **body).status_code == 200
    assert seen == ["thread pool"]
