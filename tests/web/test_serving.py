"""What lets one server hold a mixed load (docs/benchmarks.md, "Capacity"): several worker
processes on one port, every claim page rendered once and kept, bounded caches. The load itself
is measured by bench/bench_load.py, not here."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time

import httpx
import numpy as np
import pytest
from fastapi.testclient import TestClient

from claimtrace.pipeline import preprocess
from claimtrace.web.app import create_app
from claimtrace.web.tracer import STEM_CACHE_WORDS, Tracer


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_serve_with_two_workers_answers_from_both(demo_build, data_dir):
    """``claimtrace serve --workers 2``: two processes share the port; each answers pages and
    reports itself in /api/build.json."""
    port = _free_port()
    command = [sys.executable, "-m", "claimtrace.cli", "--data", str(data_dir), "serve"]
    command += ["--workdir", str(demo_build.root), "--port", str(port), "--workers", "2"]
    server = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 120
        while True:
            assert server.poll() is None, server.stderr.read()
            assert time.monotonic() < deadline, "the server did not start"
            try:
                if httpx.get(f"{base}/api/build.json", timeout=10).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.3)
        children = open(f"/proc/{server.pid}/task/{server.pid}/children").read().split()
        assert len(children) >= 2, children  # the workers (and multiprocessing's helper)
        for path in ("/", "/claim/claim-375.html", "/claim/claim-375.json"):
            answer = httpx.get(base + path, timeout=120, headers={"Connection": "close"})
            assert answer.status_code == 200, path
        assert "server" in httpx.get(f"{base}/api/build.json", timeout=60).json()
    finally:
        server.terminate()
        server.wait(timeout=30)


def test_prerender_keeps_every_claim_page_whole(demo_build, monkeypatch):
    """``--prerender``: once warm, every claim page is rendered and kept; a request for one is
    then answered from the copy (the tracer is not asked again), byte for byte the page a
    request would have made."""
    tracer = Tracer(demo_build)
    few = {split: dict(list(tracer.claims(split).items())[:3]) for split in ("dev", "train", "test")}
    monkeypatch.setattr(tracer, "claims", lambda split: few[split])
    monkeypatch.setattr(tracer, "warm", lambda: None)
    app = create_app(tracer=tracer, warm=True, prerender=True)
    deadline = time.monotonic() + 120
    while not app.state.warmth["warm"]:
        assert time.monotonic() < deadline, app.state.warmth
        time.sleep(0.1)
    assert app.state.warmth == {"claim_pages_prerendered": 9, "claim_pages": 9, "warm": True}
    kept = dict(app.state.warmth)
    asked = []
    original = tracer.trace
    monkeypatch.setattr(tracer, "trace", lambda cid: asked.append(cid) or original(cid))
    with TestClient(app) as client:
        claim_id = next(iter(few["dev"]))
        page = client.get(f"/claim/{claim_id}.html")
        assert page.status_code == 200 and asked == []
        assert client.get("/api/build.json").json()["server"] == kept
    fresh = TestClient(create_app(tracer=tracer)).get(f"/claim/{claim_id}.html")  # rendered on request
    assert fresh.content == page.content


def test_a_typed_claim_leaves_the_stem_cache_bounded(web_tracer):
    """Made-up words fill the stem cache; a server empties it past STEM_CACHE_WORDS."""
    for word in (f"zq{i}x" for i in range(2000)):
        preprocess.stem(word)
    size = preprocess.stem.cache_info().currsize
    preprocess.bound_stem_cache(size - 1)
    assert preprocess.stem.cache_info().currsize == 0
    web_tracer.trace_text("sea levels rising " + " ".join(f"qq{i}zz" for i in range(50)))
    assert preprocess.stem.cache_info().currsize <= STEM_CACHE_WORDS


def test_one_forward_call_per_distinct_input(demo_build, monkeypatch):
    """A forward call is a function of its input: the same 128 ids are run once and the
    answer kept (bounded); a different input is run."""
    from claimtrace.models import transformer as model_module

    classifier = demo_build.classifier()
    calls = []
    real = model_module.alone_logits
    monkeypatch.setattr(model_module, "alone_logits", lambda m, ids: calls.append(1) or real(m, ids))
    # two inputs no other test has run: random words, then [PAD]
    rng = np.random.default_rng(752)
    inputs = [np.concatenate([rng.integers(4, len(classifier.vocab), size=n), np.full(128 - n, 3)]) for n in (37, 61)]
    first = classifier.forward_alone(inputs[0])
    again = classifier.forward_alone(inputs[0].tolist())
    other = classifier.forward_alone(inputs[1])
    assert np.array_equal(first, again) and not np.array_equal(first, other)
    assert len(calls) == 2
    again[0] = 99.0  # a caller's copy: the kept answer is not changed
    assert classifier.forward_alone(inputs[0])[0] == first[0]
    assert len(calls) == 2


@pytest.mark.skipif(not hasattr(os, "fork"), reason="POSIX only")
def test_worker_settings_travel_through_the_environment(demo_build, data_dir, monkeypatch):
    from claimtrace.web.serving import WorkerSettings, app_from_environment

    for name in WorkerSettings._VARIABLES:
        monkeypatch.delenv(name, raising=False)
    from claimtrace.errors import DataError

    with pytest.raises(DataError, match="CLAIMTRACE_SERVE_WORKDIR"):
        app_from_environment()
    WorkerSettings(demo_build.root, data_dir, False).export()
    app = app_from_environment()
    assert app.state.tracer.build.root == demo_build.root


def test_typed_claims_return_freed_memory_every_so_often(web_tracer, monkeypatch):
    """Every RELEASE_EVERY typed claims the server returns freed heap memory to the system
    (glibc keeps it otherwise: the resident memory climbed by about 100 KB a typed claim)."""
    from claimtrace.web import memory
    from claimtrace.web import tracer as tracer_module

    released = []
    monkeypatch.setattr(tracer_module, "release_memory", lambda: released.append(1))
    monkeypatch.setattr(tracer_module, "RELEASE_EVERY", 3)
    for i in range(7):
        web_tracer.trace_text(f"sea level rising {i}")
    assert len(released) in (2, 3)  # the count started wherever earlier tests left it
    assert memory.limit_malloc_arenas(2) in (True, False)
    memory.release_memory()  # the real call: harmless, and under 1 ms
