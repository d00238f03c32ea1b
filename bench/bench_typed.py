"""A typed claim's latency at 1 and 2 concurrent clients (closed loop) against one
``claimtrace serve`` process.

    python bench/bench_typed.py --workdir BUILD [--claims 40] [--clients 1 2]

Starts ``claimtrace serve --workdir BUILD`` (one process) on a free loopback port, traces one
typed claim to warm it up, then for each client count sends ``--claims`` typed claims per
client, each POST /api/trace of a new sentence (course words in a new order: every one a new
trace), a client sending its next as soon as its last is answered. Prints one JSON line per
client count: median and p95 in ms, and the machine's load average (it may be shared).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
from bench_web import free_port, percentile, start_server, stop_server

REPO = Path(__file__).resolve().parents[1]
WORDS = (
    "sea level ice sheet glacier arctic warming carbon dioxide emissions ocean heat temperature "
    "record decade climate models rainfall drought hurricane coral reef forest fire solar volcano"
).split()


def sentences(n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.sample(WORDS, 8)).capitalize() + f" in {1900 + i}." for i in range(n)]


def client(base: str, texts: list[str]) -> list[float]:
    latencies = []
    with httpx.Client(timeout=60) as http:
        for text in texts:
            started = time.perf_counter()
            response = http.post(f"{base}/api/trace", json={"text": text})
            latencies.append((time.perf_counter() - started) * 1e3)
            response.raise_for_status()
    return latencies


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workdir", required=True, type=Path)
    parser.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data")
    parser.add_argument("--claims", type=int, default=40, help="typed claims per client")
    parser.add_argument("--clients", type=int, nargs="+", default=[1, 2])
    args = parser.parse_args()
    port = free_port()
    serve = ["--data", str(args.data), "serve", "--workdir", str(args.workdir), "--port", str(port)]
    server = start_server(serve, port)
    base = f"http://127.0.0.1:{port}"
    try:
        client(base, sentences(3, seed=0))  # warm: the model, the caches of words
        for count in args.clients:
            batches = [sentences(args.claims, seed=100 * count + c) for c in range(count)]
            load = os.getloadavg()[0]
            with ThreadPoolExecutor(count) as pool:
                latencies = [ms for batch in pool.map(lambda texts: client(base, texts), batches) for ms in batch]
            summary = {
                "clients": count,
                "claims": len(latencies),
                "median_ms": round(percentile(latencies, 50), 1),
                "p95_ms": round(percentile(latencies, 95), 1),
                "load_before": round(load, 2),
                "load_after": round(os.getloadavg()[0], 2),
            }
            print(json.dumps(summary), flush=True)
    finally:
        stop_server(server)


if __name__ == "__main__":
    main()
