"""BM25, the reference retriever: index build time and per-claim search time at course scale, and
its dev evidence F on the demo corpus.

    python bench/synthetic.py --out work/syn/evidence.json            # once (1,208,827 passages)
    python bench/bench_bm25.py [--evidence work/syn/evidence.json] [--processes 2] [--repeat 5]
                               [--distinct-words N] [--json]

* build: :func:`claimtrace.pipeline.bm25.build_bm25_index` from scratch in a fresh folder (tokenising in
  ``--processes`` workers, merging, bm25s's weights, saving), the passages already in memory as a
  build holds them (reading the file is timed apart). Target: <= 2 min on 2 cores.
  ``--distinct-words N`` adds N made-up words (one per passage) to stand in for a real corpus's
  larger vocabulary: each distinct word costs one Porter stemming.
* search: one ``search([claim])`` per dev claim (the 154 of dev-claims.json, raw text), after a
  warm-up, ``--repeat`` passes; median and p95 over every call. Target: median <= 10 ms.
* demo F: the course's per-claim evidence F (claimtrace.evaluation.scorer.evidence_f), averaged over the
  dev claims, of BM25's top six on the 5,240-passage demo corpus.

Wall clock and CPU time are both printed, with the load average: the machine is shared.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np

from claimtrace.data import files as data
from claimtrace.data.evidence import iter_evidence
from claimtrace.evaluation.scorer import evidence_f
from claimtrace.pipeline import bm25
from claimtrace.pipeline.preprocess import Preprocessor

REPO = Path(__file__).resolve().parents[1]


def _load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"{one:.1f} / {five:.1f} / {fifteen:.1f} (1 / 5 / 15 min) on {os.cpu_count()} CPUs"


def _evidence_file(given: str | None) -> Path:
    candidates = (
        [Path(given)] if given else [REPO / "work" / "syn" / "evidence.json", Path("/work/main/work/syn/evidence.json")]
    )
    for path in candidates:
        if path.is_file():
            return path
    raise SystemExit(
        f"no synthetic corpus at {', '.join(map(str, candidates))}: "
        "run python bench/synthetic.py --out work/syn/evidence.json"
    )


def made_up_words(n: int, seed: int = 11) -> list[str]:
    """``n`` distinct made-up lowercase words of 8 to 12 letters (stemmed like real rare words)."""
    rng = np.random.default_rng(seed)
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    words: dict[str, None] = {}
    while len(words) < n:
        for length in rng.integers(8, 13, size=n - len(words)).tolist():
            words["".join(rng.choice(letters, size=length))] = None
    return list(words)[:n]


def bench_build(
    evidence: Path, words: bm25.BM25Words, processes: int, distinct_words: int = 0
) -> tuple[bm25.BM25Index, dict]:
    started = time.perf_counter()
    passages = list(iter_evidence(evidence, check_md5=False))
    read_s = time.perf_counter() - started
    if distinct_words:
        # The synthetic corpus draws from CLIMATE-FEVER's few thousand words; a real corpus has
        # far more, and each distinct word is stemmed once (per worker). One new word per passage.
        extra = made_up_words(distinct_words)
        passages = [(pid, f"{text} {extra[i]}" if i < len(extra) else text) for i, (pid, text) in enumerate(passages)]
    folder = Path(tempfile.mkdtemp(prefix="bench-bm25-", dir=evidence.parent))
    try:
        print(f"load average before the build: {_load()}", flush=True)
        wall, cpu = time.perf_counter(), time.process_time()
        children = resource.getrusage(resource.RUSAGE_CHILDREN)
        bm25.build_bm25_index(folder, passages, words, processes=processes)
        build_s = time.perf_counter() - wall
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu_s = time.process_time() - cpu + (after.ru_utime + after.ru_stime) - (children.ru_utime + children.ru_stime)
        print(f"load average after the build: {_load()}", flush=True)
        started = time.perf_counter()
        index = bm25.BM25Index.load(folder / "index", words)
        load_s = time.perf_counter() - started
        size = sum(f.stat().st_size for f in (folder / "index").iterdir())
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    figures = {
        "passages": len(passages),
        "distinct_words_added": distinct_words,
        "read_s": read_s,
        "build_s": build_s,
        "build_cpu_s": cpu_s,
        "processes": processes,
        "load_s": load_s,
        "index_mb": size / 1e6,
        "postings": int(len(index.model.scores["data"])),
        "vocabulary": len(index.model.vocab_dict),
        "max_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "max_rss_children_mb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024,
    }
    print(
        f"passages {len(passages):,} (read in {read_s:.1f} s); build {build_s:.1f} s wall, {cpu_s:.1f} s CPU "
        f"({processes} processes); load {load_s:.2f} s; index {size / 1e6:.0f} MB, "
        f"{figures['postings']:,} postings, {figures['vocabulary']:,} terms",
        flush=True,
    )
    return index, figures


def bench_search(index: bm25.BM25Index, claims: list[str], repeat: int) -> dict:
    index.search(claims[:3])  # compile and warm
    wall, cpu, hits = [], [], []
    for _ in range(repeat):
        for claim in claims:
            t0, c0 = time.perf_counter(), time.process_time()
            ids, _ = index.search([claim])
            wall.append((time.perf_counter() - t0) * 1e3)
            cpu.append((time.process_time() - c0) * 1e3)
            hits.append(len(ids[0]))
    figures = {
        "claims": len(claims),
        "calls": len(wall),
        "ms_median": float(np.median(wall)),
        "ms_p95": float(np.percentile(wall, 95)),
        "ms_mean": float(np.mean(wall)),
        "cpu_ms_median": float(np.median(cpu)),
        "claims_with_fewer_than_6": int(sum(h < 6 for h in hits[: len(claims)])),
    }
    print(
        f"search, ms per claim over {len(wall)} calls: median {figures['ms_median']:.2f}, "
        f"p95 {figures['ms_p95']:.2f}, mean {figures['ms_mean']:.2f} (CPU median {figures['cpu_ms_median']:.2f}); "
        f"load average {_load()}",
        flush=True,
    )
    return figures


def demo_f(data_dir: Path) -> dict:
    corpus = data.demo_corpus(data_dir)
    dev = data.load_claims("dev", data_dir)
    index = bm25.BM25Index.from_passages(corpus.items(), bm25.BM25Words(Preprocessor.of_data_dir(data_dir)))
    ids, _ = index.search([c.text for c in dev.values()], k=6)
    f = [evidence_f(found, claim.evidences) for found, claim in zip(ids, dev.values())]
    figures = {
        "passages": len(corpus),
        "claims": len(dev),
        "F": float(np.mean(f)),
        "claims_with_a_gold_hit": int(sum(x > 0 for x in f)),
        "mean_returned": float(np.mean([len(x) for x in ids])),
    }
    print(
        f"demo corpus ({len(corpus):,} passages): dev evidence F of BM25 top 6 = {figures['F']:.4f} "
        f"({figures['claims_with_a_gold_hit']}/{len(dev)} claims with a gold passage found)",
        flush=True,
    )
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--evidence", default=None, help="the synthetic evidence.json (default: work/syn/evidence.json)"
    )
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=5, help="passes over the dev claims when timing search")
    parser.add_argument(
        "--distinct-words",
        type=int,
        default=0,
        help="add this many made-up words, one per passage, as a real corpus's larger vocabulary",
    )
    parser.add_argument("--data", default=None)
    parser.add_argument("--skip-build", action="store_true", help="only the demo F")
    parser.add_argument("--json", dest="as_json", action="store_true", help="also print the figures as JSON")
    args = parser.parse_args()
    data_dir = data.find_data_dir(args.data)
    report: dict = {"load_average_start": os.getloadavg()}
    if not args.skip_build:
        words = bm25.BM25Words(Preprocessor.of_data_dir(data_dir))
        evidence = _evidence_file(args.evidence)
        index, report["build"] = bench_build(evidence, words, args.processes, args.distinct_words)
        claims = [c.text for c in data.load_claims("dev", data_dir).values()]
        report["search"] = bench_search(index, claims, args.repeat)
    report["demo"] = demo_f(data_dir)
    report["load_average_end"] = os.getloadavg()
    if args.as_json:
        print(json.dumps(report))


if __name__ == "__main__":
    main()
