"""The explainer web site: a FastAPI app over one build (``claimtrace serve``).

Routes (docs/web.md has the JSON shapes), made by :mod:`claimtrace.web.routes` from the page
registry :data:`claimtrace.web.pages.PAGES` the static export also writes from:

* ``/``, ``/index.html`` — the landing page: the findings over dev, the ways in; ``/index.json``
* ``/walkthrough``, ``/walkthrough.html`` — the walkthrough of claim-752; ``/walkthrough.json``
* ``/claim/<id>``, ``/claim/<id>.html`` — any claim's walkthrough; ``/claim/<id>.json``
* ``/explore``, ``/explore/<split>.html`` — every claim of a split; ``.json`` likewise
* ``/live``, ``/live.html`` (GET ``?text=`` or ``?claim=``; POST a form) — trace your own claim
  and edit the model input in the browser; ``/live.json?text=``
* ``/api/trace`` (GET ``?text=``, or POST JSON ``{"text": ...}`` / a form) — a text's trace
* ``/predictions/<split>/<row>.json`` — a scoreboard row's dev or test predictions (course shape)
* ``/api/table.json`` — the classifier's table for the browser; ``/api/build.json`` — the build
* ``/static/app.<hash>.js``, ``/static/style.<hash>.css`` (a year's Cache-Control; the plain names too)
* ``/preview/<claim id or index>.png`` — a page's preview picture (og:image)

Every answer is checked before it is trusted (docs/web.md, "Security and limits"): a request
whose Host is not the loopback is refused (DNS rebinding, :mod:`claimtrace.web.middleware`); bad
input gets a 4xx with a JSON or HTML error, never a 500; a damaged build file gets a 503 naming
it; every response carries the security headers; HEAD works wherever GET does;
:mod:`claimtrace.web.serving` closes connections whose request headers do not arrive in time
(slowloris).
"""

from __future__ import annotations

import threading

from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.middleware.gzip import GZipMiddleware

from claimtrace.constants import SPLITS
from claimtrace.errors import DataError
from claimtrace.web.middleware import (
    AnswerCache,
    BuildWatch,
    Failsafe,
    FinalAnswers,
    HostGuard,
    SecurityHeaders,
)
from claimtrace.web.pages import CLAIM
from claimtrace.web.process_settings import collect_all_again, keep_out_of_collections
from claimtrace.web.render import Renderer
from claimtrace.web.request_bodies import MAX_BODY_BYTES
from claimtrace.web.responses import error_response, unreadable_build, utf8
from claimtrace.web.routes import EXPLORE_WAIT_SECONDS, SiteState, nothing_here, site_routers
from claimtrace.web.site_data import SiteData, build_stamp
from claimtrace.web.typed_processes import TypedClient
from claimtrace.workdir.reader import BuildReader

__all__ = ["create_app", "MAX_BODY_BYTES"]

#: Seconds a server waits for its typed-claims processes to be warm before it says it is.
TYPED_START_SECONDS = 300


def create_app(
    build: BuildReader | None = None,
    site_data: SiteData | None = None,
    warm: bool = False,
    prerender: bool = False,
    llm_origins: tuple[str, ...] = (),
    typed: TypedClient | None = None,
    freeze_when_warm: bool = False,
) -> FastAPI:
    """The site over a build, or over a site data already made for one (see the module docstring
    for the routes).

    ``warm``: load the build and the front page in the background while the server starts, then
    every split's Explore. ``prerender`` (with ``warm``): then render every claim page once and
    keep it whole (a server under load: a claim page then costs nothing; the rendering's own cost:
    docs/benchmarks.md, "Capacity: an open-loop mixed load"); ``/api/build.json`` reports the
    progress under ``"server"``. ``llm_origins``:
    the origins (``scheme://host:port``) of provider base URLs the LLM pages may connect to,
    beside the known providers' (``serve --llm-origin``). ``typed``: the way to the processes tracing typed
    claims that ``serve`` started (``web.typed_processes``; None: traced in turn in this one).
    ``freeze_when_warm`` (a server process of its own, as ``serve`` makes): once warm, what it
    holds is kept out of the collector's full passes (:func:`~claimtrace.web.process_settings.keep_out_of_collections`).
    The process's own settings are not the app's: each process ``serve`` runs sets them at its
    start (:func:`~claimtrace.web.process_settings.configure_server_process`).
    """
    site_data = site_data or SiteData(build)
    renderer = Renderer(site_data, mode="server")
    answers = AnswerCache()
    app = FastAPI(title="claimtrace", docs_url=None, redoc_url=None, openapi_url=None)
    app.state.site = SiteState(site_data, renderer)
    app.state.site_data = site_data
    app.state.explore_wait = EXPLORE_WAIT_SECONDS
    app.state.warmth = {"claim_pages_prerendered": 0, "claim_pages": None, "warm": not (warm and prerender)}
    for router in site_routers():
        app.include_router(router)
    app.add_exception_handler(StarletteHTTPException, http_error)
    app.add_exception_handler(DataError, build_file_unreadable)  # StageMissing included
    app.add_middleware(FinalAnswers, answers=answers)
    app.add_middleware(HostGuard, renderer=renderer)
    app.add_middleware(BuildWatch, stamp=lambda: build_stamp(site_data.build), reload=lambda: reload_site(app, answers))
    app.add_middleware(Failsafe, site=lambda: app.state.site)
    app.add_middleware(SecurityHeaders, llm_origins=llm_origins)
    # answers over 1 KB are gzipped for a client that takes it (what it saves: docs/benchmarks.md, "The site")
    app.add_middleware(GZipMiddleware, minimum_size=1000)  # the last added is the outermost
    if warm:  # a server (tests and the static export make apps without a warm-up)
        site_data.typed_claims.processes = typed
        if typed is not None:
            threading.Thread(
                target=tell_first_page, args=(site_data, typed), name="claimtrace-first-page", daemon=True
            ).start()
        threading.Thread(
            target=warm_up, args=(app, answers, prerender, freeze_when_warm), name="claimtrace-warm", daemon=True
        ).start()
    return app


def reload_site(app: FastAPI, answers: AnswerCache) -> None:
    """The site's state made again over the build as it is now (a completed or repaired build):
    a new reader and site_data, no answer kept from before."""
    old: BuildReader = app.state.site_data.build
    site_data = SiteData(BuildReader(old.root, old.data_dir))
    site_data.runs = app.state.site_data.runs.over(site_data.build)  # the runs given and uploaded stay
    # the typed-claims processes stay: they read the build again themselves
    site_data.typed_claims.processes = app.state.site_data.typed_claims.processes
    app.state.site = SiteState(site_data, Renderer(site_data, mode="server"))
    app.state.site_data = site_data
    answers.clear()
    collect_all_again()  # the old build's objects, frozen once warm, may now be collected


# -- warming up: the front page, every Explore, and with ``prerender`` every claim page ------------


def tell_first_page(site_data: SiteData, typed: TypedClient) -> None:
    """Once this process has answered its first page, say so to the typed-claims processes, which
    start then (``serve``: their start took the cores from the first page)."""
    site_data.first_page_served.wait()
    typed.first_page_served()


def warm_up(app: FastAPI, answers: AnswerCache, prerender: bool, freeze: bool = False) -> None:
    try:
        app.state.site_data.warm()
        typed = app.state.site_data.typed_claims.processes
        if typed is not None:
            app.state.warmth["typed_processes"] = typed.wait_ready(TYPED_START_SECONDS)
        app.state.warmth["typed_ready"] = True  # a typed claim now costs what any other does
        if prerender:
            prerender_claim_pages(app, answers)
    except DataError:  # a stage not built or a damaged file: the pages that need it say so
        app.state.warmth["warm"] = True
    if freeze:
        keep_out_of_collections()
        app.state.warmth["frozen"] = True


def prerender_claim_pages(app: FastAPI, answers: AnswerCache) -> None:
    """Every claim page (``/claim/<id>.html``, the address Explore links to), rendered once and
    kept whole in the answer cache."""
    site: SiteState = app.state.site
    splits = {split: list(site.site_data.claims(split)) for split in SPLITS}
    app.state.warmth["claim_pages"] = sum(len(ids) for ids in splits.values())
    for ids in splits.values():
        for claim_id in ids:
            path = "/" + CLAIM.path(claim_id)
            if answers.get(path) is None:
                body = utf8(CLAIM.render(site.renderer, CLAIM.data(site.site_data, claim_id), claim_id))
                answers.put(path, HTMLResponse(body).raw_headers, body)
            app.state.warmth["claim_pages_prerendered"] += 1
    app.state.warmth["warm"] = True


# -- errors ----------------------------------------------------------------------------------------


async def http_error(request: Request, exc: StarletteHTTPException):
    if exc.status_code == 404:
        return nothing_here(request)
    renderer = request.app.state.site.renderer
    return error_response(renderer, request.url.path, exc.status_code, "Error", str(exc.detail))


#: Seconds after which a page waiting for a running build asks again (its refresh and Retry-After).
BEING_BUILT_REFRESH = 5


async def build_file_unreadable(request: Request, exc: DataError):
    """A build file a page could not read (StageMissing is a DataError): a 503 saying which and
    why (:func:`~claimtrace.web.responses.unreadable_build`). One a running build has not written
    yet (`serve --while-building`, make demo) is "Being built": the page asks again."""
    site: SiteState = request.app.state.site
    heading, message, fields = unreadable_build(exc, site.site_data.build.root)
    if not fields.get("building"):
        return error_response(site.renderer, request.url.path, 503, heading, message, **fields)
    hint = f"This page asks again every {BEING_BUILT_REFRESH} seconds and shows itself once the build has written it."
    answer = error_response(
        site.renderer, request.url.path, 503, heading, message, hint, refresh=BEING_BUILT_REFRESH, **fields
    )
    answer.headers["Retry-After"] = str(BEING_BUILT_REFRESH)
    return answer
