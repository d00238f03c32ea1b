"""No 500 from any request: generated bodies, query strings and paths to every route of the site.

Each answer must be below 500 and, when it is an error, a JSON error (JSON routes) or an HTML
page (the others). Bytes are percent-encoded by the test itself, so that query strings and paths
can carry what a browser would never send (invalid UTF-8, encoded surrogates, NUL).
"""

from __future__ import annotations

import json
from urllib.parse import quote_from_bytes

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

GET_ROUTES = [
    "/",
    "/index.html",
    "/index.json",
    "/claim/{x}",
    "/claim/{x}.json",
    "/explore/{x}",
    "/explore/{x}.json",
    "/live",
    "/live.html",
    "/live.json",
    "/api/trace",
    "/api/table.json",
    "/api/build.json",
    "/static/{x}",
    "/{x}",
]
POST_ROUTES = ["/api/trace", "/live", "/live.html"]
CONTENT_TYPES = [
    None,
    "application/json",
    "application/json; charset=latin-1",
    "application/x-www-form-urlencoded",
    "text/plain",
    "multipart/form-data; boundary=x",
    "application/octet-stream",
]

FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow], database=None)

#: Bytes worth trying: anything, and the UTF-8 (or not) of text with surrogates and controls.
raw_bytes = st.one_of(
    st.binary(max_size=60),
    st.text(max_size=40).map(lambda t: t.encode("utf-8", "surrogatepass")),
    st.sampled_from([b"\xed\xa0\x80 sea", b"\xff\xfe", b"\x00", b"claim-752", b"dev", b"%", b"..", b"a" * 300]),
)

#: JSON bodies that decode to something a handler must refuse or trace.
json_bodies = st.one_of(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=30),
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(["text", "claim", "x"]), inner),
        max_leaves=8,
    ).map(lambda value: json.dumps(value).encode()),
    st.sampled_from(
        [
            b'{"text": "\\ud800 sea"}',
            b'{"text": "sea \\udfff"}',
            b'{"text": 1' + b"0" * 5000 + b"}",
            b'{"text": 1e999}',
            b"[" * 50_000,
            b'{"text": "' + "海".encode() * 25_000 + b'"}',
            b'{"text": "\\u0000"}',
            b"",
            b"null",
        ]
    ),
)


def _check(response) -> None:
    assert response.status_code < 500, (response.status_code, response.text[:300])
    kind = response.headers.get("content-type", "")
    if response.status_code >= 400 and response.request.method != "HEAD":
        if "json" in kind:
            body = response.json()
            assert body["error"] and body["status"] == response.status_code
        else:
            assert "text/html" in kind and response.text.lstrip().lower().startswith("<!doctype html")
    assert response.headers["x-content-type-options"] == "nosniff"


@given(
    route=st.sampled_from(GET_ROUTES), segment=raw_bytes, params=st.lists(st.tuples(raw_bytes, raw_bytes), max_size=3)
)
@settings(FUZZ)
def test_any_get_is_answered_below_500(web_client, route, segment, params):
    path = route.replace("{x}", quote_from_bytes(segment, safe=""))
    query = "&".join(f"{quote_from_bytes(k, safe='')}={quote_from_bytes(v, safe='')}" for k, v in params)
    names = [b"text", b"claim"]  # the routes' own parameters, with any value
    query += "".join(f"&{quote_from_bytes(n)}={quote_from_bytes(v, safe='')}" for n, (_, v) in zip(names, params))
    _check(web_client.get(f"{path}?{query}" if query else path))


@given(route=st.sampled_from(POST_ROUTES), body=st.one_of(json_bodies, raw_bytes), kind=st.sampled_from(CONTENT_TYPES))
@settings(FUZZ)
def test_any_post_is_answered_below_500(web_client, route, body, kind):
    headers = {} if kind is None else {"content-type": kind}
    _check(web_client.post(route, content=body, headers=headers))


@given(
    route=st.sampled_from(POST_ROUTES),
    field=raw_bytes,
    extra=st.lists(st.tuples(raw_bytes, raw_bytes), max_size=2),
)
@settings(FUZZ)
def test_any_form_is_answered_below_500(web_client, route, field, extra):
    pairs = [(b"text", field), *extra]
    body = "&".join(f"{quote_from_bytes(k, safe='')}={quote_from_bytes(v, safe='')}" for k, v in pairs)
    _check(web_client.post(route, content=body, headers={"content-type": "application/x-www-form-urlencoded"}))


@given(method=st.sampled_from(["PUT", "DELETE", "PATCH", "OPTIONS", "HEAD"]), route=st.sampled_from(GET_ROUTES))
@settings(max_examples=40, deadline=None, database=None)
def test_any_method_is_answered_below_500(web_client, method, route):
    _check(web_client.request(method, route.replace("{x}", "claim-752")))
