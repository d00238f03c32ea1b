"""Serving the site (claimtrace.web.serving): uvicorn's deadlines (slowloris, slow bodies), the connection limit and the server layer's own
answers, each with the security headers (docs/web.md, "Security and limits"; docs/benchmarks.md,
"Capacity": the load itself is measured by bench/bench_load.py, not here)."""

from __future__ import annotations

import socket
import threading
import time

import pytest

from claimtrace.web.app import create_app
from claimtrace.web.serving import server_config

# --- slowloris -------------------------------------------------------------------------------------


#: The header deadline the slow-headers test runs with: the mechanism is the server's, the
#: length a setting (serving's 5 s would make the test wait 5 s).
TEST_DEADLINE_SECONDS = 1.5


def test_a_connection_sending_its_headers_slowly_is_closed(demo_site_data, monkeypatch):
    """A client that sends its request a byte every 0.2 s is cut off after the header deadline
    (loopback only; bounded to 3 x the deadline)."""
    import uvicorn

    from claimtrace.web import serving

    monkeypatch.setattr(serving, "HEADER_TIMEOUT_SECONDS", TEST_DEADLINE_SECONDS)
    header_deadline = TEST_DEADLINE_SECONDS

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = uvicorn.Server(server_config(create_app(site_data=demo_site_data), port, lifespan="off"))
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
def test_the_server_layers_own_400_has_the_security_headers(demo_site_data, request_bytes):
    server, thread, port = _serve(create_app(site_data=demo_site_data))
    try:
        head = _head_of(port, request_bytes)
        assert head.startswith(b"http/1.1 400") and b"x-frame-options: deny" in head
        assert b"content-security-policy:" in head
    finally:
        server.should_exit = True
        thread.join(timeout=10)


def test_slow_bodies_are_cut_off_and_the_connection_limit_answers_503_with_headers(demo_site_data, monkeypatch):
    """1,000 connections each send a POST's headers and one byte of its body: a normal client
    still gets a 200 within 10 s; past the connection limit a new client gets a prompt 503 with
    the security headers; the slow ones are closed after the body deadline, and the limit frees."""
    from claimtrace.web import serving

    monkeypatch.setattr(serving, "MAX_CONNECTIONS", 1_010)
    server, thread, port = _serve(create_app(site_data=demo_site_data))
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


def test_every_connection_sends_its_writes_at_once():
    """A worker's connections (from a socket its supervisor opened) come without TCP_NODELAY: the
    protocol sets it, else an answer's second write waited for the client's delayed ACK (40 ms)."""
    import socket

    from claimtrace.web.serving import _no_delay

    class Transport:
        def __init__(self, sock):
            self.sock = sock

        def get_extra_info(self, name):
            return self.sock if name == "socket" else None

    with socket.create_server(("127.0.0.1", 0)) as server:
        client = socket.create_connection(server.getsockname())
        accepted, _ = server.accept()
        with client, accepted:
            accepted.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 0)
            _no_delay(Transport(accepted))
            assert accepted.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) == 1


def test_a_refused_client_reads_its_503_even_after_sending_its_request(demo_site_data, monkeypatch):
    """Past the limit the 503 is written and the connection half-closed: a client that sends its
    request and reads only later still gets the 503, not a reset (a socket closed with the
    request unread answers it with a reset, which discards what the client has not read)."""
    from claimtrace.web import serving

    monkeypatch.setattr(serving, "MAX_CONNECTIONS", 2)
    server, thread, port = _serve(create_app(site_data=demo_site_data))
    held = [socket.create_connection(("127.0.0.1", port), timeout=10) for _ in range(2)]
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=10) as client:
            client.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            time.sleep(0.5)  # the request has reached the server long before the client reads
            answer = b""
            while chunk := client.recv(4096):
                answer += chunk
        assert answer.lower().startswith(b"http/1.1 503") and b"x-content-type-options: nosniff" in answer.lower()
    finally:
        for client in held:
            client.close()
        server.should_exit = True
        thread.join(timeout=10)
