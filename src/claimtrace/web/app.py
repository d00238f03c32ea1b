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
"""

from __future__ import annotations

import json
from urllib.parse import parse_qs

from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from fastapi.staticfiles import StaticFiles
from starlette.exceptions import HTTPException as StarletteHTTPException

from .. import constants as C
from ..artifacts import Build
from .render import STATIC, Renderer, root_for
from .tracer import DEFAULT_CLAIM, MAX_TEXT_CHARS, BadText, StageMissing, Tracer, UnknownClaim

#: How long an Explore request waits for a split's verdicts before answering "being computed".
EXPLORE_WAIT_SECONDS = 20.0

#: Request bodies larger than this are refused before they are read whole.
MAX_BODY_BYTES = 4 * MAX_TEXT_CHARS + 4096


def _encode(value) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def _json(value, status: int = 200) -> Response:
    return Response(_encode(value), status_code=status, media_type="application/json")


class _BytesCache:
    """Encoded JSON of immutable answers (traces, Explore, the table), keyed by the object's
    identity: the object is kept with its bytes, so a key never outlives its value."""

    def __init__(self, size: int = 1024):
        import threading
        from collections import OrderedDict

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


def _split_name(name: str) -> tuple[str, str]:
    """``"claim-752.json"`` -> ``("claim-752", "json")``; no suffix or ``.html`` -> ``"html"``."""
    for suffix in (".json", ".html"):
        if name.endswith(suffix):
            return name[: -len(suffix)], suffix[1:]
    return name, "html"


def create_app(build: Build | None = None, tracer: Tracer | None = None, warm: bool = False) -> FastAPI:
    """The site over a build, or over a tracer already made for one (see the module docstring
    for the routes)."""
    tracer = tracer or Tracer(build)
    renderer = Renderer(tracer, mode="server")
    encoded = _BytesCache()
    app = FastAPI(title="claimtrace", docs_url=None, redoc_url=None, openapi_url=None)
    app.state.tracer = tracer
    app.state.explore_wait = EXPLORE_WAIT_SECONDS
    app.mount("/static", StaticFiles(directory=str(STATIC)), name="static")

    if warm:  # load the build and the front page in the background while the server starts
        import threading

        threading.Thread(target=tracer.warm, name="claimtrace-warm", daemon=True).start()

    def html(body: str, status: int = 200) -> HTMLResponse:
        return HTMLResponse(body, status_code=status)

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
        if kind == "json":
            return encoded.response(result)
        return html(renderer.claim_page(result, root_for(request.url.path)))

    @app.get("/")
    def index(request: Request):
        return claim_response(request, DEFAULT_CLAIM, "html")

    @app.get("/index.html")
    def index_html(request: Request):
        return claim_response(request, DEFAULT_CLAIM, "html")

    @app.get("/index.json")
    def index_json(request: Request):
        return claim_response(request, DEFAULT_CLAIM, "json")

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
        from ..data import DataError
        from .explore import row_predictions as predictions_of

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
        try:
            if text is not None:
                result = tracer.trace_text(text)
            else:
                result = tracer.trace(claim_id or DEFAULT_CLAIM)
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

    @app.get("/api/build.json")
    def api_build():
        return _json(tracer.build_info())

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
        message = f"The {exc.stage} stage is not built yet: {exc.reason}"
        if as_json:
            return _json({"error": message, "status": 503, "stage": exc.stage}, 503)
        return html(renderer.error_page(root_for(request.url.path), 503, "Not built yet", message), 503)

    return app
