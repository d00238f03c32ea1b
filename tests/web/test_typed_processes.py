"""Typed claims traced in processes of their own (web/typed_processes.py): the same bytes as the
server process's own trace, a process that dies replaced. ``serve`` starting them, saying so
and taking them down with it: tests/cli/test_serve.py."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import time

import pytest

from claimtrace.web.encoding import encode
from claimtrace.web.typed_processes import TypedClient, TypedProcesses, typed_answer, typed_answer_json
from tests.support.event_loop import run_to_end

TEXTS = ["Arctic sea ice is shrinking faster than models predicted.", "Global warming stopped in 1998."]


@pytest.fixture(scope="module")
def processes(demo_build, data_dir):
    started = TypedProcesses(demo_build.root, data_dir, 2)
    try:
        yield started
    finally:
        started.close()


def _answer(client, text):
    return run_to_end(client.answer(text))


def test_two_processes_start_and_answer_the_in_process_bytes(processes, demo_site_data):
    client = processes.client()
    assert client.wait_ready(120) == 2 and len(set(processes.pids)) == 2
    for text in [*TEXTS, "", "x" * 20_001, "a lone surrogate \udc80 in a claim"]:
        expected_status, value = typed_answer(demo_site_data.typed_claims, text)
        assert _answer(client, text) == (expected_status, encode(value)), text[:40]
    assert _answer(client, "")[0] == 400
    assert _answer(client, "x" * 20_001)[0] == 413


def test_the_processes_run_at_a_lower_cpu_priority_than_the_command(processes):
    """Their start and their reading of the build take what the server leaves of the cores."""
    from claimtrace.web.typed_processes import NICENESS

    lower = min(19, os.getpriority(os.PRIO_PROCESS, 0) + NICENESS)
    assert NICENESS > 0 and [os.getpriority(os.PRIO_PROCESS, pid) for pid in processes.pids] == [lower, lower]


def test_the_json_answer_is_the_encoded_answer(demo_site_data):
    """typed_answer_json (what a typed-claims process and /api/trace send) is encode of typed_answer (what
    the page shows): the trace encoded without its walk is the same bytes, refusals included."""
    for text in [*TEXTS, "", "x" * 20_001, "a lone surrogate \udc80 in a claim", "Sea ice \u00e9t\u00e9 in 2020."]:
        status, value = typed_answer(demo_site_data.typed_claims, text)
        assert typed_answer_json(demo_site_data.typed_claims, text) == (status, encode(value)), text[:40]


def test_claims_at_once_are_traced_side_by_side(processes):
    """Eight claims sent together are answered whole, each its own (the queue loses none)."""
    client = processes.client()
    client.wait_ready(120)

    async def together():
        return await asyncio.gather(*(client.answer(f"Sea level rose {n} mm in {1900 + n}.") for n in range(8)))

    for n, (status, body) in enumerate(run_to_end(together())):
        assert status == 200 and json.loads(body)["claim"]["text"] == f"Sea level rose {n} mm in {1900 + n}."


def test_a_process_that_dies_is_started_again(processes, demo_site_data):
    client = processes.client()
    client.wait_ready(120)
    victim = processes.pids[0]
    os.kill(victim, signal.SIGKILL)
    deadline = time.monotonic() + 120
    while (victim in processes.pids or client.ready() < 2) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert victim not in processes.pids and processes.restarted >= 1 and client.ready() == 2
    assert _answer(client, TEXTS[0]) == (200, encode(typed_answer(demo_site_data.typed_claims, TEXTS[0])[1]))


def test_with_no_process_there_a_claim_is_answered_503(tmp_path):
    status, body = run_to_end(TypedClient(tmp_path / "none.sock", 2).answer(TEXTS[0]))
    assert status == 503 and "try again" in json.loads(body)["error"]


def test_a_claim_no_process_takes_is_answered_503_in_time(tmp_path, monkeypatch):
    """A socket nobody accepts on (the processes never started): a 503 saying so, not a hang."""
    import socket

    from claimtrace.web import typed_processes

    monkeypatch.setattr(typed_processes, "ANSWER_SECONDS", 0.5)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(tmp_path / "idle.sock"))
    listener.listen(8)
    try:
        status, body = run_to_end(TypedClient(tmp_path / "idle.sock", 2).answer(TEXTS[0]))
    finally:
        listener.close()
    assert status == 503 and "within" in json.loads(body)["error"]


def test_a_build_file_a_trace_cannot_read_is_the_servers_503_not_a_dead_process(demo_site_data, monkeypatch):
    """A typed-claims process answers a claim whose trace meets a damaged or missing build file
    with the 503 the server's own handlers give (the file named, no machine path), and lives on."""
    from claimtrace.errors import DataError, Missing
    from claimtrace.web.typed_processes import answer_in_process

    root = demo_site_data.build.root
    for error, fields in (
        (DataError(f"{root}/retrieval/index.npz: 12 bytes, but the build wrote 40"), {}),
        (
            Missing("classifier", root / "classifier" / "dev.json", "not built yet: run `claimtrace build`"),
            {"stage": "classifier"},
        ),
    ):
        monkeypatch.setattr(
            demo_site_data.typed_claims, "trace_text_json", lambda text, rule, error=error: (_ for _ in ()).throw(error)
        )
        status, body = answer_in_process(demo_site_data.typed_claims, "Sea levels are rising.")
        value = json.loads(body)
        assert status == 503 and value["status"] == 503 and str(root) not in value["error"]
        assert "retrieval/index.npz" in value["error"] or "classifier/dev.json" in value["error"]
        assert {k: value[k] for k in fields} == fields


def test_a_claim_sent_while_the_processes_are_starting_is_traced_by_the_server(
    demo_build, data_dir, demo_site_data, monkeypatch
):
    """Processes that start after the first page (``serve``) and have not been told it was
    answered: a typed claim is answered at once by the server itself (the in-process bytes), not
    left waiting on their socket; once one is ready, claims go to it."""
    from fastapi.testclient import TestClient

    from claimtrace.web import typed_processes
    from claimtrace.web.app import create_app

    monkeypatch.setattr(typed_processes, "ANSWER_SECONDS", 5.0)  # a claim left on the socket: a 503 in 5 s

    typed_claims = demo_site_data.typed_claims
    text = "Sea ice in the Arctic shrank by a third since 1979."
    expected = typed_answer_json(typed_claims, text)
    starting = TypedProcesses(demo_build.root, data_dir, 1, start_after=600)
    client = starting.client()
    typed_claims.processes = client
    try:
        with TestClient(create_app(site_data=demo_site_data)) as web:
            started = time.monotonic()
            answer = web.post("/api/trace", json={"text": text})
            took = time.monotonic() - started
            assert (answer.status_code, answer.content) == expected
            assert took < 10 and client.ready() == 0 and starting.pids == []  # none started, none waited for
            client.first_page_served()  # what a server process says once its first page is answered
            assert client.wait_ready(120) == 1 and len(starting.pids) == 1
            traced_here = []
            original = typed_claims.trace_text_json
            typed_claims.trace_text_json = lambda typed: traced_here.append(typed) or original(typed)
            try:
                answer = web.post("/api/trace", json={"text": text})
            finally:
                typed_claims.trace_text_json = original
            assert (answer.status_code, answer.content) == expected and traced_here == []  # the process's answer
    finally:
        typed_claims.processes = None
        starting.close()


def test_a_server_process_tells_the_processes_once_its_first_page_is_answered(tmp_path):
    """``create_app(warm=True, typed=...)``'s thread: the file the waiting processes look for is
    written once the first page is answered, not before."""
    import threading
    from types import SimpleNamespace

    from claimtrace.web.app import tell_first_page
    from claimtrace.web.typed_processes import FIRST_PAGE_FILE

    site_data = SimpleNamespace(first_page_served=threading.Event())
    telling = threading.Thread(target=tell_first_page, args=(site_data, TypedClient(tmp_path / "typed.sock", 2)))
    telling.start()
    telling.join(0.3)
    assert telling.is_alive() and not (tmp_path / FIRST_PAGE_FILE).exists()
    site_data.first_page_served.set()
    telling.join(10)
    assert (tmp_path / FIRST_PAGE_FILE).exists()
