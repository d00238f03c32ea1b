"""A local data mirror (tests only): an HTTP server on 127.0.0.1 serving files by their place in
the data folder (``/comp90042-2024/dev-claims.json``), as a class's mirror or raw.githubusercontent
does: GET with an optional ``Range: bytes=N-`` (206 and the rest; 416 past the end).

It can be told to misbehave: ``cut`` ends a file's first answer after so many bytes (the
connection closes mid-body, as a killed download's does), ``ignore_range`` answers every request
with the whole file (200). It records each request's path and Range header.
"""

from __future__ import annotations

import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class DataMirror:
    """``files`` maps a path in the data folder to its bytes."""

    def __init__(self, files: dict[str, bytes], cut: dict[str, int] | None = None, ignore_range: bool = False):
        self.files = dict(files)
        self.cut = dict(cut or {})
        self.ignore_range = ignore_range
        self.requests: list[tuple[str, str | None]] = []
        self._server: ThreadingHTTPServer | None = None

    def __enter__(self) -> DataMirror:
        owner = self

        class Handler(_Handler):
            mirror = owner

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        return self

    def __exit__(self, *exc) -> None:
        self._server.shutdown()
        self._server.server_close()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"


class _Handler(BaseHTTPRequestHandler):
    mirror: DataMirror
    protocol_version = "HTTP/1.1"

    def log_message(self, *args) -> None:  # quiet: the tests read mirror.requests
        pass

    def do_GET(self) -> None:
        path = self.path.lstrip("/")
        asked = self.headers.get("Range")
        self.mirror.requests.append((path, asked))
        body = self.mirror.files.get(path)
        if body is None:
            self._answer(404, b"not here")
            return
        start = 0
        found = re.fullmatch(r"bytes=(\d+)-", asked or "")
        if found and not self.mirror.ignore_range:
            start = int(found.group(1))
            if start >= len(body):
                self._answer(416, b"", {"Content-Range": f"bytes */{len(body)}"})
                return
        status = 206 if start else 200
        headers = {"Content-Range": f"bytes {start}-{len(body) - 1}/{len(body)}"} if start else {}
        cut = self.mirror.cut.pop(path, None)
        self._answer(status, body[start:], headers, stop_after=cut)

    def _answer(self, status: int, body: bytes, headers: dict | None = None, stop_after: int | None = None) -> None:
        self.send_response(status)
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        if stop_after is not None:
            self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(body if stop_after is None else body[:stop_after])
        if stop_after is not None:
            self.wfile.flush()
            self.close_connection = True
