"""Time streaming a user's evidence.json: the JSON parse alone, and with the corpus checks.

Each measurement runs in its own process (so max RSS is its own), reading the file once to
the end; the file is read once beforehand so every run finds it in the page cache. The best
run by CPU time is reported: on a shared machine wall time mostly measures the neighbours.

    python bench/bench_reader.py --evidence work/syn/evidence.json [--repeat 3] [--chunk-size BYTES]
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

MODES = {
    "stream_json_object": "parse only: every (id, text) member",
    "iter_evidence": "parse and corpus checks (duplicate ids, lone surrogates, size), no md5",
    "dict_iter_evidence": "what the build does: dict(iter_evidence(...)), the corpus held whole",
    "json_loads_pairs": "the standard library instead: json.loads with an object_pairs_hook refusing duplicate ids",
}


def _refusing_duplicates(pairs: list[tuple[str, object]]) -> dict:
    corpus = dict(pairs)
    if len(corpus) != len(pairs):
        raise ValueError("an id appears twice")
    return corpus


def measure(mode: str, evidence: Path, chunk_size: int) -> dict:
    """One run in this process: {"mode", "passages", "seconds", "max_rss_mb"}."""
    from claimtrace.data.evidence import iter_evidence, stream_json_object

    started, cpu_started = time.perf_counter(), time.process_time()
    if mode == "stream_json_object":
        passages = sum(1 for _ in stream_json_object(evidence, chunk_size))
    elif mode == "iter_evidence":
        passages = sum(1 for _ in iter_evidence(evidence, check_md5=False, chunk_size=chunk_size))
    elif mode == "dict_iter_evidence":
        passages = len(dict(iter_evidence(evidence, check_md5=False, chunk_size=chunk_size)))
    else:
        passages = len(json.loads(evidence.read_bytes(), object_pairs_hook=_refusing_duplicates))
    seconds, cpu = time.perf_counter() - started, time.process_time() - cpu_started
    max_rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {
        "mode": mode,
        "passages": passages,
        "seconds": round(seconds, 3),
        "cpu_seconds": round(cpu, 3),
        "max_rss_mb": round(max_rss_mb),
    }


def _cpu_wall(run: dict) -> str:
    return f"{run['cpu_seconds']}/{run['seconds']}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--evidence", required=True, type=Path)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--chunk-size", type=int, default=1 << 20)
    parser.add_argument("--one", choices=sorted(MODES), help=argparse.SUPPRESS)  # a child run
    args = parser.parse_args()
    if args.one:
        print(json.dumps(measure(args.one, args.evidence, args.chunk_size)))
        return
    with open(args.evidence, "rb") as handle:  # warm the page cache
        while handle.read(1 << 24):
            pass
    size_mb = args.evidence.stat().st_size / 1e6
    for mode, what in MODES.items():
        runs = []
        for _ in range(args.repeat):
            child = [
                sys.executable,
                __file__,
                "--evidence",
                str(args.evidence),
                "--chunk-size",
                str(args.chunk_size),
                "--one",
                mode,
            ]
            runs.append(json.loads(subprocess.run(child, check=True, capture_output=True, text=True).stdout))
        best = min(runs, key=lambda r: r["cpu_seconds"])
        print(
            f"{mode}: {best['passages']:,} passages, {size_mb:.1f} MB ({what})\n"
            f"  best of {args.repeat}: CPU {best['cpu_seconds']:.2f} s, wall {best['seconds']:.2f} s "
            f"({size_mb / best['seconds']:.0f} MB/s), max RSS {best['max_rss_mb']} MB; "
            f"all runs (CPU/wall s): {', '.join(_cpu_wall(r) for r in runs)}"
        )


if __name__ == "__main__":
    main()
