"""What each quirk cost: the demo build's extra time for the new stages, and its scoreboard.

    python bench/bench_quirk_costs.py [--workdir DIR] [--json]

Builds the demo corpus stage by stage in ``--workdir`` (default: a fresh temporary folder; an
existing build is completed, and what it already holds costs nothing), timing each step:

* the build's earlier stages: tagging, retrieval, the notebook model's classifier stage;
* the new ones: the quirk variants' dev and test records (``build_variant_records``), the BM25
  stage (``build_bm25``: index, six passages per claim of every split), the extra verdicts
  (``build_more_verdicts``: the intended model on dev and test, both protocols, every source;
  the notebook's model on BM25 and the variants' evidence) and the scoreboard.

Then prints the dev scoreboard beside the course's Table 2. Wall clock and CPU time are both
printed, with the load average: the machine is shared.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

from claimtrace.data.files import find_data_dir
from claimtrace.workdir.builder import cyclic_gc_paused
from claimtrace.workdir.integrity import check_build_record, open_file_manifest
from claimtrace.workdir.layout import Workdir
from claimtrace.workdir.reader import BuildReader
from claimtrace.workdir.stages import bm25, classifier, quirk_costs, retrieval, tagging
from claimtrace.workdir.stages.corpus import build_passage_store, load_corpus

NEW_STEPS = ("variant_records", "bm25", "more_verdicts", "scoreboard")


def _timed(timings: dict, name: str, step, *args) -> None:
    wall, cpu = time.perf_counter(), time.process_time()
    step(*args)
    timings[name] = {"wall_s": round(time.perf_counter() - wall, 1), "cpu_s": round(time.process_time() - cpu, 1)}


def run(root: Path, processes: int = 1) -> dict:
    """Time every step of a demo build in ``root``; return the timings and the scoreboard."""
    data_dir = find_data_dir()
    work = Workdir(root)
    root.mkdir(parents=True, exist_ok=True)
    files = open_file_manifest(work)
    passages, description = load_corpus(work, data_dir, None)
    check_build_record(work, files, description, None, corpus_changed=False)
    build_passage_store(work, passages)
    reader = BuildReader(root, data_dir)  # the build's one reader, as the build opens it
    timings: dict = {}
    with cyclic_gc_paused():  # as the build runs its stages
        _timed(timings, "tagging", tagging.build_tagging, reader, passages, processes)
        _timed(timings, "retrieval", retrieval.build_retrieval, reader, processes)
        _timed(timings, "variant_records", retrieval.build_variant_records, reader)
        _timed(timings, "bm25", bm25.build_bm25, reader, passages, processes)
        _timed(timings, "classifier", classifier.build_classifier, reader)
        _timed(timings, "more_verdicts", quirk_costs.build_more_verdicts, reader)
        _timed(timings, "scoreboard", quirk_costs.build_scoreboard, reader)
    extra = sum(timings[name]["wall_s"] for name in NEW_STEPS)
    return {
        "timings": timings,
        "extra_wall_s": round(extra, 1),
        "load_average": os.getloadavg(),
        "scoreboard": quirk_costs.build_scoreboard(reader),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workdir", type=Path, default=None)
    parser.add_argument("--processes", type=int, default=1)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    root = args.workdir or Path(tempfile.mkdtemp(prefix="claimtrace-quirks-"))
    result = run(root, args.processes)
    if args.json:
        print(json.dumps(result, indent=1))
        return
    for name, t in result["timings"].items():
        marker = " (new)" if name in NEW_STEPS else ""
        print(f"{name:16s} {t['wall_s']:7.1f} s wall {t['cpu_s']:7.1f} s CPU{marker}")
    print(f"new stages: {result['extra_wall_s']} s wall; load average {result['load_average']}")
    board = result["scoreboard"]
    anchor = board["anchor"]
    print(
        f"\n{'course Table 2 (' + board['split'] + ')':34s} F {anchor['F']:.4f}  A {anchor['A']:.4f}  HM {anchor['HM']:.4f}"
    )
    for row in board["rows"]:
        print(f"{row['name']:34s} F {row['F']:.4f}  A {row['A']:.4f}  HM {row['HM']:.4f}")


if __name__ == "__main__":
    main()
