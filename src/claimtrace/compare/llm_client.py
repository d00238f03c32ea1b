"""One call of the LLM harness over HTTP (docs/llm.md, "The providers' wire formats"): the request
in the provider's wire format, the answer's text and tokens read back, retries with backoff.

The only module of the package that opens a network connection, and only to the base URL the
user gave (``claimtrace llm``); nothing else at run time uses the network. The key is held in
memory, sent in its header, and scrubbed from every error text kept.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field

from claimtrace.evaluation import llm as P

#: Seconds one HTTP request may take before it counts as a network error (and is retried).
TIMEOUT = 120.0


@dataclass(frozen=True)
class Provider:
    """Where and how to ask: ``kind`` one of :data:`claimtrace.evaluation.llm.PROVIDERS`.
    The key is never shown by ``repr``."""

    kind: str
    base_url: str
    model: str
    key: str | None = field(default=None, repr=False)
    timeout: float = TIMEOUT

    @property
    def anthropic(self) -> bool:
        return self.kind == "anthropic"


def default_base_url(kind: str) -> str:
    return P.ANTHROPIC_URL if kind == "anthropic" else P.OPENAI_URL


@dataclass(frozen=True)
class Reply:
    """A call's outcome: the answer's text and tokens, or ``error`` (an infrastructure failure:
    the call counts as failed). ``latency_ms`` is the answered attempt's, ``attempts`` how many
    requests were made."""

    text: str | None
    tokens_in: int = 0
    tokens_out: int = 0
    latency_ms: float = 0.0
    attempts: int = 1
    error: str | None = None


def request_of(provider: Provider, system: str, user: str) -> tuple[str, dict, dict]:
    """(url, headers, body) of one call in the provider's wire format."""
    base = provider.base_url.rstrip("/")
    headers = {"content-type": "application/json"}
    if provider.anthropic:
        base = base.removesuffix("/v1")  # "https://api.anthropic.com/v1" given: the path adds /v1
        if provider.key:
            headers["x-api-key"] = provider.key
        headers["anthropic-version"] = P.ANTHROPIC_VERSION
        body = {
            "model": provider.model,
            "system": system,
            "messages": [{"role": "user", "content": user}],
            "max_tokens": P.MAX_TOKENS,
            "temperature": P.TEMPERATURE,
        }
        return f"{base}/v1/messages", headers, body
    if provider.key:
        headers["authorization"] = f"Bearer {provider.key}"
    body = {
        "model": provider.model,
        "messages": [{"role": "system", "content": system}, {"role": "user", "content": user}],
        "temperature": P.TEMPERATURE,
        "max_tokens": P.MAX_TOKENS,
        "stream": False,
    }
    return f"{base}/chat/completions", headers, body


def read_answer(provider: Provider, payload: dict) -> tuple[str, int, int]:
    """(text, tokens in, tokens out) of a provider's JSON answer; ValueError when it has none."""
    try:
        if provider.anthropic:
            parts = payload["content"]
            text = "".join(p.get("text", "") for p in parts if isinstance(p, dict) and p.get("type") == "text")
            usage = payload.get("usage") or {}
            return text, int(usage.get("input_tokens") or 0), int(usage.get("output_tokens") or 0)
        text = payload["choices"][0]["message"]["content"] or ""
        usage = payload.get("usage") or {}
        return text, int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0)
    except (KeyError, IndexError, TypeError, AttributeError) as error:
        raise ValueError(f"the provider's answer has no text ({type(error).__name__})") from None


def backoff(attempt: int, retry_after: str | None) -> float:
    """Seconds to wait before retry ``attempt`` (0-based): ``Retry-After`` when it gives
    seconds, else 0.5 s doubling; at most 8 s either way."""
    if retry_after is not None:
        try:
            return min(max(float(retry_after), 0.0), P.BACKOFF_CAP)
        except ValueError:
            pass  # an HTTP date: fall back on the backoff
    return min(P.BACKOFF_BASE * 2**attempt, P.BACKOFF_CAP)


def _scrub(text: str, key: str | None) -> str:
    """An error text with the key (and any long tail of it a provider echoes) removed."""
    if key:
        text = text.replace(key, "***")
        if len(key) >= 12:
            text = text.replace(key[-8:], "***").replace(key[:8], "***")
    return text[:500]


def _http_error(error: urllib.error.HTTPError) -> str:
    try:
        body = error.read().decode("utf-8", "replace")
        detail = json.loads(body).get("error")
        message = detail.get("message") if isinstance(detail, dict) else str(detail or body)
    except (ValueError, AttributeError, OSError):
        message = ""
    return f"HTTP {error.code}" + (f": {message}" if message else "")


def call(provider: Provider, system: str, user: str, sleep: Callable[[float], None] = time.sleep) -> Reply:
    """Ask once, retrying a 429, a 5xx or a network error up to
    :data:`claimtrace.evaluation.llm.RETRIES` times; any other HTTP error fails at once."""
    url, headers, body = request_of(provider, system, user)
    data = json.dumps(body).encode("utf-8")
    error = "not asked"
    for attempt in range(P.RETRIES + 1):
        started = time.perf_counter()
        retry_after = None
        try:
            request = urllib.request.Request(url, data=data, headers=headers, method="POST")
            with urllib.request.urlopen(request, timeout=provider.timeout) as response:
                payload = json.loads(response.read().decode("utf-8"))
            latency = (time.perf_counter() - started) * 1000
            text, tokens_in, tokens_out = read_answer(provider, payload)
            return Reply(text, tokens_in, tokens_out, latency, attempt + 1)
        except urllib.error.HTTPError as http:
            error = _http_error(http)
            if http.code != 429 and http.code < 500:
                return Reply(None, attempts=attempt + 1, error=_scrub(error, provider.key))
            retry_after = http.headers.get("Retry-After")
        except (TimeoutError, urllib.error.URLError, ConnectionError) as network:
            error = f"network error: {getattr(network, 'reason', network)}"
        except ValueError as bad:  # not JSON, or no text in it: the provider is not speaking its format
            return Reply(None, attempts=attempt + 1, error=_scrub(f"unreadable answer: {bad}", provider.key))
        if attempt < P.RETRIES:
            sleep(backoff(attempt, retry_after))
    return Reply(None, attempts=P.RETRIES + 1, error=_scrub(f"{error} (after {P.RETRIES} retries)", provider.key))
