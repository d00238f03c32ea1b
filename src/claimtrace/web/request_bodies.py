"""What a POST body holds, read with a bound: an upload's bytes (:func:`read_body`), or a typed
claim's text and the scoring rule asked for (:func:`read_typed`, a JSON object or a form)."""

from __future__ import annotations

import json
from typing import Any, NamedTuple
from urllib.parse import parse_qs

from fastapi import Request

from claimtrace.web.typed_claims import MAX_TEXT_CHARS

__all__ = ["MAX_BODY_BYTES", "Body", "Typed", "read_body", "read_typed"]

#: Request bodies larger than this are refused before they are read whole. The character limit
#: decides, counted after decoding: a character takes at most 12 bytes on the wire (a 4-byte UTF-8
#: character percent-encoded in a form, or a JSON surrogate pair ``\\ud83d\\ude00``), so no text
#: within MAX_TEXT_CHARS is refused for its bytes; 4 KB more for the field name and the JSON.
MAX_BODY_BYTES = 12 * MAX_TEXT_CHARS + 4096


class Body(NamedTuple):
    """A request body as read: ``value`` (its bytes, or the typed claim's :class:`Typed`), or
    ``error`` and the ``status`` to answer it with."""

    value: Any
    error: str | None
    status: int


class Typed(NamedTuple):
    """A typed claim as a body gives it: its ``text``, and the ``rule`` field as sent (None: none
    sent; the route checks its value)."""

    text: str
    rule: str | None


async def read_body(request: Request, limit: int, what: str) -> Body:
    """A request's body, refused past ``limit`` bytes before it is read whole."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        return Body(b"", f"That request is {int(declared):,} bytes; {what} here may have at most {limit:,}.", 413)
    body = b""
    async for chunk in request.stream():
        body += chunk
        if len(body) > limit:
            return Body(b"", f"That request is too large; {what} here may have at most {limit:,} bytes.", 413)
    return Body(body, None, 200)


async def read_typed(request: Request) -> Body:
    """The ``text`` and ``rule`` of a POST body (JSON or form, :class:`Typed`), or why there are none."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > MAX_BODY_BYTES:
        too_large = (
            f"That request is {int(declared):,} bytes; a claim here may have at most {MAX_TEXT_CHARS:,} characters."
        )
        return Body(None, too_large, 413)
    read = await read_body(request, MAX_BODY_BYTES, "a claim")
    if read.error:
        return Body(
            None, f"That request is too large; a claim here may have at most {MAX_TEXT_CHARS:,} characters.", 413
        )
    try:
        raw = read.value.decode("utf-8")
    except UnicodeDecodeError:
        return Body(None, "The request body is not UTF-8 text.", 400)
    if "json" in request.headers.get("content-type", ""):
        return _json_text(raw)
    fields = parse_qs(raw, keep_blank_values=True)
    return Body(Typed(fields.get("text", [""])[0], fields.get("rule", [None])[0]), None, 200)


def _json_text(raw: str) -> Body:
    """The ``text`` and ``rule`` of a JSON body ``{"text": ..., "rule": ...}``, or why there are none."""
    try:
        value = json.loads(raw) if raw.strip() else {}
    except json.JSONDecodeError as err:
        return Body(None, f"The request body is not valid JSON ({err.msg}).", 400)
    except ValueError as err:  # an integer of more than 4,300 digits
        return Body(None, f"The request body is not JSON this server reads ({err}).", 400)
    except RecursionError:
        return Body(None, "The request body nests too deeply to be a claim.", 400)
    if not isinstance(value, dict):
        return Body(None, 'The request body must be a JSON object like {"text": "..."}.', 400)
    text, rule = value.get("text"), value.get("rule")
    for name, given in (("text", text), ("rule", rule)):
        if given is not None and not isinstance(given, str):
            return Body(None, f"“{name}” must be a string.", 400)
    return Body(Typed(text if text is not None else "", rule), None, 200)
