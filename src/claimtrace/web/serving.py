"""Serving the site: uvicorn's HTTP protocol with a deadline for each request's headers
(slowloris), the connection limits, and the worker processes of ``claimtrace serve --workers N``
(each opens the build its environment names)."""

from __future__ import annotations

import json
import os

from fastapi import FastAPI

from ..artifacts import Build
from ..data import choose_data_dir
from ..errors import DataError
from .app import create_app
from .tracer import Tracer

#: A connection must deliver a request's headers within this many seconds of opening, or of its
#: previous answer, else it is closed: a slowloris client (headers a byte at a time) holds no
#: connection longer. Browsers send the headers in one packet.
HEADER_TIMEOUT_SECONDS = 5.0
#: Idle keep-alive connections are closed after this many seconds (uvicorn's setting).
KEEP_ALIVE_SECONDS = 5
#: Connections at once beyond which uvicorn answers 503 at once, rather than queue without bound.
MAX_CONNECTIONS = 1024


def _header_deadline_protocol():
    """uvicorn's HTTP protocol class with a deadline for each request's headers (made on first
    use: uvicorn is only needed to serve)."""
    from uvicorn.protocols.http.auto import AutoHTTPProtocol

    class HeaderDeadline(AutoHTTPProtocol):  # type: ignore[misc, valid-type]
        """Closes the connection when no request has started (its headers all read) within
        HEADER_TIMEOUT_SECONDS of the connection opening or of the last response."""

        _deadline = None
        _waiting_since_cycle = None

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
            super().connection_made(transport)
            self._arm()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            if not self.transport.is_closing():
                self._arm()

        def connection_lost(self, exc) -> None:
            if self._deadline is not None:
                self._deadline.cancel()
            super().connection_lost(exc)

    return HeaderDeadline


def __getattr__(name: str):
    """``HeaderDeadline``: the protocol class by name, for uvicorn's worker processes (made on
    first use: uvicorn is only needed to serve)."""
    if name == "HeaderDeadline":
        return _header_deadline_protocol()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class WorkerSettings:
    """What a worker process of ``claimtrace serve --workers N`` opens, passed through the
    environment it inherits (uvicorn starts each worker from an import string, :attr:`FACTORY`)."""

    FACTORY = "claimtrace.web.serving:app_from_environment"
    _VARIABLES = (
        "CLAIMTRACE_SERVE_WORKDIR",
        "CLAIMTRACE_SERVE_DATA",
        "CLAIMTRACE_SERVE_PRERENDER",
        "CLAIMTRACE_SERVE_RUNS",
    )

    def __init__(self, workdir, data_dir, prerender: bool, runs=()):
        self.workdir, self.data_dir, self.prerender = str(workdir), str(data_dir), bool(prerender)
        #: (predictions file, name or None) pairs, each worker loads them (serve --predictions)
        self.runs = [(str(path), name) for path, name in runs]

    def export(self) -> None:
        values = (self.workdir, self.data_dir, "1" if self.prerender else "", json.dumps(self.runs))
        os.environ.update(dict(zip(self._VARIABLES, values)))

    @classmethod
    def from_environment(cls) -> WorkerSettings:
        missing = [name for name in cls._VARIABLES[:2] if not os.environ.get(name)]
        if missing:
            raise DataError(f"{', '.join(missing)}: not set (start workers with `claimtrace serve --workers N`)")
        workdir, data_dir, prerender, runs = (os.environ.get(name, "") for name in cls._VARIABLES)
        return cls(workdir, data_dir, prerender == "1", json.loads(runs or "[]"))


def app_from_environment() -> FastAPI:
    """uvicorn's factory in each worker process: the app over the build :class:`WorkerSettings`
    names, warming up (and pre-rendering) as a one-process server does."""
    settings = WorkerSettings.from_environment()
    choose_data_dir(settings.data_dir)  # the folder every stage finds, as the CLI sets it for a command
    tracer = Tracer(Build(settings.workdir, settings.data_dir))
    tracer.runs.give_all(settings.runs)
    tracer.runs.uploads = False  # each worker would keep its own: an upload's page could 404 on another
    return create_app(tracer=tracer, warm=True, prerender=settings.prerender)


def server_config(app, port: int, **options):
    """The uvicorn settings the site is served with: 127.0.0.1 only, the header deadline, the
    keep-alive and connection limits above; ``options`` add to or override them. ``app`` is
    the app, or an import string (``factory=True`` for :func:`app_from_environment`); with an
    import string the protocol is named by import string too (a worker process imports it)."""
    import uvicorn

    settings = {
        "host": "127.0.0.1",
        "port": port,
        "log_level": "warning",
        "http": f"{__name__}:HeaderDeadline" if isinstance(app, str) else _header_deadline_protocol(),
        "timeout_keep_alive": KEEP_ALIVE_SECONDS,
        "limit_concurrency": MAX_CONNECTIONS,
        "h11_max_incomplete_event_size": 16 * 1024,
        **options,
    }
    return uvicorn.Config(app, **settings)
