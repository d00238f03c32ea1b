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
    "/compare/",
    "/compare/{x}",
    "/compare/{x}.json",
    "/{x}",
]
POST_ROUTES = ["/api/trace", "/live", "/live.html", "/api/compare"]
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


def _check(response, unavailable_ok: bool = False) -> None:
    """Below 500 (or a 503, where a build file is missing or damaged), an error in the shape the
    address asks for, and the security headers."""
    ok = response.status_code < 500 or (unavailable_ok and response.status_code == 503)
    assert ok, (response.status_code, response.text[:300])
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
    names = [b"text", b"claim", b"run"]  # the routes' own parameters, with any value
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


# --- every route over a partial build, and over a build with one flipped byte in a file -------------

import os  # noqa: E402
import shutil  # noqa: E402

import pytest  # noqa: E402
from click.testing import CliRunner  # noqa: E402
from fastapi.testclient import TestClient  # noqa: E402

#: Every route with a real argument (the GETs a page links to, and the typed-claim APIs).
EVERY_ROUTE = [
    "/",
    "/index.json",
    "/claim/claim-2214.html",
    "/claim/claim-752.json",
    "/explore",
    "/explore/dev.html",
    "/explore/train.html",
    "/explore/test.html",
    "/explore/test.json",
    "/live",
    "/live.json?text=glaciers+are+melting",
    "/api/trace?claim=claim-752",
    "/predictions/dev.json",
    "/predictions/test/bm25+intended+notebook.json",
    "/predictions/dev/notebook+notebook+notebook.json",
    "/api/table.json",
    "/api/build.json",
    "/static/app.js",
    "/compare/",
    "/compare/index.json",
    "/claim/claim-752.html?run=nobody",
]

#: What each partial state lacks: a build made with --until STAGE, or killed in the classifier
#: stage after its train verdicts (the last stage is about 80% of a demo build's time).
NOT_BUILT = {
    "tagging": ("retrieval/", "bm25/", "classifier/", "scoreboard.json"),
    "retrieval": ("retrieval/bm25-", "bm25/", "classifier/", "scoreboard.json"),
    "bm25": ("classifier/", "scoreboard.json"),
    "classifier-killed": (
        "classifier/dev",
        "classifier/test",
        "classifier/more/",
        "classifier/summary.json",
        "classifier/inputs/test",
        "scoreboard.json",
    ),
}


def partial_copy(build_root, root, state: str):
    """A copy of the demo build as it stands when built with ``--until`` or killed: the later
    files absent and unrecorded (the manifest lists what the build wrote)."""
    shutil.copytree(build_root, root, copy_function=os.symlink, ignore=shutil.ignore_patterns(".build.lock"))
    manifest = json.loads((root / "manifest.json").read_text(encoding="utf-8"))
    for name in list(manifest["files"]):
        if name.startswith(NOT_BUILT[state]):
            (root / name).unlink()
            del manifest["files"][name]
    (root / "manifest.json").unlink()
    (root / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    return root


def _client(root, data_dir):
    from claimtrace.web.app import create_app
    from claimtrace.workdir.reader import BuildReader

    app = create_app(BuildReader(root, data_dir))
    app.state.explore_wait = 120  # the answer itself, not "being computed"
    return TestClient(app, raise_server_exceptions=False)


def _every_route(client, missing_word: str, hidden: str) -> dict[str, int]:
    """Every route's status; a 503 names what is missing and what to run; no answer shows
    ``hidden`` (the machine's folder)."""
    statuses = {}
    for route in EVERY_ROUTE:
        answer = client.get(route)
        _check(answer, unavailable_ok=True)
        assert hidden not in answer.text, (route, answer.text[answer.text.find(hidden) - 200 :][:400])
        statuses[route] = answer.status_code
        if answer.status_code == 503:
            assert missing_word in answer.text and "claimtrace build" in answer.text, (route, answer.text[:300])
    return statuses


@pytest.mark.parametrize("state", list(NOT_BUILT))
def test_every_route_and_command_over_a_partial_build(demo_build, data_dir, tmp_path, state):
    from claimtrace.cli.main import main

    root = partial_copy(demo_build.root, tmp_path / "w", state)
    with _client(root, data_dir) as client:
        statuses = _every_route(client, "not built yet", str(tmp_path))
    assert statuses["/claim/claim-2214.html"] == 200 and statuses["/explore/dev.html"] == 200
    for args in (
        ["site", "--out", str(tmp_path / "site"), "--split", "dev", "--limit", "2"],
        ["explain", "claim-752"],
        ["predict", "--split", "dev", "--out", str(tmp_path / "p.json")],
        ["evaluate", "--split", "dev"],
        ["verify"],
    ):
        result = CliRunner().invoke(main, ["--data", str(data_dir), *args, "--workdir", str(root)])
        assert result.exit_code in (0, 2), (args, result.output[-500:])
        assert "internal error" not in result.output and "Traceback" not in result.output
        if result.exit_code == 2:
            assert len(result.stderr.strip().splitlines()) == 1 and "claimtrace build" in result.stderr, result.stderr


def test_a_running_server_serves_a_build_completed_meanwhile(demo_build, data_dir, tmp_path):
    root = partial_copy(demo_build.root, tmp_path / "w", "bm25")
    with _client(root, data_dir) as client:
        assert client.get("/predictions/dev.json").status_code == 503
        assert not isinstance(client.get("/explore/dev.json").json()["claims"][0]["retrieved"], dict)  # a count
        for name in ("classifier", "scoreboard.json", "manifest.json"):  # the build completes
            target = root / name
            if target.is_dir():
                shutil.rmtree(target)
                shutil.copytree(demo_build.root / name, target)
            else:
                target.unlink(missing_ok=True)
                shutil.copyfile(demo_build.root / name, target)
        import time

        time.sleep(1.1)  # the server looks at the manifest at most once a second
        assert client.get("/predictions/dev.json").status_code == 200
        assert client.get("/explore/dev.json").json()["claims"][0]["retrieved"].keys() == {"alone", "notebook"}


#: Routes fetched over a build with a flipped byte: one per kind of file a page reads.
FLIPPED_ROUTES = [
    "/claim/claim-2214.html",
    "/claim/claim-752.json",
    "/explore/dev.json",
    "/live.json?text=sea+levels+rise",
    "/predictions/test/bm25+intended+notebook.json",
    "/predictions/dev.json",
    "/api/table.json",
]


def _recorded_files(build_root) -> list[str]:
    return sorted(json.loads((build_root / "manifest.json").read_text(encoding="utf-8"))["files"])


def test_every_route_over_a_build_with_one_flipped_byte_in_each_file(demo_build, data_dir, tmp_path):
    """Each recorded file in turn, one byte in its middle changed (its size kept): every route is
    answered, a 503 names the file and what to run, never a 500."""
    for index, name in enumerate(_recorded_files(demo_build.root)):
        root = tmp_path / f"w{index}"
        shutil.copytree(demo_build.root, root, copy_function=os.symlink, ignore=shutil.ignore_patterns(".build.lock"))
        target = root / name
        data = bytearray(target.read_bytes())
        data[len(data) // 2] ^= 0xFF
        target.unlink()
        target.write_bytes(bytes(data))
        with _client(root, data_dir) as client:
            for route in FLIPPED_ROUTES:
                answer = client.get(route)
                _check(answer, unavailable_ok=True)
                if answer.status_code == 503:
                    assert "claimtrace build" in answer.text, (name, route, answer.text[:300])
                    assert str(tmp_path) not in answer.text
