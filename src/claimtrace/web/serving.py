"""Serving the site: uvicorn's HTTP protocol with deadlines for each request's headers and body
(slowloris, slow bodies), the connection limit (a prompt 503 past it), the server layer's own
answers with the security headers."""

from __future__ import annotations

import socket

from claimtrace.web.middleware import SECURITY_HEADERS

#: A connection must deliver a request's headers within this many seconds of opening, or of its
#: previous answer, else it is closed: a slowloris client (headers a byte at a time) holds no
#: connection longer. Browsers send the headers in one packet.
HEADER_TIMEOUT_SECONDS = 5.0
#: A request's body must arrive whole within this many seconds of its headers, else the
#: connection is closed: a client sending a body a byte at a time holds no connection longer (a
#: claim's body is at most MAX_BODY_BYTES, about 120 KB: one or two packets on any link).
BODY_TIMEOUT_SECONDS = 5.0
#: Idle keep-alive connections are closed after this many seconds (uvicorn's setting).
KEEP_ALIVE_SECONDS = 5
#: Connections at once beyond which a new one is answered 503 at once (with the security
#: headers) and closed, rather than queued without bound; slots free as slow ones are closed.
MAX_CONNECTIONS = 1024
#: How long a refused connection (503) stays half-closed, reading and dropping its request, when
#: its client does not close it first.
REFUSED_LINGER_SECONDS = 2.0


def _raw_answer(status: int, reason: str, message: str) -> bytes:
    """A whole HTTP/1.1 answer that closes the connection, written by the server layer itself
    (before or instead of the app): the site's security headers included."""
    body = message.encode("utf-8")
    lines = [
        f"HTTP/1.1 {status} {reason}".encode("ascii"),
        b"content-type: text/plain; charset=utf-8",
        b"content-length: " + str(len(body)).encode("ascii"),
        b"connection: close",
        *(name + b": " + value for name, value in SECURITY_HEADERS),
    ]
    if status == 503:
        lines.append(b"retry-after: 5")
    return b"\r\n".join(lines) + b"\r\n\r\n" + body


def _no_delay(transport) -> None:
    """Send each write at once (``TCP_NODELAY``). A worker of ``serve --workers N`` serves a
    socket its supervisor opened, and its connections came without it: an answer's headers and
    body, two writes, then waited for the client's delayed acknowledgement on every request after a
    connection's first (docs/benchmarks.md, "Typed claims under concurrent load")."""
    connection = transport.get_extra_info("socket")
    if connection is not None and connection.family in (socket.AF_INET, socket.AF_INET6):
        try:
            connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except OSError:  # closed meanwhile
            pass


class _Deadlines:
    """What the site adds to uvicorn's HTTP protocol (mixed in before it, so ``super()`` is
    uvicorn's): the connection is closed when no request has started (its headers all read)
    within HEADER_TIMEOUT_SECONDS of the connection opening or of the last response, or when a
    request's body has not arrived whole within BODY_TIMEOUT_SECONDS of its headers. Past
    MAX_CONNECTIONS, a new connection is answered 503 and closed at once; the server's own 400 (a
    request h11 refuses: no Host, two Hosts) carries the security headers too."""

    _refused = False
    _deadline = None
    _waiting_since_cycle = None
    _body_deadline = None
    _body_cycle = None

    def send_400_response(self, msg: str) -> None:
        self.transport.write(_raw_answer(400, "Bad Request", f"{msg}\n"))
        self.transport.close()

    def data_received(self, data: bytes) -> None:
        if not self._refused and not self.transport.is_closing():  # refused (503) or cut off: nothing more is read
            super().data_received(data)

    def eof_received(self):
        if self._refused:
            self.transport.close()
            return None
        return super().eof_received()

    def handle_events(self) -> None:
        super().handle_events()
        cycle = self.cycle
        if cycle is None or cycle is self._body_cycle or self.transport.is_closing():
            return
        self._body_cycle = cycle  # a request whose headers have just arrived
        if getattr(cycle, "more_body", False):
            if self._body_deadline is not None:
                self._body_deadline.cancel()
            self._body_deadline = self.loop.call_later(BODY_TIMEOUT_SECONDS, self._body_expired, cycle)

    def _body_expired(self, cycle) -> None:
        self._body_deadline = None
        if self.cycle is cycle and getattr(cycle, "more_body", False) and not self.transport.is_closing():
            self.transport.close()

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
        _no_delay(transport)
        super().connection_made(transport)
        if len(self.connections) > MAX_CONNECTIONS:
            transport.write(_raw_answer(503, "Service Unavailable", "Too many connections: try again shortly.\n"))
            # Half-closed, not closed: a socket closed with the client's request unread answers it
            # with a reset, which discards the 503 the client has not read yet. The request is read
            # and dropped until the client closes, or for REFUSED_LINGER_SECONDS at most.
            self._refused = True
            transport.write_eof()
            self._deadline = self.loop.call_later(REFUSED_LINGER_SECONDS, transport.close)
            return
        self._arm()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing():
            self._arm()

    def connection_lost(self, exc) -> None:
        for deadline in (self._deadline, self._body_deadline):
            if deadline is not None:
                deadline.cancel()
        super().connection_lost(exc)


def _header_deadline_protocol():
    """uvicorn's HTTP protocol class with the site's deadlines and connection limit
    (:class:`_Deadlines`; made on first use: uvicorn is only needed to serve)."""
    from uvicorn.protocols.http.auto import AutoHTTPProtocol

    class HeaderDeadline(_Deadlines, AutoHTTPProtocol):  # type: ignore[misc, valid-type]
        """uvicorn's protocol with :class:`_Deadlines`."""

    return HeaderDeadline


def __getattr__(name: str):
    """``HeaderDeadline``: the protocol class by name, for uvicorn's worker processes (made on
    first use: uvicorn is only needed to serve)."""
    if name == "HeaderDeadline":
        return _header_deadline_protocol()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def server_config(app, port: int, **options):
    """The uvicorn settings the site is served with: 127.0.0.1 only, the header deadline, the
    keep-alive and connection limits above; ``options`` add to or override them. ``app`` is
    the app, or an app factory (``factory=True``: :meth:`claimtrace.cli.serve.WorkerSettings.factory`). The protocol
    is named by import string, so that the settings pickle (a worker process imports it)."""
    import uvicorn

    settings = {
        "host": "127.0.0.1",
        "port": port,
        "log_level": "warning",
        "http": f"{__name__}:HeaderDeadline",
        "timeout_keep_alive": KEEP_ALIVE_SECONDS,
        # uvicorn's own limit answers 503 without the site's headers: it stays as a backstop
        # above the protocol's (MAX_CONNECTIONS), which answers first.
        "limit_concurrency": 2 * MAX_CONNECTIONS,
        "h11_max_incomplete_event_size": 16 * 1024,
        **options,
    }
    return uvicorn.Config(app, **settings)
