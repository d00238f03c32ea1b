"""A lecture hall: many students typing claims and a few uploading predictions files at once,
against ``claimtrace serve --workers 2`` with its run store.

    python bench/bench_lecture.py --workdir BUILD [--typists 30] [--uploaders 5] [--seconds 30]

Starts ``claimtrace serve --workdir BUILD --workers W --store TMP`` on a free loopback port,
then for ``--seconds``: each typist (a thread, closed loop) posts a new typed claim, reads the
answer and waits ``--think`` seconds (a student reading it) before the next; each uploader posts
a new predictions file (the course baseline's claims with labels of its own: every file a new
run) every ``--upload-every`` seconds. The worker processes' resident memory is sampled every
second. Then every uploaded run's page is asked for on new connections until each worker has
answered it (a worker names itself in /api/build.json).

Prints the calibration (``python ../shared/bench/calibrate.py ../shared/data``), then one JSON
summary: requests and errors of each kind, typed claims' median/p95/p99 latency, uploads kept,
runs every worker served, and the memory (MiB) of the workers at the start, the middle and the
end. ``tests/web/test_lecture_hall.py`` runs a short version.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import tempfile
import threading
import time
from pathlib import Path

import httpx
from bench_statistics import calibrate
from bench_typed import WORDS
from bench_web import free_port, percentile, start_server, stop_server, wait_warm
from proctree import memory_kib, process_tree

REPO = Path(__file__).resolve().parents[1]
LABELS = ("SUPPORTS", "REFUTES", "NOT_ENOUGH_INFO", "DISPUTED")


def typed_claim(rng: random.Random, n: int) -> str:
    return " ".join(rng.sample(WORDS, 8)).capitalize() + f" ({n})."


def upload_file(template: dict, rng: random.Random) -> bytes:
    """A new predictions file: the template's claims and evidences, each label drawn anew."""
    return json.dumps({cid: {**entry, "claim_label": rng.choice(LABELS)} for cid, entry in template.items()}).encode()


class Tally:
    """What the clients saw, shared between their threads."""

    def __init__(self):
        self.lock = threading.Lock()
        self.typed_ms: list[float] = []
        self.errors: list[str] = []
        self.uploaded: list[str] = []
        self.upload_ms: list[float] = []

    def add(self, kind: str, value) -> None:
        with self.lock:
            getattr(self, kind).append(value)


def typist(base: str, seed: int, until: float, think: float, tally: Tally) -> None:
    rng = random.Random(seed)
    with httpx.Client(timeout=120) as http:
        n = 0
        while time.monotonic() < until:
            n += 1
            started = time.perf_counter()
            try:
                answer = http.post(f"{base}/api/trace", json={"text": typed_claim(rng, seed * 10_000 + n)})
                if answer.status_code != 200:
                    tally.add("errors", f"typed: {answer.status_code}")
                else:
                    tally.add("typed_ms", (time.perf_counter() - started) * 1e3)
            except httpx.HTTPError as err:
                tally.add("errors", f"typed: {err!r}")
            time.sleep(think)


def uploader(base: str, seed: int, until: float, every: float, template: dict, tally: Tally) -> None:
    rng = random.Random(seed)
    n = 0
    while time.monotonic() < until:
        n += 1
        started = time.perf_counter()
        try:
            answer = httpx.post(
                f"{base}/api/compare",
                params={"name": f"student {seed}-{n}"},
                content=upload_file(template, rng),
                timeout=120,
            )
            if answer.status_code != 201:
                tally.add("errors", f"upload: {answer.status_code} {answer.text[:120]}")
            else:
                tally.add("uploaded", answer.json()["digest"])
                tally.add("upload_ms", (time.perf_counter() - started) * 1e3)
        except httpx.HTTPError as err:
            tally.add("errors", f"upload: {err!r}")
        time.sleep(every)


def served_by_every_worker(base: str, digest: str, workers: int, tries: int = 60) -> bool:
    """Whether each worker answers the run's page (200): new connections until each has."""
    seen: set[int] = set()
    for _ in range(tries):
        with httpx.Client(timeout=120) as connection:  # one connection stays with one worker
            if connection.get(f"{base}/compare/{digest}.json").status_code != 200:
                return False
            seen.add(connection.get(f"{base}/api/build.json").json()["server"]["process"])
        if len(seen) == workers:
            return True
    return False


def lecture(base: str, server_pid: int, args, template: dict) -> dict:
    """The lecture itself against a started server (warm): the summary."""
    tally = Tally()
    until = time.monotonic() + args.seconds
    threads = [threading.Thread(target=typist, args=(base, s, until, args.think, tally)) for s in range(args.typists)]
    threads += [
        threading.Thread(target=uploader, args=(base, 1000 + s, until, args.upload_every, template, tally))
        for s in range(args.uploaders)
    ]
    workers = [pid for pid in process_tree(server_pid) if pid != server_pid]
    memory = [memory_kib(workers) / 1024]
    for thread in threads:
        thread.start()
    while time.monotonic() < until:
        time.sleep(1.0)
        memory.append(memory_kib(workers) / 1024)
    for thread in threads:
        thread.join()
    kept = sorted(set(tally.uploaded))
    everywhere = sum(served_by_every_worker(base, digest, args.workers) for digest in kept)
    typed = tally.typed_ms or [0.0]
    return {
        "workers": args.workers,
        "typists": args.typists,
        "uploaders": args.uploaders,
        "seconds": args.seconds,
        "typed": len(tally.typed_ms),
        "typed_median_ms": round(statistics.median(typed), 1),
        "typed_p95_ms": round(percentile(typed, 95), 1),
        "typed_p99_ms": round(percentile(typed, 99), 1),
        "uploads": len(tally.uploaded),
        "upload_median_ms": round(statistics.median(tally.upload_ms or [0.0]), 1),
        "errors": len(tally.errors),
        "first_errors": tally.errors[:5],
        "uploads_served_by_every_worker": everywhere,
        "worker_mib": {
            "start": round(memory[0], 1),
            "middle": round(memory[len(memory) // 2], 1),
            "end": round(memory[-1], 1),
        },
    }


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workdir", required=True, type=Path)
    parser.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--typists", type=int, default=30)
    parser.add_argument("--uploaders", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--think", type=float, default=1.0, help="seconds a typist reads an answer")
    parser.add_argument("--upload-every", type=float, default=2.0, help="seconds between an uploader's files")
    parser.add_argument("--no-calibrate", action="store_true")
    args = parser.parse_args(argv)
    if not args.no_calibrate:
        print(json.dumps({"calibrate_s": calibrate(args.data)}), flush=True)
    baseline = json.loads((args.data / "comp90042-2024" / "dev-claims-baseline.json").read_text(encoding="utf-8"))
    with tempfile.TemporaryDirectory() as folder:
        port = free_port()
        serve = ["--data", str(args.data), "serve", "--workdir", str(args.workdir), "--port", str(port)]
        serve += ["--workers", str(args.workers), "--store", str(Path(folder) / "runs.sqlite")]
        server = start_server(serve, port)
        try:
            base = f"http://127.0.0.1:{port}"
            warm_seconds = wait_warm(base, args.workers)
            summary = {**lecture(base, server.pid, args, baseline), "warm_up_s": round(warm_seconds, 1)}
        finally:
            stop_server(server)
    print(json.dumps(summary), flush=True)
    return summary


if __name__ == "__main__":
    main()
