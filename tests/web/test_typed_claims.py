"""The typed-claim queue (claimtrace.web.typed_claims): calls run in turn, first come first served,
on one thread of its own; a server with typed-claims processes hands typed texts to them, and
keeps them when it reads a completed build again. What a typed claim's trace computes:
tests/web/test_site_data.py; the processes themselves: tests/web/test_typed_processes.py."""

from __future__ import annotations

import asyncio
import threading
import time

from fastapi.testclient import TestClient

from claimtrace.web.site_data import SiteData
from claimtrace.web.typed_claims import TypedClaimQueue
from tests.support.event_loop import run_to_end


def test_calls_run_in_turn_in_the_order_asked_on_one_thread_of_their_own():
    queue = TypedClaimQueue(build=None)  # the queue itself reads no build
    lock = threading.Lock()
    running: list[int] = []
    ran: list[tuple[int, str, int]] = []  # (call, thread, calls running at once)

    def call(n: int) -> int:
        with lock:
            running.append(n)
            at_once = len(running)
        time.sleep(0.01)
        with lock:
            running.remove(n)
            ran.append((n, threading.current_thread().name, at_once))
        return 10 * n

    async def ask_all():
        return await asyncio.gather(*(queue.submit(call, n) for n in range(6)))

    assert run_to_end(ask_all()) == [0, 10, 20, 30, 40, 50]
    assert [n for n, _, _ in ran] == list(range(6)), "first come, first served"
    assert {at_once for _, _, at_once in ran} == {1}, "one at a time"
    threads = {name for _, name, _ in ran}
    assert len(threads) == 1 and threads.pop().startswith("typed-claims")
    assert threading.current_thread().name not in {name for _, name, _ in ran}


class _Processes:
    """Stands for the typed-claims processes' client: every text answered with its own bytes."""

    def __init__(self, ready: bool = True):
        self.asked: list[str] = []
        self.ready = ready  # whether one process at least has read the build

    def any_ready(self) -> bool:
        return self.ready

    async def answer(self, text: str, rule) -> tuple[int, bytes]:
        self.asked.append(text)
        return 200, b'{"from":"processes"}'


def test_typed_texts_go_to_the_processes_where_the_server_has_them(demo_build):
    from claimtrace.web.app import create_app

    site_data = SiteData(demo_build)
    processes = site_data.typed_claims.processes = _Processes()
    with TestClient(create_app(site_data=site_data)) as client:
        got = client.get("/api/trace", params={"text": "Sea levels are rising."})
        posted = client.post("/api/trace", json={"text": "Glaciers retreat."})
    assert got.json() == posted.json() == {"from": "processes"}
    assert processes.asked == ["Sea levels are rising.", "Glaciers retreat."]


def test_before_any_process_is_ready_the_server_traces_typed_texts_itself(demo_build):
    from claimtrace.web.app import create_app
    from claimtrace.web.typed_processes import typed_answer_json

    site_data = SiteData(demo_build)
    processes = site_data.typed_claims.processes = _Processes(ready=False)
    with TestClient(create_app(site_data=site_data)) as client:
        got = client.get("/api/trace", params={"text": "Sea levels are rising."})
        posted = client.post("/api/trace", json={"text": "Glaciers retreat."})
    assert (got.status_code, got.content) == typed_answer_json(site_data.typed_claims, "Sea levels are rising.")
    assert (posted.status_code, posted.content) == typed_answer_json(site_data.typed_claims, "Glaciers retreat.")
    assert processes.asked == []


def test_a_build_read_again_keeps_the_typed_claims_processes(demo_build):
    from claimtrace.web.app import create_app, reload_site
    from claimtrace.web.middleware import AnswerCache

    site_data = SiteData(demo_build)
    processes = site_data.typed_claims.processes = _Processes()
    app = create_app(site_data=site_data)
    reload_site(app, AnswerCache())
    again = app.state.site_data
    assert again is not site_data and again.typed_claims is not site_data.typed_claims
    assert again.typed_claims.processes is processes
    assert again.typed_claims.build is again.build
