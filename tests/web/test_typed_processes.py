"""Typed claims traced in processes of their own (web/typed_processes.py): the same bytes as the
server process's own trace, a process that dies replaced, and ``serve --typed-processes``
starting them, saying so, and taking them down with it."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import time

import httpx
import pytest

from claimtrace.web.responses import encode
from claimtrace.web.typed_processes import TypedClient, TypedProcesses, typed_answer

TEXTS = ["Arctic sea ice is shrinking faster than models predicted.", "Global warming stopped in 1998."]


@pytest.fixture(scope="module")
def processes(demo_build, data_dir):
    started = TypedProcesses(demo_build.root, data_dir, 2)
    try:
        yield started
    finally:
        started.close()


def _answer(client, text):
    return asyncio.run(client.answer(text))


def test_two_processes_start_and_answer_the_in_process_bytes(processes, web_tracer):
    client = processes.client()
    assert client.wait_ready(120) == 2 and len(set(processes.pids)) == 2
    for text in [*TEXTS, "", "x" * 20_001, "a lone surrogate \udc80 in a claim"]:
        expected_status, value = typed_answer(web_tracer, text)
        assert _answer(client, text) == (expected_status, encode(value)), text[:40]
    assert _answer(client, "")[0] == 400
    assert _answer(client, "x" * 20_001)[0] == 413


def test_claims_at_once_are_traced_side_by_side(processes):
    """Eight claims sent together are answered whole, each its own (the queue loses none)."""
    client = processes.client()
    client.wait_ready(120)

    async def together():
        return await asyncio.gather(*(client.answer(f"Sea level rose {n} mm in {1900 + n}.") for n in range(8)))

    for n, (status, body) in enumerate(asyncio.run(together())):
        assert status == 200 and json.loads(body)["claim"]["text"] == f"Sea level rose {n} mm in {1900 + n}."


def test_a_process_that_dies_is_started_again(processes, web_tracer):
    client = processes.client()
    client.wait_ready(120)
    victim = processes.pids[0]
    os.kill(victim, signal.SIGKILL)
    deadline = time.monotonic() + 120
    while (victim in processes.pids or client.ready() < 2) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert victim not in processes.pids and processes.restarted >= 1 and client.ready() == 2
    assert _answer(client, TEXTS[0]) == (200, encode(typed_answer(web_tracer, TEXTS[0])[1]))


def test_with_no_process_there_a_claim_is_answered_503(tmp_path):
    status, body = asyncio.run(TypedClient(tmp_path / "none.sock", 2).answer(TEXTS[0]))
    assert status == 503 and "try again" in json.loads(body)["error"]


def _descendants(pid: int) -> set[int]:
    found: set[int] = set()
    try:
        children = open(f"/proc/{pid}/task/{pid}/children").read().split()
    except OSError:
        return found
    for child in map(int, children):
        found |= {child} | _descendants(child)
    return found


def test_serve_starts_them_reports_them_and_takes_them_down(demo_build, data_dir, web_tracer):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    command = [sys.executable, "-m", "claimtrace.cli", "--data", str(data_dir), "serve", "--workdir"]
    command += [str(demo_build.root), "--port", str(port), "--typed-processes", "2"]
    server = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline, warmth = time.monotonic() + 120, {}
        while not warmth.get("typed_ready"):
            assert server.poll() is None, server.stderr.read()
            assert time.monotonic() < deadline, ("not warm", warmth)
            try:
                warmth = httpx.get(f"{base}/api/build.json", timeout=10).json()["server"]
            except httpx.HTTPError:
                pass
            time.sleep(0.3)
        assert warmth["typed_processes"] == 2
        answer = httpx.post(f"{base}/api/trace", json={"text": TEXTS[1]}, timeout=60)
        assert answer.status_code == 200 and answer.content == encode(typed_answer(web_tracer, TEXTS[1])[1])
        held = _descendants(server.pid)
        assert len(held) >= 2, held
    finally:
        server.terminate()
        server.wait(timeout=30)
    deadline = time.monotonic() + 15
    while any(os.path.exists(f"/proc/{pid}") for pid in held) and time.monotonic() < deadline:
        time.sleep(0.2)
    left = {pid: open(f"/proc/{pid}/cmdline", "rb").read()[:200] for pid in held if os.path.exists(f"/proc/{pid}")}
    assert not left, f"a typed-claims process outlived its server: {left}"
