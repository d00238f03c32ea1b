"""The site's limits and HTTP hygiene (docs/web.md, "Security and limits"): input checked before
it is trusted, HEAD, security headers, the Host check, no absolute path shown, a damaged build
answered 503, slowloris connections closed."""

from __future__ import annotations

import os
import re
import shutil
import socket
import threading
import time
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from claimtrace.web.app import create_app
from claimtrace.web.render import STATIC, TEMPLATES
from claimtrace.web.routes import MAX_BODY_BYTES
from claimtrace.web.serving import server_config
from claimtrace.web.tracer import MAX_TEXT_CHARS, Tracer
from claimtrace.web.views.status import public_paths
from claimtrace.workdir.reader import Build

PAGES = ["/", "/index.html", "/claim/claim-752.html", "/explore/dev.html", "/live.html", "/live", "/explore"]


# --- input -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("route", ["/api/trace", "/live", "/live.html"])
def test_a_lone_surrogate_is_a_400_not_a_500(web_client, route):
    response = web_client.post(route, content=b'{"text": "\\ud800 sea"}', headers={"content-type": "application/json"})
    assert response.status_code == 400
    assert "surrogate" in response.text


def test_a_number_of_5000_digits_is_a_400(web_client):
    body = b'{"text": 1' + b"0" * 5000 + b"}"
    response = web_client.post("/api/trace", content=body, headers={"content-type": "application/json"})
    assert response.status_code == 400 and response.json()["status"] == 400


def test_json_nested_too_deep_is_a_400(web_client):
    response = web_client.post("/api/trace", content=b"[" * 50_000, headers={"content-type": "application/json"})
    assert response.status_code == 400


def test_an_encoded_surrogate_in_a_path_or_query_is_answered(web_client):
    assert web_client.get("/claim/%ED%A0%80.json").status_code == 404
    assert web_client.get("/api/trace?claim=%ED%A0%80").status_code == 404
    assert web_client.get("/live.json?text=%ED%A0%80%00").status_code == 200


@pytest.mark.parametrize("how", ["json", "escaped json", "form"])
def test_the_character_limit_decides_not_the_bytes(web_client, how):
    """15,000 CJK characters are within the 20,000-character limit however they are sent (a
    form takes 9 bytes a character, escaped JSON 6); 20,001 are refused for their characters."""
    import json

    def send(text):
        if how == "form":
            return web_client.post("/api/trace", data={"text": text})
        body = json.dumps({"text": text}, ensure_ascii=how == "escaped json").encode()
        assert len(body) < MAX_BODY_BYTES
        return web_client.post("/api/trace", content=body, headers={"content-type": "application/json"})

    assert send("海" * 15_000).status_code == 200
    refused = send("海" * (MAX_TEXT_CHARS + 1))
    assert refused.status_code == 413 and "characters" in refused.json()["error"]


def test_a_body_over_the_byte_cap_is_refused_before_it_is_read(web_client):
    response = web_client.post("/api/trace", content=b"x" * (MAX_BODY_BYTES + 1))
    assert response.status_code == 413


# --- HTTP hygiene ----------------------------------------------------------------------------------


@pytest.mark.parametrize("path", [*PAGES, "/index.json", "/api/build.json", "/static/app.js"])
def test_head_answers_wherever_get_does(web_client, path):
    head, get = web_client.head(path), web_client.get(path)
    assert head.status_code == get.status_code == 200, path
    assert head.content == b"" and head.headers["content-type"] == get.headers["content-type"]


@pytest.mark.parametrize("path", [*PAGES, "/api/build.json", "/static/style.css", "/no/such/page", "/claim/x.json"])
def test_every_response_has_the_security_headers(web_client, path):
    headers = web_client.get(path).headers
    csp = headers["content-security-policy"]
    assert "script-src 'self'" in csp and "'unsafe-inline'" not in csp.split("script-src")[1].split(";")[0]
    assert "frame-ancestors 'none'" in csp
    assert headers["x-content-type-options"] == "nosniff"
    assert headers["x-frame-options"] == "DENY"
    assert headers["referrer-policy"] == "no-referrer"


def test_no_template_has_inline_script():
    """The Content-Security-Policy allows no inline script: no on* handler attribute, no
    <script> with code (JSON data blocks and the site's own script files are fine)."""
    for template in Path(TEMPLATES).glob("*.html"):
        text = template.read_text(encoding="utf-8")
        assert not re.search(r"<[^>]*\son[a-z]+\s*=", text, re.IGNORECASE), template.name
        for tag in re.findall(r"<script\b[^>]*>", text, re.IGNORECASE):
            assert "application/json" in tag or "src=" in tag, (template.name, tag)
        assert "javascript:" not in text.lower(), template.name
    assert "preventDefault" in (STATIC / "app-forms.js").read_text(encoding="utf-8")


@pytest.mark.parametrize("host", ["evil.example", "evil.example:8000", "127.0.0.1.evil.example", "10.0.0.1", ""])
def test_a_foreign_host_gets_400(web_client, host):
    for path in ("/", "/api/build.json"):
        response = web_client.get(path, headers={"host": host})
        assert response.status_code == 400, (host, path)
        assert "127.0.0.1" in response.text


@pytest.mark.parametrize("host", ["127.0.0.1", "127.0.0.1:8000", "localhost:1", "[::1]:8000", "LOCALHOST"])
def test_the_loopback_hosts_are_answered(web_client, host):
    assert web_client.get("/api/build.json", headers={"host": host}).status_code == 200


def test_build_json_shows_no_absolute_path(web_client, web_tracer):
    text = web_client.get("/api/build.json").text
    root = str(web_tracer.build.root.resolve())
    assert root not in text and str(web_tracer.build.root) not in text
    assert '"workdir":"."' in text


def test_public_paths_keeps_names_and_relative_paths():
    root = Path("/srv/work/demo")
    assert public_paths("/srv/work/demo", root) == "."
    assert public_paths("/srv/work/demo/classifier/dev.json: damaged", root) == "classifier/dev.json: damaged"
    assert public_paths({"x": ["/home/me/ckpt/classifier.safetensors"]}, root) == {"x": ["classifier.safetensors"]}
    assert public_paths("and/or 3/4", root) == "and/or 3/4"


# --- a damaged build -------------------------------------------------------------------------------


def test_a_damaged_build_file_is_a_503_naming_it(demo_build, tmp_path):
    work = tmp_path / "work"
    shutil.copytree(demo_build.root, work, copy_function=os.symlink)
    verdicts = work / "classifier" / "dev.json"
    content = verdicts.read_bytes()
    verdicts.unlink()
    verdicts.write_bytes(content[: len(content) // 2])
    with TestClient(create_app(tracer=Tracer(Build(work, demo_build.data_dir)))) as client:
        page = client.get("/claim/claim-752.html")
        assert page.status_code == 503 and "classifier/dev.json" in page.text and "claimtrace build" in page.text
        data = client.get("/claim/claim-752.json")
        assert data.status_code == 503 and "classifier/dev.json" in data.json()["error"]
        info = client.get("/api/build.json").json()
        assert info["stages"]["classifier"]["status"] == "damaged"
        assert "classifier/dev.json" in info["stages"]["classifier"]["reason"]
        assert info["stages"]["retrieval"]["status"] == "ok"


# --- slowloris -------------------------------------------------------------------------------------


#: The header deadline the slow-headers test runs with: the mechanism is the server's, the
#: length a setting (serving's 5 s would make the test wait 5 s).
TEST_DEADLINE_SECONDS = 1.5


def test_a_connection_sending_its_headers_slowly_is_closed(web_tracer, monkeypatch):
    """A client that sends its request a byte every 0.2 s is cut off after the header deadline
    (loopback only; bounded to 3 x the deadline)."""
    import uvicorn

    from claimtrace.web import serving

    monkeypatch.setattr(serving, "HEADER_TIMEOUT_SECONDS", TEST_DEADLINE_SECONDS)
    header_deadline = TEST_DEADLINE_SECONDS

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = uvicorn.Server(server_config(create_app(tracer=web_tracer), port, lifespan="off"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.05)
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=5) as slow:
            slow.settimeout(0.2)
            start = time.monotonic()
            closed_after = None
            request = b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: " + b"a" * 10_000
            for byte in request:
                if time.monotonic() - start > 3 * header_deadline:
                    break
                try:
                    slow.send(bytes([byte]))
                    if slow.recv(1024) == b"":
                        closed_after = time.monotonic() - start
                        break
                except TimeoutError:
                    continue
                except OSError:
                    closed_after = time.monotonic() - start
                    break
        assert closed_after is not None and closed_after < header_deadline + 2, closed_after
        # a normal client is still served at once
        with socket.create_connection(("127.0.0.1", port), timeout=5) as normal:
            normal.sendall(b"GET /api/build.json HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
            assert normal.recv(64).startswith(b"HTTP/1.1 200")
    finally:
        server.should_exit = True
        thread.join(timeout=10)


# --- answers kept ----------------------------------------------------------------------------------


def test_a_page_already_served_is_answered_without_the_tracer(web_tracer):
    """A walkthrough page, once served, is answered from its copy (under load it stays instant
    while new traces wait); an answer that is not a 200 is never kept."""
    app = create_app(tracer=Tracer(web_tracer.build))
    with TestClient(app) as client:
        first = client.get("/claim/claim-752.json")
        assert client.get("/claim/claim-9999.json").status_code == 404
        app.state.tracer.trace = None  # any call to it would now fail
        again = client.get("/claim/claim-752.json")
        assert again.status_code == 200 and again.content == first.content
        assert again.headers["x-frame-options"] == "DENY"
        assert client.head("/claim/claim-752.json").content == b""


def test_the_answer_cache_is_bounded_in_entries_and_bytes():
    from claimtrace.web.middleware import AnswerCache

    cache = AnswerCache(entries=3, size=1600)
    for i in range(10):
        cache.put(f"/p{i}", [], b"x" * 90)
    assert len(cache) == 3 and cache.get("/p9") is not None and cache.get("/p0") is None
    cache.put("/big", [], b"x" * 1000)  # more than a sixteenth of the bytes: not kept
    assert cache.get("/big") is None and cache.total == 270


# --- every byte served is checked; every answer has the headers --------------------------------------


def _flip(path: Path, offset: int) -> None:
    """One byte of ``path`` changed in place (its size stays: only its content check sees it)."""
    data = bytearray(path.read_bytes())
    data[offset] ^= 0xFF
    path.unlink()  # a copy of its own (the workdir's files may be links to the shared build)
    path.write_bytes(bytes(data))


def test_a_flipped_byte_in_the_passage_store_is_a_503_not_a_500(demo_build, tmp_path):
    work = tmp_path / "work"
    shutil.copytree(demo_build.root, work, copy_function=os.symlink)
    texts = work / "corpus" / "texts.bin"
    _flip(texts, texts.stat().st_size // 2)
    with TestClient(
        create_app(tracer=Tracer(Build(work, demo_build.data_dir))), raise_server_exceptions=False
    ) as client:
        for path in ("/claim/claim-2214.html", "/claim/claim-752.json", "/live.json?text=glaciers"):
            answer = client.get(path)
            assert answer.status_code == 503, (path, answer.status_code, answer.text[:300])
            assert "corpus/texts.bin" in answer.text and "claimtrace build" in answer.text
            assert str(tmp_path) not in answer.text
            assert answer.headers["x-content-type-options"] == "nosniff"


def test_a_bug_in_a_route_is_a_500_page_with_the_headers(web_tracer, monkeypatch):
    def broken(*args, **kwargs):
        raise ZeroDivisionError("a bug")

    app = create_app(tracer=web_tracer)
    monkeypatch.setattr(app.state.site.renderer, "live_page", broken)
    with TestClient(app, raise_server_exceptions=False) as client:
        answer = client.get("/live?text=x")
        assert answer.status_code == 500 and answer.headers["content-type"].startswith("text/html")
        assert "Internal Server Error" not in answer.text and "ZeroDivisionError" in answer.text
        assert answer.headers["content-security-policy"].startswith("default-src 'self'")


@pytest.mark.parametrize("damage", ["truncate", "manifest"])
def test_row_predictions_over_a_damaged_file_are_a_503_without_machine_paths(demo_build, tmp_path, damage):
    work = tmp_path / "work"
    shutil.copytree(demo_build.root, work)
    if damage == "truncate":
        more = work / "classifier" / "more" / "test.json"
        more.write_bytes(more.read_bytes()[:1000])
    else:
        (work / "manifest.json").write_text("{garbled", encoding="utf-8")
    with TestClient(
        create_app(tracer=Tracer(Build(work, demo_build.data_dir))), raise_server_exceptions=False
    ) as client:
        answer = client.get("/predictions/test/bm25+intended+notebook.json")
        assert answer.status_code == 503, (answer.status_code, answer.text[:300])
        assert str(tmp_path) not in answer.text and "claimtrace build" in answer.json()["error"]
        assert client.get("/predictions/test/no+such+row.json").status_code == 404


def _serve(app, **options):
    """``app`` served by uvicorn on a free port in a thread: (server, thread, port)."""
    import uvicorn

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = uvicorn.Server(server_config(app, port, lifespan="off", **options))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.05)
    return server, thread, port


def _head_of(port: int, request: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as client:
        client.sendall(request)
        answer = b""
        while b"\r\n\r\n" not in answer:
            chunk = client.recv(4096)
            if not chunk:
                break
            answer += chunk
        return answer.split(b"\r\n\r\n")[0].lower()


@pytest.mark.parametrize(
    "request_bytes",
    [
        b"GET / HTTP/1.1\r\nConnection: close\r\n\r\n",  # no Host
        b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",  # two
    ],
)
def test_the_server_layers_own_400_has_the_security_headers(web_tracer, request_bytes):
    server, thread, port = _serve(create_app(tracer=web_tracer))
    try:
        head = _head_of(port, request_bytes)
        assert head.startswith(b"http/1.1 400") and b"x-frame-options: deny" in head
        assert b"content-security-policy:" in head
    finally:
        server.should_exit = True
        thread.join(timeout=10)


def test_slow_bodies_are_cut_off_and_the_connection_limit_answers_503_with_headers(web_tracer, monkeypatch):
    """1,000 connections each send a POST's headers and one byte of its body: a normal client
    still gets a 200 within 10 s; past the connection limit a new client gets a prompt 503 with
    the security headers; the slow ones are closed after the body deadline, and the limit frees."""
    from claimtrace.web import serving

    monkeypatch.setattr(serving, "MAX_CONNECTIONS", 1_010)
    server, thread, port = _serve(create_app(tracer=web_tracer))
    slow = []
    try:
        request = b"POST /api/trace HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        request += b"Content-Length: 1000\r\n\r\n{"
        for _ in range(1_000):
            client = socket.create_connection(("127.0.0.1", port), timeout=10)
            client.sendall(request)
            slow.append(client)
        normal = time.monotonic()
        head = _head_of(port, b"GET /api/build.json HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        assert head.startswith(b"http/1.1 200") and time.monotonic() - normal < 10
        crowd = [socket.create_connection(("127.0.0.1", port), timeout=10) for _ in range(20)]  # past the limit
        refused = time.monotonic()
        heads = []
        for client in crowd:
            client.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            heads.append(client.recv(4096).split(b"\r\n\r\n")[0].lower())
            client.close()
        assert any(h.startswith(b"http/1.1 503") for h in heads), heads[:2]
        assert all(b"x-content-type-options: nosniff" in h for h in heads if h.startswith(b"http/1.1 503"))
        assert time.monotonic() - refused < 5
        still_open, answered = _wait_closed(slow, within=normal + serving.BODY_TIMEOUT_SECONDS + 20 - time.monotonic())
        assert not still_open and not answered, (len(still_open), answered[:1])  # each closed, none answered
        head = _head_of(port, b"GET /api/build.json HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        assert head.startswith(b"http/1.1 200")
    finally:
        for client in slow:
            client.close()
        server.should_exit = True
        thread.join(timeout=10)


def _wait_closed(clients: list[socket.socket], within: float) -> tuple[set, list[bytes]]:
    """Wait up to ``within`` seconds for the server to close each connection: (those still
    open, what any of them was answered instead of being closed)."""
    import selectors

    end = time.monotonic() + within
    still_open, answered = set(clients), []
    with selectors.DefaultSelector() as selector:
        for client in clients:
            selector.register(client, selectors.EVENT_READ)
        while still_open and time.monotonic() < end:
            for key, _ in selector.select(timeout=0.5):
                try:
                    data = key.fileobj.recv(4096)
                except OSError:  # a reset is a close too
                    data = b""
                if data:
                    answered.append(data)
                selector.unregister(key.fileobj)
                still_open.discard(key.fileobj)
    return still_open, answered


def test_typed_text_is_shown_isolated(web_client):
    """A right-to-left override in a typed claim cannot reorder the page around it."""
    page = web_client.get("/live", params={"text": "sea \u202etxet level"}).text
    assert "<bdi>“sea \u202etxet level”</bdi>" in page
