"""The explainer web site: a FastAPI app over one build (``claimtrace serve``).

Routes (docs/web.md has the JSON shapes):

* ``/``, ``/index.html`` — the walkthrough of claim-752; ``/index.json``
* ``/claim/<id>``, ``/claim/<id>.html`` — any claim's walkthrough; ``/claim/<id>.json``
* ``/explore``, ``/explore/<split>.html`` — every claim of a split; ``.json`` likewise
* ``/live``, ``/live.html`` (GET ``?text=`` or ``?claim=``; POST a form) — trace your own claim
  and edit the model input in the browser; ``/live.json?text=``
* ``/api/trace`` (GET ``?text=``, or POST JSON ``{"text": ...}`` / a form) — a text's trace
* ``/predictions/<split>/<row>.json`` — a scoreboard row's dev or test predictions (course shape)
* ``/api/table.json`` — the classifier's table for the browser; ``/api/build.json`` — the build
* ``/static/app.js``, ``/static/style.css``

Every answer is checked before it is trusted (docs/web.md, "Security and limits"): a request
whose Host is not the loopback is refused (DNS rebinding); bad input gets a 4xx with a JSON or
HTML error, never a 500; a damaged build file gets a 503 naming it; every response carries the
security headers; HEAD works wherever GET does; :func:`serve` closes connections whose request
headers do not arrive in time (slowloris).
"""

from __future__ import annotations

import json
import os
import re
import threading
from collections import OrderedDict
from urllib.parse import parse_qs

from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from fastapi.staticfiles import StaticFiles
from starlette.exceptions import HTTPException as StarletteHTTPException

from .. import constants as C
from ..artifacts import Build
from ..course import WALKTHROUGH_CLAIM
from ..data import choose_data_dir
from ..errors import DataError
from . import sections
from .explore import row_predictions as predictions_of
from .render import STATIC, Renderer, root_for
from .tracer import MAX_TEXT_CHARS, BadText, StageMissing, Tracer, UnknownClaim, limit_malloc_arenas

#: How long an Explore request waits for a split's verdicts before answering "being computed".
EXPLORE_WAIT_SECONDS = 20.0

#: Request bodies larger than this are refused before they are read whole. The character limit
#: decides, counted after decoding: a character takes at most 12 bytes on the wire (a 4-byte UTF-8
#: character percent-encoded in a form, or a JSON surrogate pair ``\\ud83d\\ude00``), so no text
#: within MAX_TEXT_CHARS is refused for its bytes; 4 KB more for the field name and the JSON.
MAX_BODY_BYTES = 12 * MAX_TEXT_CHARS + 4096

#: Host names the server answers to: the loopback it listens on, and the TestClient's name. Any
#: other Host is a page of another site reaching 127.0.0.1 through DNS rebinding.
ALLOWED_HOSTS = frozenset({"127.0.0.1", "localhost", "[::1]", "testserver"})

#: Sent with every response. No inline script runs (app.js is the only script; the JSON data
#: blocks are not run); style attributes stay allowed for the inline CSS bars of the charts.
SECURITY_HEADERS = (
    (
        b"content-security-policy",
        b"default-src 'self'; script-src 'self'; style-src 'self'; style-src-attr 'unsafe-inline'; "
        b"img-src 'self' data:; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
    ),
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"no-referrer"),
    (b"cross-origin-opener-policy", b"same-origin"),
)

_SURROGATE = re.compile("[\ud800-\udfff]")


def _encode(value) -> bytes:
    try:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate echoed back (an unknown id): \uXXXX escapes are valid JSON
        return json.dumps(value, ensure_ascii=True, separators=(",", ":")).encode("ascii")


def _utf8(text: str) -> bytes:
    """``text`` in UTF-8, a lone surrogate (which UTF-8 cannot carry) shown as U+FFFD."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return _SURROGATE.sub("\ufffd", text).encode("utf-8")


def text_problem(text: str) -> str | None:
    """Why a typed text cannot be traced as Unicode text, or None: a lone surrogate (JSON's
    ``"\\ud800"`` decodes to one) is not a character, and no stage could print it."""
    found = _SURROGATE.search(text)
    if found is None:
        return None
    return f"The text holds a lone surrogate (U+{ord(found.group()):04X} at character {found.start() + 1}), which is not Unicode text."


def _json(value, status: int = 200) -> Response:
    return Response(_encode(value), status_code=status, media_type="application/json")


class _BytesCache:
    """Encoded JSON of immutable answers (traces, Explore, the table), keyed by the object's
    identity: the object is kept with its bytes, so a key never outlives its value."""

    def __init__(self, size: int = 1024):
        self.size = size
        self.items: OrderedDict[int, tuple[object, bytes]] = OrderedDict()
        self.lock = threading.Lock()

    def response(self, value) -> Response:
        key = id(value)
        with self.lock:
            hit = self.items.get(key)
            if hit is not None and hit[0] is value:
                self.items.move_to_end(key)
                return Response(hit[1], media_type="application/json")
        body = _encode(value)
        with self.lock:
            self.items[key] = (value, body)
            while len(self.items) > self.size:
                self.items.popitem(last=False)
        return Response(body, media_type="application/json")


def _host_name(host: str) -> str:
    """``"127.0.0.1:8000"`` -> ``"127.0.0.1"``, ``"[::1]:8000"`` -> ``"[::1]"``, lower case."""
    host = host.strip().lower()
    if host.startswith("["):
        return host[: host.find("]") + 1] if "]" in host else host
    return host.split(":", 1)[0]


#: Paths whose 200 answer never changes while the server runs (a build is read, never changed,
#: and a trace or an Explore once computed is final): kept whole by :class:`Guard`.
_FINAL_ANSWER = re.compile(r"/(index\.(html|json))?|/claim/[^/]+|/explore(\.json|/[^/]+)?")
#: Whole answers kept (claim pages are about 90 KB; every claim of every split fits) ...
ANSWER_CACHE_ENTRIES = 4096
#: ... within this many bytes.
ANSWER_CACHE_BYTES = 256 * 2**20


class _AnswerCache:
    """Whole answers (status 200, headers, body) by path, least recently used dropped first,
    bounded in count and bytes. Written by the event loop and by the pre-render thread."""

    def __init__(self, entries: int = ANSWER_CACHE_ENTRIES, size: int = ANSWER_CACHE_BYTES):
        self.entries, self.size, self.bytes = entries, size, 0
        self.items: OrderedDict[str, tuple[list, bytes]] = OrderedDict()
        self.lock = threading.Lock()

    def get(self, path: str) -> tuple[list, bytes] | None:
        with self.lock:
            hit = self.items.get(path)
            if hit is not None:
                self.items.move_to_end(path)
            return hit

    def put(self, path: str, headers: list, body: bytes) -> None:
        with self.lock:
            if len(body) > self.size // 16 or path in self.items:
                return
            self.items[path] = (headers, body)
            self.bytes += len(body)
            while len(self.items) > self.entries or self.bytes > self.size:
                self.bytes -= len(self.items.popitem(last=False)[1][1])


class Guard:
    """ASGI middleware in front of every route: refuses a Host that is not the loopback (400),
    answers HEAD as GET without the body, adds SECURITY_HEADERS to every response, and answers
    a walkthrough or Explore page already served from its copy, in the event loop: under load,
    those stay instant while new traces wait for the CPU.

    Plain ASGI rather than a BaseHTTPMiddleware: it adds no task or copy per request.
    """

    def __init__(self, app, renderer: Renderer, answers: _AnswerCache | None = None):
        self.app = app
        self.renderer = renderer
        self.answers = answers if answers is not None else _AnswerCache()

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        head = scope["method"] == "HEAD"
        if head:
            scope = {**scope, "method": "GET"}

        async def secured(message):
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", ()), *SECURITY_HEADERS]}
            elif head and message["type"] == "http.response.body":
                message = {**message, "body": b""}  # Content-Length stays the GET body's, as HEAD wants
            await send(message)

        host = dict(scope.get("headers", ())).get(b"host", b"").decode("latin-1")
        if _host_name(host) not in ALLOWED_HOSTS:
            return await self.refuse(scope, host)(scope, receive, secured)
        path = scope["path"]
        if scope["method"] != "GET" or scope.get("query_string") or not _FINAL_ANSWER.fullmatch(path):
            return await self.app(scope, receive, secured)
        hit = self.answers.get(path)
        if hit is not None:
            await secured({"type": "http.response.start", "status": 200, "headers": hit[0]})
            return await secured({"type": "http.response.body", "body": hit[1]})
        return await self.app(scope, receive, self._keeping(path, secured))

    def _keeping(self, path: str, send):
        """``send``, keeping a copy of a 200 answer sent in one piece."""
        start: dict = {}

        async def keep(message):
            if message["type"] == "http.response.start":
                start.update(message)
            elif start.get("status") == 200 and not message.get("more_body", False):
                self.answers.put(path, list(start.get("headers", ())), message.get("body", b""))
            await send(message)

        return keep

    def refuse(self, scope, host: str) -> Response:
        path = scope.get("path", "/")
        message = (
            f"This server answers only to 127.0.0.1, localhost and [::1], not to the host “{host[:100]}”: "
            "open it at http://127.0.0.1:PORT/."
        )
        if path.endswith(".json") or path.startswith("/api/"):
            return _json({"error": message, "status": 400}, 400)
        page = self.renderer.error_page(root_for(path), 400, "Wrong host", message)
        return HTMLResponse(_utf8(page), status_code=400)


def _split_name(name: str) -> tuple[str, str]:
    """``"claim-752.json"`` -> ``("claim-752", "json")``; no suffix or ``.html`` -> ``"html"``."""
    for suffix in (".json", ".html"):
        if name.endswith(suffix):
            return name[: -len(suffix)], suffix[1:]
    return name, "html"


def create_app(
    build: Build | None = None, tracer: Tracer | None = None, warm: bool = False, prerender: bool = False
) -> FastAPI:
    """The site over a build, or over a tracer already made for one (see the module docstring
    for the routes).

    ``warm``: load the build and the front page in the background while the server starts, then
    every split's Explore. ``prerender`` (with ``warm``): then render every claim page once and
    keep it whole (a server under load: about 16 ms a claim in the background, then a claim page
    costs nothing); ``/api/build.json`` reports the progress under ``"server"``.
    """
    tracer = tracer or Tracer(build)
    renderer = Renderer(tracer, mode="server")
    encoded = _BytesCache()
    answers = _AnswerCache()
    app = FastAPI(title="claimtrace", docs_url=None, redoc_url=None, openapi_url=None)
    app.state.tracer = tracer
    app.state.explore_wait = EXPLORE_WAIT_SECONDS
    app.state.warmth = {"claim_pages_prerendered": 0, "claim_pages": None, "warm": not (warm and prerender)}
    app.mount("/static", StaticFiles(directory=str(STATIC)), name="static")

    def prerender_claim_pages() -> None:
        """Every claim page (``/claim/<id>.html``, the address Explore links to), rendered once and
        kept whole in the answer cache."""
        splits = {split: list(tracer.claims(split)) for split in C.SPLITS}
        app.state.warmth["claim_pages"] = sum(len(ids) for ids in splits.values())
        for ids in splits.values():
            for claim_id in ids:
                path = f"/claim/{claim_id}.html"
                if answers.get(path) is None:
                    body = _utf8(renderer.claim_page(tracer.trace(claim_id), root_for(path)))
                    answers.put(path, HTMLResponse(body).raw_headers, body)
                app.state.warmth["claim_pages_prerendered"] += 1
        app.state.warmth["warm"] = True

    def warm_up() -> None:
        try:
            tracer.warm()
            if prerender:
                prerender_claim_pages()
        except DataError:  # a stage not built or a damaged file: the pages that need it say so
            app.state.warmth["warm"] = True

    if warm:  # a server (tests and the static export make apps without a warm-up)
        limit_malloc_arenas()
        threading.Thread(target=warm_up, name="claimtrace-warm", daemon=True).start()

    def html(body: str, status: int = 200) -> HTMLResponse:
        return HTMLResponse(_utf8(body), status_code=status)

    def not_found(request: Request, as_json: bool, message: str, hint: str | None = None):
        if as_json:
            return _json({"error": message, "status": 404}, 404)
        return html(renderer.error_page(root_for(request.url.path), 404, "Not found", message, hint), 404)

    def unknown_claim(request: Request, claim_id: str, as_json: bool):
        return not_found(
            request,
            as_json,
            f"There is no claim “{claim_id}” in the train, dev or test file.",
            "Claim ids look like claim-752. Explore lists every claim of each split.",
        )

    # -- the walkthrough -----------------------------------------------------------------------

    def claim_response(request: Request, claim_id: str, kind: str):
        try:
            result = tracer.trace(claim_id)
        except UnknownClaim:
            return unknown_claim(request, claim_id, kind == "json")
        try:
            if kind == "json":
                return encoded.response(result)
            return html(renderer.claim_page(result, root_for(request.url.path)))
        finally:
            tracer.first_page_served.set()  # the Explore warm-up may start now

    @app.get("/")
    def index(request: Request):
        return claim_response(request, WALKTHROUGH_CLAIM, "html")

    @app.get("/index.html")
    def index_html(request: Request):
        return claim_response(request, WALKTHROUGH_CLAIM, "html")

    @app.get("/index.json")
    def index_json(request: Request):
        return claim_response(request, WALKTHROUGH_CLAIM, "json")

    @app.get("/claim/{name}")
    def claim(request: Request, name: str):
        claim_id, kind = _split_name(name)
        return claim_response(request, claim_id, kind)

    @app.get("/claim")
    def claim_list(request: Request):
        return RedirectResponse("/explore/dev.html", status_code=307)

    # -- explore -------------------------------------------------------------------------------

    def explore_response(request: Request, split: str, kind: str):
        if split not in C.SPLITS:
            return not_found(
                request, kind == "json", f"There is no split “{split}”.", "The splits are dev, train and test."
            )
        result = tracer.explore_when_ready(split, app.state.explore_wait)
        if result is None:
            progress = {k: v for k, v in tracer.progress.items() if k.startswith(split + "/")}
            if kind == "json":
                return _json(
                    {"status": "computing", "split": split, "progress": progress, "retry_after_seconds": 10}, 202
                )
            page = renderer.computing_page(root_for(request.url.path), split, progress)
            return HTMLResponse(page, status_code=202, headers={"Retry-After": "10"})
        if kind == "json":
            return encoded.response(result)
        return html(renderer.explore_page(result, root_for(request.url.path)))

    @app.get("/explore")
    def explore(request: Request):
        return explore_response(request, "dev", "html")

    @app.get("/explore.json")
    def explore_json(request: Request):
        return explore_response(request, "dev", "json")

    @app.get("/explore/{name}")
    def explore_split(request: Request, name: str):
        split, kind = _split_name(name)
        return explore_response(request, split, kind)

    @app.get("/predictions/{split}/{name}")
    def row_predictions(request: Request, split: str, name: str):
        """One scoreboard row's predictions in the course's shape (explore.scoreboard_section)."""
        row, kind = _split_name(name)
        if kind != "json":
            return not_found(request, True, "Predictions are JSON: ask for ROW.json.")
        try:
            return encoded.response(predictions_of(tracer.build, split, row))
        except StageMissing:
            raise  # the stage_missing handler: 503, naming what to build
        except DataError as err:  # an unknown row or split
            return not_found(request, True, str(err))

    # -- live ----------------------------------------------------------------------------------

    def live_response(request: Request, text: str | None, claim_id: str | None, kind: str):
        root = root_for(request.url.path)
        error, status, result = None, 200, None
        shown_text = None if text is None else text[:MAX_TEXT_CHARS]
        problem = None if text is None else text_problem(text)
        try:
            if problem is not None:
                raise BadText(problem)
            if text is not None:
                result = tracer.trace_text(text)
            else:
                result = tracer.trace(claim_id or WALKTHROUGH_CLAIM)
        except BadText as err:
            error, status = str(err), 413 if len(text or "") > MAX_TEXT_CHARS else 400
        except UnknownClaim:
            return unknown_claim(request, claim_id or "", kind == "json")
        if kind == "json":
            return _json({"error": error, "status": status} if error else result, status)
        return html(
            renderer.live_page(
                root,
                result,
                text=shown_text if shown_text is not None else (result["claim"]["text"] if result else ""),
                error=error,
            ),
            status,
        )

    @app.get("/live")
    def live(request: Request, text: str | None = None, claim: str | None = None):
        return live_response(request, text, claim, "html")

    @app.get("/live.html")
    def live_html(request: Request, text: str | None = None, claim: str | None = None):
        return live_response(request, text, claim, "html")

    @app.get("/live.json")
    def live_json(request: Request, text: str | None = None, claim: str | None = None):
        return live_response(request, text, claim, "json")

    async def read_text(request: Request) -> tuple[str | None, str | None, int]:
        """The ``text`` of a POST body (JSON or form): (text, None, 200), or (None, error, status)."""
        declared = request.headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > MAX_BODY_BYTES:
            return (
                None,
                (
                    f"That request is {int(declared):,} bytes; a claim here may have at most "
                    f"{MAX_TEXT_CHARS:,} characters."
                ),
                413,
            )
        body = b""
        async for chunk in request.stream():
            body += chunk
            if len(body) > MAX_BODY_BYTES:
                return (
                    None,
                    f"That request is too large; a claim here may have at most {MAX_TEXT_CHARS:,} characters.",
                    413,
                )
        try:
            raw = body.decode("utf-8")
        except UnicodeDecodeError:
            return None, "The request body is not UTF-8 text.", 400
        content_type = request.headers.get("content-type", "")
        if "json" in content_type:
            try:
                value = json.loads(raw) if raw.strip() else {}
            except json.JSONDecodeError as err:
                return None, f"The request body is not valid JSON ({err.msg}).", 400
            except ValueError as err:  # an integer of more than 4,300 digits
                return None, f"The request body is not JSON this server reads ({err}).", 400
            except RecursionError:
                return None, "The request body nests too deeply to be a claim.", 400
            if not isinstance(value, dict):
                return None, 'The request body must be a JSON object like {"text": "..."}.', 400
            text = value.get("text")
            if text is not None and not isinstance(text, str):
                return None, "“text” must be a string.", 400
            return text if text is not None else "", None, 200
        fields = parse_qs(raw, keep_blank_values=True)
        return fields.get("text", [""])[0], None, 200

    @app.post("/live")
    @app.post("/live.html")
    async def live_post(request: Request):
        text, error, status = await read_text(request)
        if error:
            return html(renderer.live_page(root_for(request.url.path), None, text="", error=error), status)
        return live_response(request, text, None, "html")

    @app.get("/api/trace")
    def api_trace(request: Request, text: str | None = None, claim: str | None = None):
        if text is None and claim is not None:
            return claim_response(request, claim, "json")
        return live_response(request, text if text is not None else "", None, "json")

    @app.post("/api/trace")
    async def api_trace_post(request: Request):
        text, error, status = await read_text(request)
        if error:
            return _json({"error": error, "status": status}, status)
        return live_response(request, text, None, "json")

    @app.get("/api/table.json")
    def api_table():
        try:
            return encoded.response(tracer.table())
        except StageMissing as err:
            return _json({"error": err.reason, "status": 503, "stage": err.stage}, 503)

    @app.get("/predictions/{name}")
    def predictions(request: Request, name: str):
        """The build's predictions for a split, in the course's shape (a download on Explore)."""
        split, kind = _split_name(name)
        if split not in C.SPLITS or kind != "json":
            return not_found(
                request,
                True,
                f"There are no predictions “{name}”.",
                "They are predictions/<split>.json: dev, train, test.",
            )
        return _json(tracer.build.course_predictions(split))

    @app.get("/api/build.json")
    def api_build():
        return _json({**tracer.build_info(), "server": dict(app.state.warmth)})

    # -- errors ----------------------------------------------------------------------------------

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException):
        as_json = request.url.path.endswith(".json") or request.url.path.startswith("/api/")
        if exc.status_code == 404:
            return not_found(
                request,
                as_json,
                f"Nothing here: {request.url.path}",
                "The walkthrough is at the top of the site, Explore lists every claim.",
            )
        message = str(exc.detail)
        if as_json:
            return _json({"error": message, "status": exc.status_code}, exc.status_code)
        return html(renderer.error_page(root_for(request.url.path), exc.status_code, "Error", message), exc.status_code)

    @app.exception_handler(StageMissing)
    async def stage_missing(request: Request, exc: StageMissing):
        as_json = request.url.path.endswith(".json") or request.url.path.startswith("/api/")
        message = sections.public_paths(f"The {exc.stage} stage is not built yet: {exc.reason}", tracer.build.root)
        if as_json:
            return _json({"error": message, "status": 503, "stage": exc.stage}, 503)
        return html(renderer.error_page(root_for(request.url.path), 503, "Not built yet", message), 503)

    @app.exception_handler(DataError)
    async def damaged(request: Request, exc: DataError):
        """A build file that cannot be read (StageMissing is a DataError, answered above)."""
        as_json = request.url.path.endswith(".json") or request.url.path.startswith("/api/")
        message = sections.public_paths(f"The build cannot be read: {exc}", tracer.build.root)  # no machine paths
        if as_json:
            return _json({"error": message, "status": 503}, 503)
        return html(renderer.error_page(root_for(request.url.path), 503, "The build is damaged", message), 503)

    app.add_middleware(Guard, renderer=renderer, answers=answers)
    return app


# -- serving ---------------------------------------------------------------------------------------

#: A connection must deliver a request's headers within this many seconds of opening, or of its
#: previous answer, else it is closed: a slowloris client (headers a byte at a time) holds no
#: connection longer. Browsers send the headers in one packet.
HEADER_TIMEOUT_SECONDS = 5.0
#: Idle keep-alive connections are closed after this many seconds (uvicorn's setting).
KEEP_ALIVE_SECONDS = 5
#: Connections at once beyond which uvicorn answers 503 at once, rather than queue without bound.
MAX_CONNECTIONS = 1024


def _header_deadline_protocol():
    """uvicorn's HTTP protocol class with a deadline for each request's headers (made on first
    use: uvicorn is only needed to serve)."""
    from uvicorn.protocols.http.auto import AutoHTTPProtocol

    class HeaderDeadline(AutoHTTPProtocol):  # type: ignore[misc, valid-type]
        """Closes the connection when no request has started (its headers all read) within
        HEADER_TIMEOUT_SECONDS of the connection opening or of the last response."""

        _deadline = None
        _waiting_since_cycle = None

        def _arm(self) -> None:
            if self._deadline is not None:
                self._deadline.cancel()
            self._waiting_since_cycle = self.cycle  # a new request replaces the cycle
            self._deadline = self.loop.call_later(HEADER_TIMEOUT_SECONDS, self._expire)

        def _expire(self) -> None:
            self._deadline = None
            if self.cycle is self._waiting_since_cycle and not self.transport.is_closing():
                self.transport.close()

        def connection_made(self, transport) -> None:
            super().connection_made(transport)
            self._arm()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            if not self.transport.is_closing():
                self._arm()

        def connection_lost(self, exc) -> None:
            if self._deadline is not None:
                self._deadline.cancel()
            super().connection_lost(exc)

    return HeaderDeadline


def __getattr__(name: str):
    """``HeaderDeadline``: the protocol class by name, for uvicorn's worker processes (made on
    first use: uvicorn is only needed to serve)."""
    if name == "HeaderDeadline":
        return _header_deadline_protocol()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class WorkerSettings:
    """What a worker process of ``claimtrace serve --workers N`` opens, passed through the
    environment it inherits (uvicorn starts each worker from an import string, :attr:`FACTORY`)."""

    FACTORY = "claimtrace.web.app:app_from_environment"
    _VARIABLES = ("CLAIMTRACE_SERVE_WORKDIR", "CLAIMTRACE_SERVE_DATA", "CLAIMTRACE_SERVE_PRERENDER")

    def __init__(self, workdir, data_dir, prerender: bool):
        self.workdir, self.data_dir, self.prerender = str(workdir), str(data_dir), bool(prerender)

    def export(self) -> None:
        values = (self.workdir, self.data_dir, "1" if self.prerender else "")
        os.environ.update(dict(zip(self._VARIABLES, values)))

    @classmethod
    def from_environment(cls) -> WorkerSettings:
        missing = [name for name in cls._VARIABLES[:2] if not os.environ.get(name)]
        if missing:
            raise DataError(f"{', '.join(missing)}: not set (start workers with `claimtrace serve --workers N`)")
        workdir, data_dir, prerender = (os.environ.get(name, "") for name in cls._VARIABLES)
        return cls(workdir, data_dir, prerender == "1")


def app_from_environment() -> FastAPI:
    """uvicorn's factory in each worker process: the app over the build :class:`WorkerSettings`
    names, warming up (and pre-rendering) as a one-process server does."""
    settings = WorkerSettings.from_environment()
    choose_data_dir(settings.data_dir)  # the folder every stage finds, as the CLI sets it for a command
    build = Build(settings.workdir, settings.data_dir)
    return create_app(build, warm=True, prerender=settings.prerender)


def server_config(app, port: int, **options):
    """The uvicorn settings the site is served with: 127.0.0.1 only, the header deadline, the
    keep-alive and connection limits above; ``options`` add to or override them. ``app`` is
    the app, or an import string (``factory=True`` for :func:`app_from_environment`); with an
    import string the protocol is named by import string too (a worker process imports it)."""
    import uvicorn

    settings = {
        "host": "127.0.0.1",
        "port": port,
        "log_level": "warning",
        "http": f"{__name__}:HeaderDeadline" if isinstance(app, str) else _header_deadline_protocol(),
        "timeout_keep_alive": KEEP_ALIVE_SECONDS,
        "limit_concurrency": MAX_CONNECTIONS,
        "h11_max_incomplete_event_size": 16 * 1024,
        **options,
    }
    return uvicorn.Config(app, **settings)
