"""A short lecture hall (bench/bench_lecture.py, shortened): typists and uploaders at once
against ``claimtrace serve --workers 2`` and its run store: no error, every upload served by
every worker, the workers' memory level."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench"


def test_a_short_lecture_hall_has_no_error_and_every_upload_everywhere(demo_build, data_dir):
    sys.path.insert(0, str(BENCH))
    try:
        bench = importlib.import_module("bench_lecture")
    finally:
        sys.path.remove(str(BENCH))
    args = ["--workdir", str(demo_build.root), "--data", str(data_dir), "--no-calibrate"]
    args += ["--typists", "8", "--uploaders", "2", "--seconds", "5", "--think", "0.2", "--upload-every", "1"]
    summary = bench.main(args)
    assert summary["errors"] == 0, summary["first_errors"]
    assert summary["typed"] >= 8 and summary["uploads"] >= 4, summary
    assert summary["uploads_served_by_every_worker"] == summary["uploads"], summary
    memory = summary["worker_mib"]
    assert memory["end"] - memory["middle"] < 150, memory  # level: no climb of a leak's size in seconds
