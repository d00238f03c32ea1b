"""The one way a value becomes the JSON bytes an answer sends (imported by the site data and the
typed-claims processes as well as by the responses, so it depends on nothing of the site).

orjson writes them: a typed claim's trace (hundreds of its numbers a token's exact share, each
written with all 17 digits) took the standard library a large share of the trace, and takes
orjson a small part of that (docs/benchmarks.md, "Typed claims under concurrent load, and a
lecture hall"). Both write each number's shortest digits that
read back to the same float; orjson's exponents have no zero after the sign (``1e-7``, the
standard library's ``1e-07``): the same values once read. JSON has no NaN or infinity: orjson
writes ``null`` where the standard library wrote ``NaN``, which a browser's ``JSON.parse``
refuses.

What orjson refuses, the standard library writes as before: a lone surrogate (an unknown id
echoed back) as ``\\uXXXX`` escapes, valid JSON; an integer past 64 bits.

A page's data block (``<script type="application/json">``) is written by
:func:`json_for_script`, which escapes what could close the element.
"""

from __future__ import annotations

import json

import orjson
from markupsafe import Markup

__all__ = ["encode", "json_for_script"]

#: Dict keys that are not strings (ints, None) written as strings, as the standard library does.
_OPTIONS = orjson.OPT_NON_STR_KEYS


def _subclass(value):
    """A float subclass orjson does not take (numpy's float64) as the plain number the standard
    library writes (an int subclass orjson takes itself); anything else refused (orjson then
    raises, and :func:`encode` leaves it to the standard library, which refuses it too)."""
    if isinstance(value, float):
        return float(value)
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def encode(value) -> bytes:
    """``value`` as compact JSON in UTF-8."""
    try:
        return orjson.dumps(value, default=_subclass, option=_OPTIONS)
    except orjson.JSONEncodeError:
        return _standard(value)


def _standard(value) -> bytes:
    try:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate echoed back (an unknown id): \uXXXX escapes are valid JSON
        return json.dumps(value, ensure_ascii=True, separators=(",", ":")).encode("ascii")


def json_for_script(value) -> Markup:
    """JSON safe to place inside ``<script type="application/json">``: no ``<``, ``>``, ``&``
    or line separators survive literally, so no text can close the script element."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    for raw, escaped in (
        ("<", "\\u003c"),
        (">", "\\u003e"),
        ("&", "\\u0026"),
        ("\u2028", "\\u2028"),
        ("\u2029", "\\u2029"),
    ):
        text = text.replace(raw, escaped)
    return Markup(text)
