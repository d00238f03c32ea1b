"""One call of the harness (claimtrace.compare.llm_client) against the local stand-in provider
(tests/support/fake_provider.py): each wire format, retries, Retry-After, failures, the key."""

from __future__ import annotations

import json

import pytest

from claimtrace.compare.llm_client import Provider, backoff, call
from claimtrace.evaluation import llm as P
from tests.support.fake_provider import FakeProvider, Reply, default_label

KEY = "sk-test-0123456789abcdef"
USER = P.user_prompt("Arctic ice is growing.", [("evidence-3", "It shrinks."), ("evidence-4", "It melts.")])


class Sleeps(list):
    def __call__(self, seconds: float) -> None:
        self.append(seconds)


def test_openai_wire_format():
    with FakeProvider(expected_key=KEY) as fake:
        reply = call(Provider("openai-compatible", fake.base_url, "m-1", KEY), P.SYSTEM_PROMPT_V1, USER)
        (request,) = fake.requests
    assert request["path"] == "/v1/chat/completions"
    assert request["headers"]["authorization"] == f"Bearer {KEY}"
    assert request["body"] == {
        "model": "m-1",
        "messages": [{"role": "system", "content": P.SYSTEM_PROMPT_V1}, {"role": "user", "content": USER}],
        "temperature": 0,
        "max_tokens": 400,
        "stream": False,
    }
    assert reply.error is None and reply.tokens_in > 0 and reply.tokens_out > 0
    answer = P.judge_answer(reply.text)
    assert (answer.label, answer.cited_ids) == (default_label("Arctic ice is growing."), ("evidence-3",))


def test_anthropic_wire_format():
    with FakeProvider(provider="anthropic", expected_key=KEY) as fake:
        reply = call(Provider("anthropic", fake.base_url, "claude-x", KEY), P.SYSTEM_PROMPT_V1, USER)
        (request,) = fake.requests
    assert request["path"] == "/v1/messages"
    assert request["headers"]["x-api-key"] == KEY and request["headers"]["anthropic-version"] == "2023-06-01"
    assert "authorization" not in request["headers"]
    assert request["body"] == {
        "model": "claude-x",
        "system": P.SYSTEM_PROMPT_V1,
        "messages": [{"role": "user", "content": USER}],
        "max_tokens": 400,
        "temperature": 0,
    }
    assert P.judge_answer(reply.text).status == "ok"


def test_no_key_sends_no_authorization_header():
    with FakeProvider() as fake:
        call(Provider("openai-compatible", fake.base_url, "local"), "s", USER)
        assert "authorization" not in fake.requests[0]["headers"]


def test_429s_are_retried_honouring_retry_after():
    sleeps = Sleeps()
    with FakeProvider(fail_first={"Arctic": 2}, retry_after=3) as fake:
        reply = call(Provider("openai-compatible", fake.base_url, "m"), "s", USER, sleep=sleeps)
        assert len(fake.requests) == 3
    assert reply.error is None and reply.attempts == 3
    assert sleeps == [3.0, 3.0]


def test_backoff_doubles_from_half_a_second_and_is_capped():
    assert [backoff(i, None) for i in range(6)] == [0.5, 1.0, 2.0, 4.0, 8.0, 8.0]
    assert backoff(0, "30") == 8.0 and backoff(2, "1.5") == 1.5
    assert backoff(1, "Wed, 21 Oct 2015 07:28:00 GMT") == 1.0


def test_a_429_after_every_retry_fails():
    sleeps = Sleeps()
    with FakeProvider(fail_first={"Arctic": 99}, retry_after=None) as fake:
        reply = call(Provider("openai-compatible", fake.base_url, "m"), "s", USER, sleep=sleeps)
        assert len(fake.requests) == 1 + P.RETRIES
    assert reply.text is None and "HTTP 429" in reply.error and "after 4 retries" in reply.error
    assert sleeps == [0.5, 1.0, 2.0, 4.0]


def test_a_5xx_is_retried_and_a_wrong_key_is_not():
    calls = []

    def flaky(request):
        calls.append(1)
        return Reply("overloaded", 503) if len(calls) == 1 else None

    with FakeProvider(script=flaky) as fake:
        assert call(Provider("openai-compatible", fake.base_url, "m"), "s", USER, sleep=Sleeps()).error is None
    for kind in ("openai-compatible", "anthropic"):
        with FakeProvider(provider="anthropic" if kind == "anthropic" else "openai", expected_key=KEY) as fake:
            wrong = "sk-wrong-" + KEY
            reply = call(Provider(kind, fake.base_url, "m", wrong), "s", USER, sleep=Sleeps())
            assert len(fake.requests) == 1
        assert reply.error.startswith("HTTP 401") and wrong not in reply.error


def test_an_unreachable_server_is_a_network_error_after_retries():
    with FakeProvider() as fake:
        url = fake.base_url
    reply = call(Provider("openai-compatible", url, "m"), "s", USER, sleep=Sleeps())
    assert reply.error.startswith("network error") and reply.attempts == 1 + P.RETRIES


def test_the_key_is_scrubbed_from_an_error_the_provider_echoes():
    def echo(request):
        key = request["headers"]["authorization"].removeprefix("Bearer ")
        return Reply(json.dumps({"bad": f"Incorrect API key provided: {key[:6]}...{key[-8:]}"}), 400)

    with FakeProvider(script=echo) as fake:
        reply = call(Provider("openai-compatible", fake.base_url, "m", KEY), "s", USER)
    assert KEY[-8:] not in reply.error and "HTTP 400" in reply.error
    assert KEY not in repr(Provider("openai", "u", "m", KEY))


def test_the_stand_in_answers_cors_preflights():
    import urllib.request

    with FakeProvider() as fake:
        request = urllib.request.Request(fake.base_url + "/chat/completions", method="OPTIONS")
        with urllib.request.urlopen(request) as response:
            assert response.status == 204
            assert response.headers["Access-Control-Allow-Origin"] == "*"
            assert "x-api-key" in response.headers["Access-Control-Allow-Headers"]


@pytest.mark.parametrize(
    "body",
    [
        {"model": "m", "messages": [], "stream": False},
        {"model": "m", "messages": [{"role": "user", "content": "x"}], "stream": True},
    ],
)
def test_the_stand_in_refuses_what_a_provider_refuses(body):
    import urllib.error
    import urllib.request

    with FakeProvider() as fake:
        request = urllib.request.Request(
            fake.base_url + "/chat/completions", data=json.dumps(body).encode(), method="POST"
        )
        with pytest.raises(urllib.error.HTTPError) as error:
            urllib.request.urlopen(request)
    assert error.value.code == 400


def test_an_anthropic_base_url_ending_in_v1_is_not_doubled():
    with FakeProvider(provider="anthropic") as fake:
        reply = call(Provider("anthropic", fake.base_url + "/v1/", "claude-x"), "s", USER)
        assert [r["path"] for r in fake.requests] == ["/v1/messages"]
    assert reply.error is None
