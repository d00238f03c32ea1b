"""What stands in front of every route, as plain ASGI middleware (no task or copy per request),
outermost first:

* :class:`SecurityHeaders`: SECURITY_HEADERS on every response; HEAD answered as GET without
  the body;
* :class:`Failsafe`: whatever a route raised becomes an answer with those headers: a build file
  that cannot be read a 503 naming it (no machine path), anything else a 500 page, never
  Starlette's bare text;
* :class:`BuildWatch`: a build that completes or is repaired while the server runs is served
  at once (the site's state is made again when the build's manifest changes);
* :class:`HostGuard`: a Host that is not the loopback is refused (400: DNS rebinding);
* :class:`FinalAnswers`: a walkthrough or Explore page already served is answered from its copy,
  in the event loop: under load, those stay instant while new traces wait for the CPU.
"""

from __future__ import annotations

import re
import threading
import time
import traceback

from claimtrace.errors import DataError
from claimtrace.lib.lru import LRU
from claimtrace.web.policy import LLM_PAGES, policy
from claimtrace.web.render import Renderer
from claimtrace.web.responses import error_response
from claimtrace.web.views.status import public_paths

#: Host names the server answers to: the loopback it listens on, and the TestClient's name. Any
#: other Host is a page of another site reaching 127.0.0.1 through DNS rebinding.
ALLOWED_HOSTS = frozenset({"127.0.0.1", "localhost", "[::1]", "testserver"})

#: Sent with every response. No inline script runs (app.js is the only script; the JSON data
#: blocks are not run); style attributes stay allowed for the inline CSS bars of the charts. The
#: pages that call a visitor's LLM get a wider connect-src (:func:`claimtrace.web.policy.policy_for`).
SECURITY_HEADERS = (
    (b"content-security-policy", policy().encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"no-referrer"),
    (b"cross-origin-opener-policy", b"same-origin"),
)

#: Paths whose 200 answer never changes while the server runs (a build is read, never changed,
#: and a trace or an Explore once computed is final): kept whole by :class:`FinalAnswers`.
_FINAL_ANSWER = re.compile(
    r"/((index|walkthrough)(\.(html|json))?)?|/claim/[^/]+|/explore(\.json|/[^/]+)?|/preview/[^/]+"
)
#: Whole answers kept (every claim page of every split fits: their size, docs/benchmarks.md,
#: "Capacity: an open-loop mixed load") ...
ANSWER_CACHE_ENTRIES = 4096
#: ... within this many bytes.
ANSWER_CACHE_BYTES = 256 * 2**20


class SecurityHeaders:
    """Adds SECURITY_HEADERS to every response (an LLM page's policy in place of the site's:
    ``llm_origins``, the base URLs the server was told of); answers HEAD as GET without the body."""

    def __init__(self, app, llm_origins: tuple[str, ...] = ()):
        self.app = app
        wider = (b"content-security-policy", policy(llm_origins).encode())
        self.llm_headers = (wider, *SECURITY_HEADERS[1:])

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        head = scope["method"] == "HEAD"
        if head:
            scope = {**scope, "method": "GET"}

        headers = self.llm_headers if LLM_PAGES.fullmatch(scope.get("path", "/")) else SECURITY_HEADERS

        async def secured(message):
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", ()), *headers]}
            elif head and message["type"] == "http.response.body":
                message = {**message, "body": b""}  # Content-Length stays the GET body's, as HEAD wants
            await send(message)

        return await self.app(scope, receive, secured)


class Failsafe:
    """The last answer of a request whose route raised: a DataError (a build file damaged or not
    built: the handlers answer those raised in a route, this catches one raised elsewhere) is a
    503 naming the file without the machine's paths; anything else is a bug, said as a 500 page
    (its traceback on the server's stderr). Only before the answer has started: after, the
    connection is closed by the server."""

    def __init__(self, app, site):
        self.app = app
        self.site = site  # a callable: the current SiteState

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        started = False

        async def watched(message):
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            return await self.app(scope, receive, watched)
        except Exception as err:  # noqa: BLE001 - the one place a request's failure is answered
            if started:
                raise
            answer = self.answer(scope.get("path", "/"), err)
        return await answer(scope, receive, send)

    def answer(self, path: str, err: Exception):
        site = self.site()
        if isinstance(err, DataError):
            message = public_paths(f"The build cannot be read: {err}", site.site_data.build.root)
            return error_response(site.renderer, path, 503, "The build is damaged", message)
        traceback.print_exception(err)
        message = f"claimtrace could not answer this ({type(err).__name__}): a bug; the server's log has the details."
        return error_response(site.renderer, path, 500, "Internal error", message)


class BuildWatch:
    """Looks at the build's manifest.json at most once a second; when it has changed (a build
    that was not finished, or was damaged, has been completed or repaired), ``reload()`` makes
    the site's state again over the build as it is now, and the answers kept are dropped."""

    def __init__(self, app, stamp, reload, every: float = 1.0):
        self.app = app
        self.stamp, self.reload, self.every = stamp, reload, every
        self.seen = stamp()
        self.checked = 0.0
        self.lock = threading.Lock()

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http":
            now = time.monotonic()
            if now - self.checked >= self.every:
                self.checked = now
                stamp = self.stamp()
                if stamp != self.seen:
                    with self.lock:
                        self.seen = stamp
                        self.reload()
        return await self.app(scope, receive, send)


def _host_name(host: str) -> str:
    """``"127.0.0.1:8000"`` -> ``"127.0.0.1"``, ``"[::1]:8000"`` -> ``"[::1]"``, lower case."""
    host = host.strip().lower()
    if host.startswith("["):
        return host[: host.find("]") + 1] if "]" in host else host
    return host.split(":", 1)[0]


class HostGuard:
    """Refuses (400) a request whose Host is not the loopback."""

    def __init__(self, app, renderer: Renderer):
        self.app = app
        self.renderer = renderer

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        host = dict(scope.get("headers", ())).get(b"host", b"").decode("latin-1")
        if _host_name(host) in ALLOWED_HOSTS:
            return await self.app(scope, receive, send)
        message = (
            f"This server answers only to 127.0.0.1, localhost and [::1], not to the host “{host[:100]}”: "
            "open it at http://127.0.0.1:PORT/."
        )
        refusal = error_response(self.renderer, scope.get("path", "/"), 400, "Wrong host", message)
        return await refusal(scope, receive, send)


class AnswerCache(LRU[str, tuple[list, bytes]]):
    """Whole answers (headers, body of a 200) by path, least recently used dropped first, bounded
    in count and bytes (an answer over a sixteenth of the bytes is not kept). Written by the
    event loop and by the pre-render thread."""

    def __init__(self, entries: int = ANSWER_CACHE_ENTRIES, size: int = ANSWER_CACHE_BYTES):
        super().__init__(entries, size, size_of=lambda answer: len(answer[1]))

    def put(self, path: str, headers: list, body: bytes) -> None:  # type: ignore[override]
        super().put(path, (headers, body))


class FinalAnswers:
    """Answers a GET of a walkthrough or Explore page from :class:`AnswerCache` once it has been
    served whole (status 200, one piece); every other request passes through."""

    def __init__(self, app, answers: AnswerCache):
        self.app = app
        self.answers = answers

    async def __call__(self, scope, receive, send):
        if (
            scope["type"] != "http"
            or scope["method"] != "GET"
            or scope.get("query_string")
            or not _FINAL_ANSWER.fullmatch(scope["path"])
        ):
            return await self.app(scope, receive, send)
        path = scope["path"]
        hit = self.answers.get(path)
        if hit is not None:
            await send({"type": "http.response.start", "status": 200, "headers": hit[0]})
            return await send({"type": "http.response.body", "body": hit[1]})
        return await self.app(scope, receive, self._keeping(path, send))

    def _keeping(self, path: str, send):
        """``send``, keeping a copy of a 200 answer sent in one piece."""
        start: dict = {}

        async def keep(message):
            if message["type"] == "http.response.start":
                start.update(message)
            elif start.get("status") == 200 and not message.get("more_body", False):
                self.answers.put(path, list(start.get("headers", ())), message.get("body", b""))
            await send(message)

        return keep
