"""The server's routes, made from the page registry (:data:`claimtrace.web.pages.PAGES`): each
page is answered at every address it gives (:meth:`~claimtrace.web.pages.Page.routes`), in the
format the address asks for, by its answer in :data:`ANSWERS` (:func:`answer_page` for a page
that is only its data: its page, or the data as JSON). The other routes are the static files and
the actions (a typed claim posted, an uploaded run). What a handler needs is on
``request.app.state`` (:class:`SiteState`)."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from starlette.concurrency import run_in_threadpool

from claimtrace.constants import SPLITS
from claimtrace.course import WALKTHROUGH_CLAIM
from claimtrace.errors import DataError
from claimtrace.evaluation.scorer import MAX_PREDICTIONS_BYTES
from claimtrace.web import pages, previews
from claimtrace.web.counterfactual_routes import counterfactual_actions
from claimtrace.web.live_page import BadRule, asked_rule
from claimtrace.web.pages import Address, Asked, Page
from claimtrace.web.render import ASSETS, STATIC, STATIC_FILES, Renderer, root_for
from claimtrace.web.request_bodies import read_body, read_typed
from claimtrace.web.responses import (
    EncodedCache,
    download,
    html_response,
    json_response,
    text_problem,
    wants_json,
)
from claimtrace.web.runs import evicted_line, with_runs
from claimtrace.web.site_data import SiteData, StageMissing, UnknownClaim
from claimtrace.web.typed_claims import MAX_TEXT_CHARS
from claimtrace.web.typed_processes import typed_answer, typed_answer_json
from claimtrace.web.views import tour
from claimtrace.web.views.explore import UnknownRow
from claimtrace.web.views.methods import UnknownDocument

#: How long an Explore request waits for a split's verdicts before answering "being computed".
EXPLORE_WAIT_SECONDS = 20.0


@dataclass
class SiteState:
    """What every route reads: the site data, the renderer and the encoded-JSON cache."""

    site_data: SiteData
    renderer: Renderer
    encoded: EncodedCache = field(default_factory=EncodedCache)


def _site(request: Request) -> SiteState:
    return request.app.state.site


def not_found(request: Request, message: str, hint: str | None = None, as_json: bool | None = None) -> Response:
    """404, as JSON or as a page: as the address asks unless ``as_json`` says."""
    if as_json is None:
        as_json = wants_json(request.url.path)
    if as_json:
        return json_response({"error": message, "status": 404}, 404)
    page = _site(request).renderer.error_page(root_for(request.url.path), 404, "Not found", message, hint)
    return html_response(page, 404)


def nothing_here(request: Request) -> Response:
    """404 for an address the site does not have."""
    return not_found(
        request,
        f"Nothing here: {request.url.path}",
        "The walkthrough is at the top of the site, Explore lists every claim.",
    )


def _unknown_claim(request: Request, claim_id: str, as_json: bool) -> Response:
    return not_found(
        request,
        f"There is no claim “{claim_id}” in the train, dev or test file.",
        "Claim ids look like claim-752. Explore lists every claim of each split.",
        as_json,
    )


def _unknown_run(request: Request, key: str, as_json: bool) -> Response:
    gone = _site(request).site_data.runs.evicted(key)
    if gone:
        return not_found(
            request,
            f"The run “{gone[0].name}” ({gone[0].digest}) was evicted from this server’s run store on "
            f"{evicted_line(gone[0])['evicted']}, to keep the store under its cap; the oldest runs go first.",
            "Upload the file again on the Compare page to see it.",
            as_json,
        )
    return not_found(
        request,
        f"No run here is called “{key}”.",
        "Runs are the predictions files given to `claimtrace serve --predictions` and the ones uploaded on "
        "the Compare page, kept in the server’s run store beside the build.",
        as_json,
    )


# -- a page as its address asks: the page, or its data as JSON --------------------------------------


def page_response(request: Request, page: Page, data: Any, format: str) -> Response:
    """A page's data drawn by its template, or as JSON (computed afresh: not kept encoded)."""
    if format == "json":
        return json_response(data)
    return html_response(_site(request).renderer.page(page, data, root_for(request.url.path)))


def answer_page(request: Request, page: Page, asked: Asked) -> Response:
    """A page that is only its data: its page or its twin, as the address asks."""
    if asked.format not in page.formats:
        return nothing_here(request)
    return page_response(request, page, page.data(_site(request).site_data, asked.key), asked.format)


# -- the walkthrough and every claim's page --------------------------------------------------------


def answer_claim(request: Request, page: Page, asked: Asked) -> Response:
    """A claim's walkthrough (``?run=``: with that run's "your system" box)."""
    site = _site(request)
    claim_id, as_json = asked.key, asked.format == "json"
    run_key = request.query_params.get("run")
    run = site.site_data.runs.get(run_key) if run_key else None
    if run_key and run is None:
        return _unknown_run(request, run_key, as_json)
    try:
        result = page.data(site.site_data, claim_id)
    except UnknownClaim:
        return _unknown_claim(request, claim_id, as_json)
    try:
        if as_json:
            if run is not None:
                return json_response({**result, "run_box": site.site_data.runs.box(run, claim_id)})
            return site.encoded.response(result)
        return html_response(site.renderer.page(page, result, root_for(request.url.path), run=run))
    finally:
        site.site_data.first_page_served.set()  # the Explore warm-up may start now


# -- Explore -----------------------------------------------------------------------------------------


def answer_explore(request: Request, page: Page, asked: Asked) -> Response:
    """A split's Explore; "being computed" (202) while its verdicts are not ready in time."""
    site = _site(request)
    split, as_json = asked.key, asked.format == "json"
    if split not in SPLITS:
        return not_found(request, f"There is no split “{split}”.", "The splits are dev, train and test.", as_json)
    result = site.site_data.explore_when_ready(split, request.app.state.explore_wait)
    if result is None:
        progress = {k: v for k, v in site.site_data.progress.items() if k.startswith(split + "/")}
        if as_json:
            return json_response(
                {"status": "computing", "split": split, "progress": progress, "retry_after_seconds": 10}, 202
            )
        page_html = site.renderer.computing_page(root_for(request.url.path), split, progress)
        return HTMLResponse(page_html, status_code=202, headers={"Retry-After": "10"})
    result = with_runs(site.site_data.runs, result)
    if as_json:
        return site.encoded.response(result)
    return html_response(site.renderer.page(page, result, root_for(request.url.path)))


# -- predictions: a split's, and each scoreboard row's (Explore's downloads) -------------------------


def answer_predictions(request: Request, page: Page, asked: Asked) -> Response:
    """The build's predictions for a split, in the course's shape (a download on Explore)."""
    split = asked.key
    if split not in SPLITS or asked.format != "json":
        return not_found(
            request,
            f"There are no predictions “{request.path_params['name']}”.",
            "They are predictions/<split>.json: dev, train, test.",
            as_json=True,
        )
    return download(json_response(page.data(_site(request).site_data, split)), f"{split}-predictions.json")


def answer_row_predictions(request: Request, page: Page, asked: Asked) -> Response:
    """One scoreboard row's predictions in the course's shape (explore.scoreboard_section)."""
    split, row = asked.key
    if asked.format != "json":
        return not_found(request, "Predictions are JSON: ask for ROW.json.", as_json=True)
    site = _site(request)
    try:
        return download(site.encoded.response(page.data(site.site_data, asked.key)), f"{split}-{row}.json")
    except UnknownRow as err:  # a damaged or missing file is the handlers' 503, naming no machine path
        return not_found(request, str(err), as_json=True)


# -- live: a typed claim, and the model-input editor -------------------------------------------------


def answer_live(request: Request, page: Page, asked: Asked) -> Response:
    """The editor on ``?text=`` (a typed claim) or ``?claim=`` (a course claim; the page's own
    claim without either)."""
    query = request.query_params
    return live_response(request, query.get("text"), query.get("claim"), asked.format, query.get("rule"))


def live_response(
    request: Request, text: str | None, claim_id: str | None, kind: str, rule_name: str | None = None
) -> Response:
    """The live page or its JSON twin: a typed ``text`` retrieved under the rule named (a course
    claim keeps the build's retrieval, the notebook's rule), or a 400 naming the field."""
    site = _site(request)
    error, status, result = None, 200, None
    shown_text = None if text is None else text[:MAX_TEXT_CHARS]
    try:
        rule = asked_rule(rule_name)
    except BadRule as err:
        if kind == "json":
            return json_response({"error": str(err), "status": 400, "field": "rule"}, 400)
        page = site.renderer.page(pages.LIVE, None, root_for(request.url.path), text=shown_text or "", error=str(err))
        return html_response(page, 400)
    if text is not None:
        if kind == "json":
            status, body = typed_answer_json(site.site_data.typed_claims, text, rule)
            return Response(body, status_code=status, media_type="application/json")
        status, value = typed_answer(site.site_data.typed_claims, text, rule)
        error, result = (value["error"], None) if status != 200 else (None, value)
    else:
        try:
            result = site.site_data.trace(claim_id or WALKTHROUGH_CLAIM)
        except UnknownClaim:
            return _unknown_claim(request, claim_id or "", kind == "json")
        if kind == "json":
            return json_response(result)
        shown_text = result["claim"]["text"]
    root = root_for(request.url.path)
    return html_response(site.renderer.page(pages.LIVE, result, root, text=shown_text, error=error, rule=rule), status)


async def typed_json(request: Request, text: str, rule_name: str | None) -> Response:
    """A typed text's JSON answer under the rule named: traced by the typed-claims processes where
    the server has them (``serve --typed-processes``) and one is ready, else in turn on this
    process's typed-claims thread (the same bytes)."""
    typed_claims = _site(request).site_data.typed_claims
    # Before any process is ready (they start after the first page, then read the build), a claim
    # sent to their socket would wait for one to finish reading it: traced here instead.
    if typed_claims.processes is not None and typed_claims.processes.any_ready():
        try:  # refused here, before a process is asked
            status, body = await typed_claims.processes.answer(text, asked_rule(rule_name))
        except BadRule as err:
            return json_response({"error": str(err), "status": 400, "field": "rule"}, 400)
        return Response(body, status_code=status, media_type="application/json")
    return await typed_claims.submit(live_response, request, text, None, "json", rule_name)


# -- compare: your system beside the notebook's ---------------------------------------------------


def answer_compare(request: Request, page: Page, asked: Asked) -> Response:
    """One run beside the notebook's pipeline."""
    try:
        data = page.data(_site(request).site_data, asked.key)
    except pages.UnknownRun:
        return _unknown_run(request, asked.key, asked.format == "json")
    return page_response(request, page, data, asked.format)


# -- the classifier's table and what the build holds -------------------------------------------------


def answer_table(request: Request, page: Page, asked: Asked) -> Response:
    site = _site(request)
    try:
        return site.encoded.response(page.data(site.site_data, asked.key))
    except StageMissing as err:
        return json_response({"error": err.reason, "status": 503, "stage": err.stage}, 503)


def answer_build(request: Request, page: Page, asked: Asked) -> Response:
    """What the build holds, and how far the server's warm-up has come."""
    return json_response(
        {
            **page.data(_site(request).site_data, asked.key),
            "server": {**request.app.state.warmth, "process": os.getpid()},
        }
    )


def answer_methods_document(request: Request, page: Page, asked: Asked) -> Response:
    """A statement or decision of the methods' series, or 404 naming where they are listed."""
    try:
        data = page.data(_site(request).site_data, asked.key)
    except UnknownDocument:
        return not_found(
            request,
            f"There is no statement or decision “{asked.key}” in Methods.",
            "The methods page lists them all, each at methods/<name>.html.",
            asked.format == "json",
        )
    return page_response(request, page, data, asked.format)


def answer_landing(request: Request, page: Page, asked: Asked) -> Response:
    """The landing page or its twin; once answered, the Explore warm-up may start."""
    try:
        return answer_page(request, page, asked)
    finally:
        _site(request).site_data.first_page_served.set()


#: How each page is answered, by its name in :data:`claimtrace.web.pages.PAGES`, where that is
#: more than :func:`answer_page` (its data kept encoded, a download, a key that may be unknown).
ANSWERS: dict[str, Callable[[Request, Page, Asked], Response]] = {
    "landing": answer_landing,
    "walkthrough": answer_claim,
    "claim": answer_claim,
    "explore": answer_explore,
    "live": answer_live,
    "predictions": answer_predictions,
    "row-predictions": answer_row_predictions,
    "compare": answer_compare,
    "methods-document": answer_methods_document,
    "table": answer_table,
    "build": answer_build,
}


def _endpoint(page: Page, address: Address) -> Callable[[Request], Response]:
    """The handler of one of a page's addresses: what it asks, answered by the page's answer."""
    answer = ANSWERS.get(page.name, answer_page)

    def endpoint(request: Request) -> Response:
        if address.format is None:  # a keyed page's route: the key and format are in its name
            return answer(request, page, page.asked(request.path_params))
        return answer(request, page, Asked(address.key, address.format))

    return endpoint


def page_router(page: Page) -> APIRouter:
    """Every address of a page (:meth:`claimtrace.web.pages.Page.routes`), in order."""
    router = APIRouter()
    for address in page.routes():
        router.add_api_route(
            address.route, _endpoint(page, address), methods=["GET"], name=f"{page.name} {address.route}"
        )
    return router


# -- actions: a typed claim posted or asked for, an uploaded run --------------------------------------

actions = APIRouter()


@actions.post("/live")
@actions.post("/live.html")
async def live_post(request: Request):
    typed, error, status = await read_typed(request)
    if error:
        page = _site(request).renderer.page(pages.LIVE, None, root_for(request.url.path), text="", error=error)
        return html_response(page, status)
    # the trace is tens of milliseconds of CPU: run on the event loop, it would hold every other
    # request of this process (a page, another typed claim) until it ended
    return await _site(request).site_data.typed_claims.submit(
        live_response, request, typed.text, None, "html", typed.rule
    )


@actions.get("/api/trace")
async def api_trace(request: Request, text: str | None = None, claim: str | None = None, rule: str | None = None):
    if text is None and claim is not None:
        try:  # a course claim keeps the build's retrieval, but a bad rule is refused all the same
            asked_rule(rule)
        except BadRule as err:
            return json_response({"error": str(err), "status": 400, "field": "rule"}, 400)
        return await run_in_threadpool(answer_claim, request, pages.CLAIM, Asked(claim, "json"))
    return await typed_json(request, text if text is not None else "", rule)


@actions.post("/api/trace")
async def api_trace_post(request: Request):
    typed, error, status = await read_typed(request)
    if error:
        return json_response({"error": error, "status": status}, status)
    return await typed_json(request, typed.text, typed.rule)


@actions.post("/api/compare")
async def upload_run(request: Request):
    """An uploaded predictions file (the body's bytes): checked as the command line checks one,
    kept in the run store under its digest; ``{"name", "digest", "split", "url"}`` or a 400 naming the
    claim and field."""
    body, error, status = await read_body(request, MAX_PREDICTIONS_BYTES, "a predictions file")
    if error:
        return json_response({"error": error, "status": status}, status)
    name = request.query_params.get("name") or None
    if name is not None and (len(name) > 80 or text_problem(name)):
        return json_response({"error": "A run’s name is at most 80 characters of text.", "status": 400}, 400)
    try:
        run = await run_in_threadpool(_site(request).site_data.runs.upload, body, name)  # read and audited off the loop
    except DataError as err:
        return json_response({"error": str(err), "status": 400}, 400)
    url = pages.COMPARE.path(run.digest)
    return json_response({"name": run.name, "digest": run.digest, "split": run.split, "url": url}, 201)


@actions.get("/claim")
def claim_list(request: Request):
    return RedirectResponse("/explore/dev.html", status_code=307)


# -- the site's static files: by their hashed names (kept a year), or their plain ones -------------

static = APIRouter()

#: A year: a hashed name's content never changes.
IMMUTABLE = "public, max-age=31536000, immutable"
_BY_NAME = {hashed: name for name, hashed in ASSETS.items()} | {name: name for name in STATIC_FILES}
_MEDIA = {"js": "text/javascript; charset=utf-8", "css": "text/css; charset=utf-8", "svg": "image/svg+xml"}


@static.get("/static/{name}")
def static_file(request: Request, name: str):
    """``app.js`` or ``style.css``, under the hashed name a page links to (cached for a year) or
    under its plain name (revalidated each time)."""
    plain = _BY_NAME.get(name)
    if plain is None:
        return not_found(request, f"There is no static file “{name}”.")
    body = (STATIC / plain).read_bytes()
    cache = IMMUTABLE if name != plain else "no-cache"
    return Response(body, media_type=_MEDIA[plain.rsplit(".", 1)[1]], headers={"Cache-Control": cache})


@static.get("/static/tour/{name}")
def tour_picture(request: Request, name: str):
    """A picture of the tour (the files its captions name; revalidated: a new tour keeps the names)."""
    if name not in tour.pictures():
        return not_found(request, f"The tour has no picture “{name}”.")
    body = (tour.TOUR_DIR / name).read_bytes()
    return Response(body, media_type="image/png", headers={"Cache-Control": "no-cache"})


@static.get("/preview/{name}")
def preview_picture(request: Request, name: str):
    """A page's preview picture (its og:image): ``index.png``, the landing's findings, or
    ``<claim id>.png``, that claim's verdict card (web.previews); drawn once per build."""
    site = _site(request)
    key = name.removesuffix(".png")
    if not name.endswith(".png") or (key != previews.SITE_CARD and site.site_data.build.locate(key) is None):
        return not_found(request, f"There is no preview picture “{name}”.")
    body = site.site_data.preview(None if key == previews.SITE_CARD else key)
    return Response(body, media_type="image/png", headers={"Cache-Control": "no-cache"})


def site_routers() -> list[APIRouter]:
    """Every route of the site, in the order they are tried: the static files, each page's
    addresses (in :data:`~claimtrace.web.pages.PAGES` order), then the actions."""
    return [static, *(page_router(page) for page in pages.PAGES), actions, counterfactual_actions]
