"""Capacity: an open-loop mixed load against ``claimtrace serve`` on 127.0.0.1.

    python bench/bench_load.py --workdir BUILD [--rate 200] [--seconds 30] [--workers 2] [--no-prerender]
        [--live-words made-up|vocabulary]

Starts ``claimtrace serve --workdir BUILD`` in its own process on a free loopback port, waits
until every split's Explore is computed, then sends requests at a fixed offered rate, each at
its scheduled time whatever the answers before it (open loop: a slow server does not slow the
load down, so queueing shows in the latencies). Latency is measured from the scheduled send, not
from the actual one. The mix:

* 25% ``/walkthrough`` (the walkthrough of claim-752);
* 35% claim pages (``/claim/<id>.html``, a dev, train or test claim at random);
* 15% ``/explore/dev.json``;
* 25% ``/live.json?text=<novel words>`` (made-up words: every one a new trace and new stems).

Bounded: ``rate x seconds`` requests, each with a 10 s timeout, all over after ``seconds + 15``
s; the server is stopped at the end. The server's resident memory (VmRSS, summed over its
workers) is sampled every second, to show it levelling off under novel words. Prints one JSON
summary, with the machine's load average before and after (the machine may be shared).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import string
import time
from pathlib import Path

import httpx
from bench_web import free_port, percentile, start_server, stop_server, summary_ms, wait_until_warm
from proctree import memory_kib, process_tree

REPO = Path(__file__).resolve().parents[1]

#: (share of requests, kind) of the mix.
MIX = ((0.25, "front"), (0.35, "claim"), (0.15, "explore"), (0.25, "live"))


def claim_ids(data_dir: Path) -> list[str]:
    """Every dev, train and test claim id (the claim pages to ask for)."""
    ids = []
    for split in ("dev", "train", "test"):
        path = data_dir / "comp90042-2024" / f"{split}-claims{'-unlabelled' if split == 'test' else ''}.json"
        ids += list(json.loads(path.read_text(encoding="utf-8")))
    return ids


def novel_text(rng: random.Random) -> str:
    """A claim of made-up words: nothing of it is in any cache (the classifier reads each
    made-up word as ``<unk>``, so its inputs repeat: see ``--live-words``)."""
    words = ["".join(rng.choices(string.ascii_lowercase, k=rng.randint(5, 10))) for _ in range(rng.randint(4, 9))]
    return " ".join(["Sea", *words, "rising"])


def vocabulary_text(rng: random.Random, vocabulary: list[str]) -> str:
    """A claim of real words of the classifier's vocabulary, drawn at random: every one a new
    model input, so every one a new forward call."""
    return " ".join(["Sea", *rng.sample(vocabulary, rng.randint(4, 9)), "rising"])


def classifier_words() -> list[str]:
    """The shipped classifier's alphabetic vocabulary entries (its special tokens left out)."""
    vocab = json.loads((REPO / "src" / "claimtrace" / "assets" / "classifier_vocab.json").read_text(encoding="utf-8"))
    return sorted(token for token in vocab if token.isalpha())


def plan(total: int, claims: list[str], seed: int = 0, vocabulary: list[str] | None = None) -> list[tuple[str, str]]:
    """(kind, path) of each request, in sending order."""
    rng = random.Random(seed)
    kinds = [kind for _, kind in MIX]
    weights = [share for share, _ in MIX]
    out = []
    for _ in range(total):
        kind = rng.choices(kinds, weights)[0]
        if kind == "front":
            path = "/walkthrough"
        elif kind == "claim":
            path = f"/claim/{rng.choice(claims)}.html"
        elif kind == "explore":
            path = "/explore/dev.json"
        else:
            text = novel_text(rng) if vocabulary is None else vocabulary_text(rng, vocabulary)
            path = "/live.json?" + str(httpx.QueryParams({"text": text}))
        out.append((kind, path))
    return out


def wait_until_prerendered(base: str, workers: int, limit: float = 900) -> float:
    """Ask ``/api/build.json`` (a new connection each time, so any worker may answer) until
    ``4 x workers`` answers in a row say the server is warm: every worker has rendered every
    claim page."""
    started = time.monotonic()
    in_a_row = 0
    while in_a_row < 4 * workers:
        if time.monotonic() - started > limit:
            raise SystemExit(f"the claim pages were not pre-rendered after {limit} s")
        answer = httpx.get(f"{base}/api/build.json", timeout=60, headers={"Connection": "close"}).json()
        in_a_row = in_a_row + 1 if answer.get("server", {}).get("warm") else 0
        if not in_a_row:
            time.sleep(1.0)
    return time.monotonic() - started


async def fetch(port: int, path: str) -> int:
    """One GET on a new loopback connection (``Connection: close``): the status code. A plain
    asyncio stream: little client CPU, and a timeout or cancel that always lets go."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n".encode("ascii"))
        await writer.drain()
        status = int((await reader.readline()).split()[1])
        while await reader.read(65536):
            pass
        return status
    finally:
        writer.close()


async def run_load(port: int, requests: list[tuple[str, str]], rate: float, seconds: float, pids: list[int]) -> dict:
    """Send ``requests`` at ``rate`` per second, each at its scheduled time; latency from then."""
    results: list[tuple[str, float, int | str]] = []
    memory: list[tuple[float, int]] = []

    async def send(kind: str, path: str, due: float) -> None:
        try:
            status: int | str = await asyncio.wait_for(fetch(port, path), timeout=10.0)
        except (TimeoutError, OSError, ValueError, IndexError) as err:
            status = type(err).__name__
        results.append((kind, time.perf_counter() - due, status))

    async def sample_memory(start: float) -> None:
        while True:
            memory.append((round(time.perf_counter() - start, 1), memory_kib(pids) * 1024))
            await asyncio.sleep(1.0)

    start = time.perf_counter() + 0.5
    sampler = asyncio.create_task(sample_memory(start))
    tasks = []
    for i, (kind, path) in enumerate(requests):
        due = start + i / rate
        delay = due - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
        tasks.append(asyncio.create_task(send(kind, path, due)))
    # every request has a 10 s timeout: all are done 10 s after the last is sent
    await asyncio.wait(tasks, timeout=max(1.0, start + seconds + 15 - time.perf_counter()))
    sampler.cancel()
    late = [task for task in tasks if not task.done()]
    for task in late:
        task.cancel()
    elapsed = time.perf_counter() - start
    by_kind: dict[str, list[float]] = {}
    statuses: dict[str, int] = {}
    for kind, seconds_taken, status in results:
        by_kind.setdefault(kind, []).append(1000 * seconds_taken)
        statuses[str(status)] = statuses.get(str(status), 0) + 1
    every = [ms for values in by_kind.values() for ms in values]
    return {
        "offered_rate": rate,
        "requests": len(requests),
        "client": "one asyncio connection per request (Connection: close)",
        "answered": len(results),
        "unanswered_at_the_end": len(late),
        "seconds": round(elapsed, 1),
        "statuses": statuses,
        "errors": len(requests) - statuses.get("200", 0),
        "latency_from_schedule": {**summary_ms(every), "p99_ms": round(percentile(every, 99), 2)},
        "latency_by_kind": {
            kind: {**summary_ms(values), "p99_ms": round(percentile(values, 99), 2)} for kind, values in by_kind.items()
        },
        "rss_mb": [(t, round(b / 2**20)) for t, b in memory],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workdir", required=True, type=Path)
    parser.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data")
    parser.add_argument("--rate", type=float, default=200.0)
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--workers", type=int, default=2, help="server processes (default 2: the target's two cores)")
    parser.add_argument(
        "--no-prerender", dest="prerender", action="store_false", help="do not pre-render every claim page once warm"
    )
    parser.add_argument(
        "--live-words",
        choices=("made-up", "vocabulary"),
        default="made-up",
        help="typed claims of made-up words (the issue's mix) or of random vocabulary words (every input new)",
    )
    args = parser.parse_args()
    if args.rate * args.seconds > 60_000:
        raise SystemExit("at most 60,000 requests per run")
    claims = claim_ids(args.data)
    vocabulary = classifier_words() if args.live_words == "vocabulary" else None
    requests = plan(int(args.rate * args.seconds), claims, vocabulary=vocabulary)
    load_before = os.getloadavg()
    port = free_port()
    serve = ["--data", str(args.data), "serve", "--workdir", str(args.workdir), "--port", str(port)]
    serve += ["--workers", str(args.workers), *(["--prerender"] if args.prerender else [])]
    server = start_server(serve, port)
    try:
        base = f"http://127.0.0.1:{port}"
        warm_seconds = wait_until_warm(base, limit=600)
        if args.prerender:
            warm_seconds += wait_until_prerendered(base, args.workers)
        pids = process_tree(server.pid)  # the server and uvicorn's workers
        idle_rss = memory_kib(pids) * 1024
        result = asyncio.run(run_load(port, requests, args.rate, args.seconds, pids))
    finally:
        stop_server(server)
    result.update(
        {
            "workers": args.workers,
            "prerender": args.prerender,
            "live_words": args.live_words,
            "warm_seconds": round(warm_seconds, 1),
            "rss_mb_before_load": round(idle_rss / 2**20),
            "load_average_before": [round(x, 2) for x in load_before],
            "load_average_after": [round(x, 2) for x in os.getloadavg()],
            "cpus": os.cpu_count(),
            "target_met": result["errors"] == 0 and result["latency_from_schedule"]["p99_ms"] < 1000,
        }
    )
    rss = result.pop("rss_mb")
    print(json.dumps(result, indent=1))
    print(json.dumps({"rss_mb_every_second": rss}, separators=(",", ":")))


if __name__ == "__main__":
    main()
