"""The server's routes, grouped by page (:data:`ROUTERS`, keyed by the page's name in
:data:`claimtrace.web.pages.PAGES`). Each answers from the page's registry entry: its data and
its template. What a handler needs is on ``request.app.state`` (:class:`SiteState`)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from urllib.parse import parse_qs

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from claimtrace import constants as C
from claimtrace.course import WALKTHROUGH_CLAIM
from claimtrace.errors import DataError
from claimtrace.evaluation.scorer import MAX_PREDICTIONS_BYTES
from claimtrace.web import pages
from claimtrace.web.render import ASSETS, STATIC, STATIC_FILES, Renderer, root_for
from claimtrace.web.responses import (
    EncodedCache,
    download,
    html_response,
    json_response,
    text_problem,
    wants_json,
)
from claimtrace.web.runs import with_runs
from claimtrace.web.tracer import MAX_TEXT_CHARS, BadText, StageMissing, Tracer, UnknownClaim
from claimtrace.web.views.explore import UnknownRow

#: How long an Explore request waits for a split's verdicts before answering "being computed".
EXPLORE_WAIT_SECONDS = 20.0

#: Request bodies larger than this are refused before they are read whole. The character limit
#: decides, counted after decoding: a character takes at most 12 bytes on the wire (a 4-byte UTF-8
#: character percent-encoded in a form, or a JSON surrogate pair ``\\ud83d\\ude00``), so no text
#: within MAX_TEXT_CHARS is refused for its bytes; 4 KB more for the field name and the JSON.
MAX_BODY_BYTES = 12 * MAX_TEXT_CHARS + 4096


@dataclass
class SiteState:
    """What every route reads: the tracer, the renderer and the encoded-JSON cache."""

    tracer: Tracer
    renderer: Renderer
    encoded: EncodedCache = field(default_factory=EncodedCache)


def _site(request: Request) -> SiteState:
    return request.app.state.site


def split_name(name: str) -> tuple[str, str]:
    """``"claim-752.json"`` -> ``("claim-752", "json")``; no suffix or ``.html`` -> ``"html"``."""
    for suffix in (".json", ".html"):
        if name.endswith(suffix):
            return name[: -len(suffix)], suffix[1:]
    return name, "html"


def not_found(request: Request, message: str, hint: str | None = None, as_json: bool | None = None) -> Response:
    """404, as JSON or as a page: as the address asks unless ``as_json`` says."""
    if as_json is None:
        as_json = wants_json(request.url.path)
    if as_json:
        return json_response({"error": message, "status": 404}, 404)
    page = _site(request).renderer.error_page(root_for(request.url.path), 404, "Not found", message, hint)
    return html_response(page, 404)


def _unknown_claim(request: Request, claim_id: str, as_json: bool) -> Response:
    return not_found(
        request,
        f"There is no claim “{claim_id}” in the train, dev or test file.",
        "Claim ids look like claim-752. Explore lists every claim of each split.",
        as_json,
    )


# -- the walkthrough and every claim's page --------------------------------------------------------

walkthrough = APIRouter()
claim = APIRouter()


def claim_response(request: Request, page: pages.Page, claim_id: str, kind: str) -> Response:
    site = _site(request)
    run_key = request.query_params.get("run")
    run = site.tracer.runs.get(run_key) if run_key else None
    if run_key and run is None:
        return _unknown_run(request, run_key, kind == "json")
    try:
        result = page.data(site.tracer, claim_id)
    except UnknownClaim:
        return _unknown_claim(request, claim_id, kind == "json")
    try:
        if kind == "json":
            if run is not None:
                return json_response({**result, "run_box": site.tracer.runs.box(run, claim_id)})
            return site.encoded.response(result)
        if run is not None:
            return html_response(site.renderer.claim_page(result, root_for(request.url.path), run))
        return html_response(page.template(site.renderer, result, root_for(request.url.path)))
    finally:
        site.tracer.first_page_served.set()  # the Explore warm-up may start now


def _unknown_run(request: Request, key: str, as_json: bool) -> Response:
    return not_found(
        request,
        f"No run here is called “{key}”.",
        "Runs are the predictions files given to `claimtrace serve --predictions` and the ones uploaded on "
        "the Compare page; an upload is forgotten when the server stops.",
        as_json,
    )


@walkthrough.get("/")
@walkthrough.get("/index.html")
def index(request: Request):
    return claim_response(request, pages.WALKTHROUGH, WALKTHROUGH_CLAIM, "html")


@walkthrough.get("/index.json")
def index_json(request: Request):
    return claim_response(request, pages.WALKTHROUGH, WALKTHROUGH_CLAIM, "json")


@claim.get("/claim/{name}")
def claim_page(request: Request, name: str):
    claim_id, kind = split_name(name)
    return claim_response(request, pages.CLAIM, claim_id, kind)


@claim.get("/claim")
def claim_list(request: Request):
    return RedirectResponse("/explore/dev.html", status_code=307)


# -- Explore -----------------------------------------------------------------------------------------

explore = APIRouter()


def explore_response(request: Request, split: str, kind: str) -> Response:
    site = _site(request)
    if split not in C.SPLITS:
        return not_found(
            request, f"There is no split “{split}”.", "The splits are dev, train and test.", kind == "json"
        )
    result = site.tracer.explore_when_ready(split, request.app.state.explore_wait)
    result = None if result is None else with_runs(site.tracer.runs, result)
    if result is None:
        progress = {k: v for k, v in site.tracer.progress.items() if k.startswith(split + "/")}
        if kind == "json":
            return json_response(
                {"status": "computing", "split": split, "progress": progress, "retry_after_seconds": 10}, 202
            )
        page = site.renderer.computing_page(root_for(request.url.path), split, progress)
        return HTMLResponse(page, status_code=202, headers={"Retry-After": "10"})
    if kind == "json":
        return site.encoded.response(result)
    return html_response(pages.EXPLORE.template(site.renderer, result, root_for(request.url.path)))


@explore.get("/explore")
def explore_dev(request: Request):
    return explore_response(request, "dev", "html")


@explore.get("/explore.json")
def explore_dev_json(request: Request):
    return explore_response(request, "dev", "json")


@explore.get("/explore/{name}")
def explore_split(request: Request, name: str):
    split, kind = split_name(name)
    return explore_response(request, split, kind)


# -- predictions: a split's, and each scoreboard row's (Explore's downloads) -------------------------

predictions = APIRouter()
row_predictions = APIRouter()


@row_predictions.get("/predictions/{split}/{name}")
def row_predictions_json(request: Request, split: str, name: str):
    """One scoreboard row's predictions in the course's shape (explore.scoreboard_section)."""
    row, kind = split_name(name)
    if kind != "json":
        return not_found(request, "Predictions are JSON: ask for ROW.json.", as_json=True)
    try:
        answer = _site(request).encoded.response(pages.ROW_PREDICTIONS.data(_site(request).tracer, (split, row)))
        return download(answer, f"{split}-{row}.json")
    except UnknownRow as err:  # a damaged or missing file is the handlers' 503, naming no machine path
        return not_found(request, str(err), as_json=True)


@predictions.get("/predictions/{name}")
def split_predictions(request: Request, name: str):
    """The build's predictions for a split, in the course's shape (a download on Explore)."""
    split, kind = split_name(name)
    if split not in C.SPLITS or kind != "json":
        return not_found(
            request,
            f"There are no predictions “{name}”.",
            "They are predictions/<split>.json: dev, train, test.",
            as_json=True,
        )
    return download(json_response(pages.PREDICTIONS.data(_site(request).tracer, split)), f"{split}-predictions.json")


# -- live: a typed claim, and the model-input editor -------------------------------------------------

live = APIRouter()


def live_response(request: Request, text: str | None, claim_id: str | None, kind: str) -> Response:
    site = _site(request)
    error, status, result = None, 200, None
    shown_text = None if text is None else text[:MAX_TEXT_CHARS]
    problem = None if text is None else text_problem(text)
    try:
        if problem is not None:
            raise BadText(problem)
        result = site.tracer.trace_text(text) if text is not None else site.tracer.trace(claim_id or WALKTHROUGH_CLAIM)
    except BadText as err:
        error, status = str(err), 413 if len(text or "") > MAX_TEXT_CHARS else 400
    except UnknownClaim:
        return _unknown_claim(request, claim_id or "", kind == "json")
    if kind == "json":
        return json_response({"error": error, "status": status} if error else result, status)
    if shown_text is None:
        shown_text = result["claim"]["text"] if result else ""
    page = site.renderer.live_page(root_for(request.url.path), result, text=shown_text, error=error)
    return html_response(page, status)


async def read_body(request: Request, limit: int, what: str) -> tuple[bytes, str | None, int]:
    """A request's body, refused past ``limit`` bytes before it is read whole: (body, None, 200),
    or (b"", error, status)."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        return b"", f"That request is {int(declared):,} bytes; {what} here may have at most {limit:,}.", 413
    body = b""
    async for chunk in request.stream():
        body += chunk
        if len(body) > limit:
            return b"", f"That request is too large; {what} here may have at most {limit:,} bytes.", 413
    return body, None, 200


async def read_text(request: Request) -> tuple[str | None, str | None, int]:
    """The ``text`` of a POST body (JSON or form): (text, None, 200), or (None, error, status)."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > MAX_BODY_BYTES:
        too_large = (
            f"That request is {int(declared):,} bytes; a claim here may have at most {MAX_TEXT_CHARS:,} characters."
        )
        return None, too_large, 413
    body, error, status = await read_body(request, MAX_BODY_BYTES, "a claim")
    if error:
        return None, f"That request is too large; a claim here may have at most {MAX_TEXT_CHARS:,} characters.", 413
    try:
        raw = body.decode("utf-8")
    except UnicodeDecodeError:
        return None, "The request body is not UTF-8 text.", 400
    if "json" in request.headers.get("content-type", ""):
        return _json_text(raw)
    fields = parse_qs(raw, keep_blank_values=True)
    return fields.get("text", [""])[0], None, 200


def _json_text(raw: str) -> tuple[str | None, str | None, int]:
    """The ``text`` of a JSON body ``{"text": ...}``, or why there is none."""
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


@live.get("/live")
@live.get("/live.html")
def live_page(request: Request, text: str | None = None, claim: str | None = None):
    return live_response(request, text, claim, "html")


@live.get("/live.json")
def live_json(request: Request, text: str | None = None, claim: str | None = None):
    return live_response(request, text, claim, "json")


@live.post("/live")
@live.post("/live.html")
async def live_post(request: Request):
    text, error, status = await read_text(request)
    if error:
        page = _site(request).renderer.live_page(root_for(request.url.path), None, text="", error=error)
        return html_response(page, status)
    return live_response(request, text, None, "html")


@live.get("/api/trace")
def api_trace(request: Request, text: str | None = None, claim: str | None = None):
    if text is None and claim is not None:
        return claim_response(request, pages.CLAIM, claim, "json")
    return live_response(request, text if text is not None else "", None, "json")


@live.post("/api/trace")
async def api_trace_post(request: Request):
    text, error, status = await read_text(request)
    if error:
        return json_response({"error": error, "status": status}, status)
    return live_response(request, text, None, "json")


# -- compare: your system beside the notebook's ---------------------------------------------------

compare_index = APIRouter()
compare = APIRouter()


def _page_response(request: Request, page: pages.Page, data, kind: str) -> Response:
    site = _site(request)
    if kind == "json":
        return json_response(data)
    return html_response(page.template(site.renderer, data, root_for(request.url.path)))


@compare_index.get("/compare")
@compare_index.get("/compare/")
@compare_index.get("/compare/index.html")
def compare_index_page(request: Request):
    return _page_response(request, pages.COMPARE_INDEX, pages.COMPARE_INDEX.data(_site(request).tracer, None), "html")


@compare_index.get("/compare/index.json")
def compare_index_json(request: Request):
    return _page_response(request, pages.COMPARE_INDEX, pages.COMPARE_INDEX.data(_site(request).tracer, None), "json")


@compare.get("/compare/{name}")
def compare_page(request: Request, name: str):
    key, kind = split_name(name)
    try:
        data = pages.COMPARE.data(_site(request).tracer, key)
    except pages.UnknownRun:
        return _unknown_run(request, key, kind == "json")
    return _page_response(request, pages.COMPARE, data, kind)


@compare.post("/api/compare")
async def upload_run(request: Request):
    """An uploaded predictions file (the body's bytes): checked as the command line checks one,
    kept in memory under its digest; ``{"name", "digest", "split", "url"}`` or a 400 naming the
    claim and field."""
    body, error, status = await read_body(request, MAX_PREDICTIONS_BYTES, "a predictions file")
    if error:
        return json_response({"error": error, "status": status}, status)
    name = request.query_params.get("name") or None
    if name is not None and (len(name) > 80 or text_problem(name)):
        return json_response({"error": "A run’s name is at most 80 characters of text.", "status": 400}, 400)
    try:
        run = _site(request).tracer.runs.upload(body, name)
    except DataError as err:
        return json_response({"error": str(err), "status": 400}, 400)
    url = pages.COMPARE.path(run.digest)
    return json_response({"name": run.name, "digest": run.digest, "split": run.split, "url": url}, 201)


# -- the classifier's table and what the build holds -------------------------------------------------

table = APIRouter()
build = APIRouter()


@table.get("/api/table.json")
def api_table(request: Request):
    site = _site(request)
    try:
        return site.encoded.response(pages.TABLE.data(site.tracer, None))
    except StageMissing as err:
        return json_response({"error": err.reason, "status": 503, "stage": err.stage}, 503)


@build.get("/api/build.json")
def api_build(request: Request):
    return json_response({**pages.BUILD.data(_site(request).tracer, None), "server": dict(request.app.state.warmth)})


#: Each page's routes, by the page's name in :data:`claimtrace.web.pages.PAGES`.
# -- the site's static files: by their hashed names (kept a year), or their plain ones -------------

static = APIRouter()

#: A year: a hashed name's content never changes.
IMMUTABLE = "public, max-age=31536000, immutable"
_BY_NAME = {hashed: name for name, hashed in ASSETS.items()} | {name: name for name in STATIC_FILES}
_MEDIA = {"js": "text/javascript; charset=utf-8", "css": "text/css; charset=utf-8"}


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


ROUTERS = {
    "walkthrough": walkthrough,
    "claim": claim,
    "explore": explore,
    "live": live,
    "predictions": predictions,
    "row-predictions": row_predictions,
    "table": table,
    "build": build,
    "compare-index": compare_index,
    "compare": compare,
}
