"""The explainer site's speed: page latency, the browser's live recompute, sustained load.

    .venv/bin/python bench/bench_web.py [--workdir DIR] [--rate 200] [--seconds 30]

1. Walkthrough pages: ``claimtrace serve`` runs in its own process on 127.0.0.1 (a free port);
   once it has warmed up (the build loaded, every split's verdicts computed), the time to serve
   the walkthrough of claims never asked for before (their whole trace is assembled then), and
   of pages already served. Target: under 200 ms.
2. The live editor in Debian's headless Chromium: ``window.claimtrace.recompute`` (the table
   arithmetic, the verdict and the per-token chart rebuilt, layout forced), timed in the page
   with performance.now() over edits of claim-752's model input. Target: under 16 ms.
3. Load: a fixed-rate loop of httpx clients in threads (default 200 requests per second for 30 s,
   on loopback only, stopping by itself) over a mix of pages; every answer must be a 200.

Without ``--workdir`` the demo corpus is built once into bench/out/demo (gitignored).
Prints one JSON summary at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import socket
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def percentile(values, p):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


def summary_ms(values):
    return {
        "n": len(values),
        "median_ms": round(statistics.median(values), 2),
        "p95_ms": round(percentile(values, 95), 2),
        "max_ms": round(max(values), 2),
    }


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def ensure_build(workdir: Path) -> None:
    if (workdir / "tagging" / "summary.json").is_file():
        return
    print(f"building the demo corpus into {workdir} ...", file=sys.stderr)
    subprocess.run(
        [str(REPO / ".venv" / "bin" / "claimtrace"), "build", "--demo", "--workdir", str(workdir), "--processes", "1"],
        check=True,
        stdout=subprocess.DEVNULL,
    )


def start_server(arguments: list[str], port: int, limit: float = 180) -> subprocess.Popen:
    """``claimtrace <arguments>`` (a ``serve`` command line for ``port``) in its own process,
    once ``/api/build.json`` answers; the benches' one way to start a server."""
    command = [sys.executable, "-m", "claimtrace.cli", *arguments]
    server = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise SystemExit(f"the server exited: {server.stderr.read()}")
        try:
            if httpx.get(f"http://127.0.0.1:{port}/api/build.json", timeout=5).status_code == 200:
                return server
        except httpx.HTTPError:
            time.sleep(0.3)
    stop_server(server)
    raise SystemExit(f"the server did not start within {limit:.0f} s")


def wait_warm(base: str, workers: int, limit: float = 300.0) -> float:
    """Wait until every worker of a server has warmed up: asks for the walkthrough (a claim
    page, which lets a worker's warm-up go on) on new connections, and for /api/build.json on the
    same one, until each worker process says ``"typed_ready"`` (its first typed claim traced: the
    model loaded, its encoder rows checked). A server of a version that does not say it counts
    as warm once each worker has answered. Returns the seconds it took."""
    started = time.monotonic()
    ready: set[int] = set()
    while len(ready) < workers:
        if time.monotonic() - started > limit:
            raise SystemExit(f"the workers did not warm up within {limit:.0f} s")
        with httpx.Client(timeout=120) as connection:  # one connection stays with one worker
            connection.get(f"{base}/walkthrough")
            server = connection.get(f"{base}/api/build.json").json().get("server", {})
        if server.get("typed_ready", "process" not in server):
            ready.add(server.get("process", len(ready)))
        else:
            time.sleep(0.5)
    return time.monotonic() - started


def stop_server(server: subprocess.Popen) -> None:
    """Stop a server process (and its workers): terminate, then kill after 20 s."""
    server.terminate()
    try:
        server.wait(timeout=20)
    except subprocess.TimeoutExpired:
        server.kill()


def wait_until_warm(base: str, splits=("dev", "test", "train"), limit: float = 900) -> float:
    """Ask for every split's Explore until each answers 200 (the server computes them in the
    background): then every claim's notebook batch is cached."""
    started = time.monotonic()
    with httpx.Client(timeout=60) as client:
        for split in splits:
            while client.get(f"{base}/explore/{split}.json").status_code != 200:
                if time.monotonic() - started > limit:
                    raise SystemExit(f"explore/{split} not ready after {limit} s")
                time.sleep(2)
    return time.monotonic() - started


def bench_pages(base: str, claim_ids: list[str]) -> dict:
    cold, warm, slowest = [], [], []
    with httpx.Client(timeout=60) as client:
        for claim_id in claim_ids:
            t0 = time.perf_counter()
            response = client.get(f"{base}/claim/{claim_id}.html")
            cold.append(1000 * (time.perf_counter() - t0))
            slowest.append((round(cold[-1], 1), claim_id))
            assert response.status_code == 200, (claim_id, response.status_code)
        for _ in range(5):
            for claim_id in claim_ids:
                t0 = time.perf_counter()
                response = client.get(f"{base}/claim/{claim_id}.html")
                warm.append(1000 * (time.perf_counter() - t0))
                assert response.status_code == 200
        t0 = time.perf_counter()
        front = client.get(f"{base}/")
        front_ms = 1000 * (time.perf_counter() - t0)
    return {
        "first_request_of_a_claim": summary_ms(cold),
        "slowest_first_requests": sorted(slowest)[-3:],
        "repeat_requests": summary_ms(warm),
        "front_page_ms": round(front_ms, 2),
        "front_page_bytes": len(front.content),
    }


def bench_browser(base: str, runs: int = 200) -> dict:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.goto(f"{base}/live.html")
        page.wait_for_selector("body[data-editor=ready]", timeout=60_000)
        timings = page.evaluate(
            """(runs) => {
                const input = document.getElementById('model-input').value;
                const words = input.split(' ');
                const full = [], arithmetic = [];
                for (let i = 0; i < runs; i++) {
                    // an edit: drop one word, or append one
                    const edited = i % 2 ? words.filter((_, k) => k !== i % words.length).join(' ')
                                         : input + ' ' + words[i % words.length];
                    let t0 = performance.now();
                    window.claimtrace.compute(edited);
                    arithmetic.push(performance.now() - t0);
                    full.push(window.claimtrace.recompute(edited).ms);
                }
                return {full, arithmetic};
            }""",
            runs,
        )
        browser.close()
    return {"recompute_and_render": summary_ms(timings["full"]), "arithmetic_only": summary_ms(timings["arithmetic"])}


def bench_load(base: str, paths: list[str], rate: float, seconds: float, threads: int = 32) -> dict:
    """Send ``rate`` requests per second for ``seconds``, each at its scheduled time (a worker
    that falls behind sends at once); count answers that are not 200 and exceptions."""
    total = int(rate * seconds)
    schedule_lock = threading.Lock()
    state = {"next": 0}
    latencies: list[float] = []
    lateness: list[float] = []
    errors: list[str] = []
    statuses: dict[int, int] = {}
    rng = random.Random(0)
    plan = [rng.choice(paths) for _ in range(total)]
    start = time.perf_counter() + 0.5

    def worker():
        with httpx.Client(timeout=30) as client:
            while True:
                with schedule_lock:
                    i = state["next"]
                    if i >= total:
                        return
                    state["next"] += 1
                due = start + i / rate
                delay = due - time.perf_counter()
                if delay > 0:
                    time.sleep(delay)
                sent = time.perf_counter()
                try:
                    response = client.get(base + plan[i])
                    code = response.status_code
                    with schedule_lock:
                        statuses[code] = statuses.get(code, 0) + 1
                        if code != 200:
                            errors.append(f"{plan[i]}: {code}")
                except httpx.HTTPError as err:
                    with schedule_lock:
                        errors.append(f"{plan[i]}: {type(err).__name__}")
                done = time.perf_counter()
                with schedule_lock:
                    latencies.append(1000 * (done - sent))
                    lateness.append(1000 * max(0.0, sent - due))

    pool = [threading.Thread(target=worker, daemon=True) for _ in range(threads)]
    for thread in pool:
        thread.start()
    for thread in pool:
        thread.join()
    elapsed = time.perf_counter() - start
    return {
        "requests": total,
        "target_rate": rate,
        "seconds": round(elapsed, 2),
        "achieved_rate": round(total / elapsed, 1),
        "statuses": statuses,
        "errors": len(errors),
        "first_errors": errors[:5],
        "latency": summary_ms(latencies),
        "sent_late_by": summary_ms(lateness),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workdir", default=str(REPO / "bench" / "out" / "demo"))
    parser.add_argument("--rate", type=float, default=200.0)
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--claims", type=int, default=30, help="claims whose first request is timed")
    args = parser.parse_args()

    workdir = Path(args.workdir)
    ensure_build(workdir)
    from claimtrace.data.files import find_data_dir, load_claims

    data_dir = find_data_dir()
    dev = list(load_claims("dev", data_dir))
    train = list(load_claims("train", data_dir))
    test = list(load_claims("test", data_dir))
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    t0 = time.monotonic()
    server = start_server(["serve", "--workdir", str(workdir), "--port", str(port)], port, limit=120)
    result: dict = {"workdir": str(workdir), "cpus": os.cpu_count(), "load_average_before": os.getloadavg()}
    try:
        result["server_start_s"] = round(time.monotonic() - t0, 1)
        result["warm_up_s"] = round(wait_until_warm(base), 1)
        rng = random.Random(1)
        sample = (
            rng.sample(dev[1:], args.claims // 3)
            + rng.sample(train, args.claims // 3)
            + rng.sample(test, args.claims - 2 * (args.claims // 3))
        )
        result["walkthrough_pages"] = bench_pages(base, sample)
        result["live_recompute_in_chromium"] = bench_browser(base)
        paths = [f"/claim/{c}.html" for c in sample] * 5 + [
            "/",
            "/walkthrough",
            "/explore/dev.html",
            "/static/app.js",
            "/static/style.css",
            f"/claim/{sample[0]}.json",
            "/api/table.json",
        ]
        result["load"] = bench_load(base, paths, args.rate, args.seconds)
    finally:
        stop_server(server)
    result["load_average_after"] = os.getloadavg()
    pages = result["walkthrough_pages"]
    live = result["live_recompute_in_chromium"]
    load = result["load"]
    result["verdicts"] = {
        "walkthrough_under_200ms": pages["first_request_of_a_claim"]["median_ms"] < 200,
        "walkthrough_p95_under_200ms": pages["first_request_of_a_claim"]["p95_ms"] < 200,
        "live_recompute_under_16ms": live["recompute_and_render"]["median_ms"] < 16,
        "live_recompute_p95_under_16ms": live["recompute_and_render"]["p95_ms"] < 16,
        "load_without_error": load["errors"] == 0 and load["achieved_rate"] >= 0.98 * args.rate,
    }
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
