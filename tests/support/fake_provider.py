"""A local stand-in for the LLM providers (tests only; docs/llm.md): an HTTP server on 127.0.0.1
that speaks OpenAI's Chat Completions (``POST /v1/chat/completions``) and Anthropic's Messages
(``POST /v1/messages``) wire formats, answers deterministically, and can be told to misbehave
(429s with Retry-After, malformed answers, refusals, a 401 for a wrong key, a slow answer).

It answers CORS preflights so that the site's evaluation page can call it from Chromium. It
counts the requests it is answering at once (``in_flight``, ``max_in_flight``) and, while it
waits to answer slowly, notices a client that closed its connection (``closed``): what a
browser's aborted call looks like from the server.

It does not stand in for: the providers' real rate limits and quotas, streaming, tool use, token
counting (it counts words), or any model's behaviour.

Run alone (for a browser or a manual run): ``python tests/support/fake_provider.py --port 8765``.
"""

from __future__ import annotations

import hashlib
import json
import re
import select
import socket
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LABELS = ("SUPPORTS", "REFUTES", "NOT_ENOUGH_INFO", "DISPUTED")
ALLOWED_HEADERS = "authorization, content-type, x-api-key, anthropic-version, anthropic-dangerous-direct-browser-access"
REFUSAL = "I'm sorry, but I can't help with labelling this claim."
MALFORMED = 'Label: SUPPORTS, because {"label": maybe'


class ClientGone(Exception):
    """The client closed its connection before the answer was sent."""


@dataclass
class Reply:
    """What a ``script`` returns for a request: the answer's text, or an HTTP error."""

    text: str = ""
    status: int = 200
    headers: dict = field(default_factory=dict)


def claim_of(prompt: str) -> str:
    """The claim's text in a user message of the protocol (``Claim: ...\\n\\nPassages:``), or
    the probe's half claim, or the whole message."""
    found = re.match(r"Claim: (.*?)\n\nPassages:", prompt, re.DOTALL)
    return found.group(1) if found else prompt


def passage_ids(prompt: str) -> list[str]:
    """The passage ids shown, in order (lines ``[<id>] <text>``)."""
    return re.findall(r"^\[([^\]\n]+)\] ", prompt, re.MULTILINE)


def default_label(claim: str) -> str:
    """The stand-in's label for a claim: from the sha256 of its text (deterministic)."""
    return LABELS[hashlib.sha256(claim.encode("utf-8")).digest()[0] % len(LABELS)]


def default_answer(prompt: str) -> str:
    """A valid answer: the hashed label, citing the first passage shown."""
    ids = passage_ids(prompt)[:1]
    body = {"label": default_label(claim_of(prompt)), "evidence_ids": ids, "rationale": "Stand-in answer."}
    return json.dumps(body)


def _matches(keys, claim: str, ordinal: int) -> object | None:
    """The key of ``keys`` (claim substrings or 0-based ordinals of distinct claims) that names
    this claim, or None."""
    for key in keys:
        if (isinstance(key, int) and key == ordinal) or (isinstance(key, str) and key in claim):
            return key
    return None


class FakeProvider:
    """The stand-in server, as a context manager (a thread serving 127.0.0.1 on a free port).

    Parameters
    ----------
    provider : str
        ``"openai"`` (``base_url`` ends in ``/v1``) or ``"anthropic"`` (``base_url`` is the root).
        Both wire formats are served either way.
    script : callable, optional
        request dict (``path``, ``headers``, ``body``, ``prompt``, ``claim``) -> :class:`Reply`
        or None (None: the default answer).
    fail_first : mapping, optional
        claim substring or ordinal -> how many 429s that claim gets before an answer.
    retry_after : float or None
        The 429s' Retry-After header in seconds (None: no header).
    malformed, refuse : iterable, optional
        Claims (substrings or ordinals) answered with text holding no valid object, or a refusal.
    expected_key : str, optional
        Any other key (or none) gets a 401 in the provider's error format.
    delay : float
        Seconds to wait before each answer.
    """

    def __init__(
        self,
        provider: str = "openai",
        script: Callable[[dict], Reply | None] | None = None,
        fail_first: Mapping[object, int] | None = None,
        retry_after: float | None = 0,
        malformed=(),
        refuse=(),
        expected_key: str | None = None,
        delay: float = 0.0,
    ):
        self.provider = provider
        self.script = script
        self.fail_first = dict(fail_first or {})
        self.retry_after = retry_after
        self.malformed, self.refuse = tuple(malformed), tuple(refuse)
        self.expected_key = expected_key
        self.delay = delay
        self.requests: list[dict] = []
        #: Requests being answered now, the most at once so far, and those whose client left
        #: (closed its connection) while a slow answer was waited for.
        self.in_flight = self.max_in_flight = self.closed = 0
        self._lock = threading.Lock()
        self._claims: dict[str, int] = {}
        self._failed: dict[object, int] = {}
        self._server: ThreadingHTTPServer | None = None
        self._port = 0

    # -- the server's life ---------------------------------------------------------------------

    def __enter__(self) -> FakeProvider:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def start(self, port: int = 0) -> FakeProvider:
        owner = self

        class Handler(_Handler):
            fake = owner

        self._server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self._server.daemon_threads = True
        self._port = self._server.server_address[1]  # kept after stop(): the URLs a run recorded
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    @property
    def port(self) -> int:
        return self._port

    @property
    def openai_base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def anthropic_base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def base_url(self) -> str:
        return self.anthropic_base_url if self.provider == "anthropic" else self.openai_base_url

    # -- answers -------------------------------------------------------------------------------

    def _ordinal(self, claim: str) -> int:
        with self._lock:
            return self._claims.setdefault(claim, len(self._claims))

    def _rate_limited(self, claim: str, ordinal: int) -> bool:
        key = _matches(self.fail_first, claim, ordinal)
        if key is None:
            return False
        with self._lock:
            done = self._failed.get(key, 0)
            if done >= self.fail_first[key]:
                return False
            self._failed[key] = done + 1
            return True

    def reply(self, request: dict) -> Reply:
        """The reply to a well-formed request with the right key."""
        claim = request["claim"]
        ordinal = self._ordinal(claim)
        if self._rate_limited(claim, ordinal):
            headers = {} if self.retry_after is None else {"Retry-After": f"{self.retry_after:g}"}
            return Reply("rate limited by the stand-in", 429, headers)
        if self.delay:
            _wait(self.delay, request.get("gone"))
        if self.script is not None:
            scripted = self.script(request)
            if scripted is not None:
                return scripted
        if _matches(self.malformed, claim, ordinal) is not None:
            return Reply(MALFORMED)
        if _matches(self.refuse, claim, ordinal) is not None:
            return Reply(REFUSAL)
        return Reply(default_answer(request["prompt"]))


def _wait(seconds: float, gone: Callable[[], bool] | None) -> None:
    """Sleep ``seconds``, looking every 10 ms whether the client left (then raise ClientGone)."""
    until = time.monotonic() + seconds
    while time.monotonic() < until:
        if gone is not None and gone():
            raise ClientGone
        time.sleep(0.01)


def _words(text: str) -> int:
    return len(text.split())


class _Handler(BaseHTTPRequestHandler):
    fake: FakeProvider
    protocol_version = "HTTP/1.1"

    def log_message(self, *args) -> None:  # quiet: tests read .requests instead
        pass

    def _send(self, status: int, body: dict | str, headers: Mapping[str, str] = ()) -> None:
        data = (body if isinstance(body, str) else json.dumps(body)).encode("utf-8")
        self.send_response(status)
        self.send_header("Access-Control-Allow-Origin", "*")
        self.send_header("Access-Control-Allow-Headers", ALLOWED_HEADERS)
        self.send_header("Access-Control-Allow-Methods", "POST, OPTIONS")
        self.send_header("Access-Control-Expose-Headers", "Retry-After")
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in dict(headers).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def do_OPTIONS(self) -> None:  # the browser's preflight
        self.send_response(204)
        self.send_header("Access-Control-Allow-Origin", "*")
        self.send_header("Access-Control-Allow-Headers", ALLOWED_HEADERS)
        self.send_header("Access-Control-Allow-Methods", "POST, OPTIONS")
        self.send_header("Access-Control-Max-Age", "600")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_POST(self) -> None:
        fake = self.fake
        with fake._lock:
            fake.in_flight += 1
            fake.max_in_flight = max(fake.max_in_flight, fake.in_flight)
        try:
            self._post()
        except (BrokenPipeError, ConnectionResetError):  # the client was killed mid-answer
            pass
        except ClientGone:
            with fake._lock:
                fake.closed += 1
            self.close_connection = True
        finally:
            with fake._lock:
                fake.in_flight -= 1

    def _gone(self) -> bool:
        """Whether the client closed its connection: readable with nothing to read (it sends
        nothing more on this connection before the answer)."""
        try:
            readable, _, _ = select.select([self.connection], [], [], 0)
            return bool(readable) and self.connection.recv(1, socket.MSG_PEEK) == b""
        except OSError:
            return True

    def _post(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = None
        headers = {name.lower(): value for name, value in self.headers.items()}
        with self.fake._lock:
            self.fake.requests.append({"path": self.path, "headers": headers, "body": body})
        if self.path.rstrip("/") == "/v1/chat/completions":
            self._openai(headers, body)
        elif self.path.rstrip("/") == "/v1/messages":
            self._anthropic(headers, body)
        else:
            self._send(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})

    # -- OpenAI's Chat Completions -------------------------------------------------------------

    def _openai_error(self, status: int, message: str, kind: str, headers=()) -> None:
        self._send(status, {"error": {"message": message, "type": kind, "code": None}}, headers)

    def _openai(self, headers: dict, body) -> None:
        key = (headers.get("authorization") or "").removeprefix("Bearer ").strip() or None
        if self.fake.expected_key is not None and key != self.fake.expected_key:
            return self._openai_error(401, "Incorrect API key provided.", "invalid_request_error")
        problem = _openai_problem(body)
        if problem:
            return self._openai_error(400, problem, "invalid_request_error")
        system = next((m["content"] for m in body["messages"] if m.get("role") == "system"), "")
        prompt = next((m["content"] for m in body["messages"] if m.get("role") == "user"), "")
        reply = self.fake.reply(_request(self.path, headers, body, prompt, system, self._gone))
        if reply.status != 200:
            return self._openai_error(reply.status, reply.text, "rate_limit_error", reply.headers)
        self._send(
            200,
            {
                "id": "chatcmpl-standin",
                "object": "chat.completion",
                "model": body["model"],
                "choices": [
                    {"index": 0, "message": {"role": "assistant", "content": reply.text}, "finish_reason": "stop"}
                ],
                "usage": {
                    "prompt_tokens": _words(system) + _words(prompt),
                    "completion_tokens": _words(reply.text),
                    "total_tokens": _words(system) + _words(prompt) + _words(reply.text),
                },
            },
            reply.headers,
        )

    # -- Anthropic's Messages ------------------------------------------------------------------

    def _anthropic_error(self, status: int, message: str, kind: str, headers=()) -> None:
        self._send(status, {"type": "error", "error": {"type": kind, "message": message}}, headers)

    def _anthropic(self, headers: dict, body) -> None:
        key = headers.get("x-api-key")
        if self.fake.expected_key is not None and key != self.fake.expected_key:
            return self._anthropic_error(401, "invalid x-api-key", "authentication_error")
        problem = _anthropic_problem(headers, body)
        if problem:
            return self._anthropic_error(400, problem, "invalid_request_error")
        prompt = "".join(_text_of(m.get("content")) for m in body["messages"] if m.get("role") == "user")
        system = body.get("system") or ""
        reply = self.fake.reply(_request(self.path, headers, body, prompt, system, self._gone))
        if reply.status != 200:
            kind = "rate_limit_error" if reply.status == 429 else "api_error"
            return self._anthropic_error(reply.status, reply.text, kind, reply.headers)
        self._send(
            200,
            {
                "id": "msg_standin",
                "type": "message",
                "role": "assistant",
                "model": body["model"],
                "content": [{"type": "text", "text": reply.text}],
                "stop_reason": "end_turn",
                "usage": {"input_tokens": _words(system) + _words(prompt), "output_tokens": _words(reply.text)},
            },
            reply.headers,
        )


def _request(path: str, headers: dict, body: dict, prompt: str, system: str, gone=None) -> dict:
    return {
        "gone": gone,
        "path": path,
        "headers": headers,
        "body": body,
        "prompt": prompt,
        "system": system,
        "claim": claim_of(prompt),
    }


def _text_of(content) -> str:
    if isinstance(content, str):
        return content
    return "".join(part.get("text", "") for part in content or [] if isinstance(part, dict))


def _openai_problem(body) -> str | None:
    """What a real Chat Completions endpoint would reject in this body (the parts we rely on)."""
    if not isinstance(body, dict):
        return "the body is not a JSON object"
    if not isinstance(body.get("model"), str):
        return "model is required"
    if not isinstance(body.get("messages"), list) or not body["messages"]:
        return "messages must be a non-empty list"
    if body.get("stream"):
        return "the stand-in does not stream"
    return None


def _anthropic_problem(headers: dict, body) -> str | None:
    """What the Messages API would reject (the parts we rely on)."""
    if headers.get("anthropic-version") is None:
        return "anthropic-version: header is required"
    if not isinstance(body, dict):
        return "the body is not a JSON object"
    if not isinstance(body.get("model"), str):
        return "model: Field required"
    if not isinstance(body.get("max_tokens"), int):
        return "max_tokens: Field required"
    if not isinstance(body.get("messages"), list) or not body["messages"]:
        return "messages: Field required"
    if body.get("stream"):
        return "the stand-in does not stream"
    return None


def main() -> None:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--expected-key", default=None)
    parser.add_argument("--delay", type=float, default=0.0)
    args = parser.parse_args()
    fake = FakeProvider(expected_key=args.expected_key, delay=args.delay).start(args.port)
    print(f"OpenAI-compatible: {fake.openai_base_url}  Anthropic: {fake.anthropic_base_url}", flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        fake.stop()


if __name__ == "__main__":
    main()
