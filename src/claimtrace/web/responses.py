"""How the server answers: JSON encoded once per immutable answer (:func:`~claimtrace.web.encoding.encode`), HTML in UTF-8, and an error
as JSON or as a page, whichever the address asks for (:func:`wants_json`)."""

from __future__ import annotations

import re
from pathlib import Path

from fastapi.responses import HTMLResponse, Response

from claimtrace.errors import DataError, Missing
from claimtrace.lib.lru import LRU
from claimtrace.web.encoding import encode
from claimtrace.web.render import Renderer, root_for
from claimtrace.web.views.status import public_paths
from claimtrace.workdir.layout import BEING_BUILT

_SURROGATE = re.compile("[\ud800-\udfff]")


def utf8(text: str) -> bytes:
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


def json_response(value, status: int = 200) -> Response:
    return Response(encode(value), status_code=status, media_type="application/json")


def download(response: Response, filename: str) -> Response:
    """A JSON file the browser saves as ``filename`` (``<split>-<row>.json``) rather than opens."""
    safe = "".join(ch if ch.isalnum() or ch in "+-_." else "_" for ch in filename)
    response.headers["Content-Disposition"] = f'attachment; filename="{safe}"'
    return response


def html_response(body: str, status: int = 200) -> HTMLResponse:
    return HTMLResponse(utf8(body), status_code=status)


def wants_json(path: str) -> bool:
    """Whether an address asks for JSON (a ``.json`` twin or the API), not a page."""
    return path.endswith(".json") or path.startswith("/api/")


def error_response(
    renderer: Renderer,
    path: str,
    status: int,
    heading: str,
    message: str,
    hint: str | None = None,
    refresh: int | None = None,
    **fields,
) -> Response:
    """An error as the address asks for it: ``{"error", "status", **fields}`` or an error page
    (whose script asks the address again every ``refresh`` seconds, when given, and reloads once
    the answer is another)."""
    if wants_json(path):
        return json_response({"error": message, "status": status, **fields}, status)
    return html_response(renderer.error_page(root_for(path), status, heading, message, hint, refresh), status)


def unreadable_build(err: DataError, root: Path) -> tuple[str, str, dict]:
    """A build file a request could not read (a 503), as every answer says it: its heading, its
    message (no machine path) and the JSON fields beside ``"error"`` and ``"status"``. A missing
    file is "not built yet", or "being built" while a build writes the workdir (the reader's
    reason says which: ``Workdir.not_built_hint``); any other, damaged. The server's handlers and
    the typed-claims processes answer alike."""
    if not isinstance(err, Missing):
        return "The build is damaged", public_paths(f"The build cannot be read: {err}", root), {}
    if err.reason.endswith(BEING_BUILT):
        message = public_paths(f"The {err.stage} stage is being built: {err.reason}", root)
        return "Being built", message, {"stage": err.stage, "building": True}
    return (
        "Not built yet",
        public_paths(f"The {err.stage} stage is not built yet: {err.reason}", root),
        {"stage": err.stage},
    )


class EncodedCache:
    """Encoded JSON of immutable answers (traces, Explore, the table), keyed by the object's
    identity: the object is kept with its bytes, so a key never outlives its value."""

    def __init__(self, size: int = 1024):
        self.items: LRU[int, tuple[object, bytes]] = LRU(size)

    def response(self, value) -> Response:
        hit = self.items.get(id(value))
        if hit is not None and hit[0] is value:
            return Response(hit[1], media_type="application/json")
        body = encode(value)
        self.items.put(id(value), (value, body))
        return Response(body, media_type="application/json")
