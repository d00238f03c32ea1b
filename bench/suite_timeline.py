"""Where the test suite's time goes: each test's start and end in each test process.

    PYTHONPATH=bench SUITE_TIMELINE=/tmp/timeline \\
        env -u PYTHONDONTWRITEBYTECODE .venv/bin/python -m pytest -q -n 2 --dist worksteal -p suite_timeline
    .venv/bin/python bench/suite_timeline.py /tmp/timeline

As a pytest plugin (``-p suite_timeline``, with ``SUITE_TIMELINE`` naming an existing folder), it
appends one line per test, ``start end node-id`` (seconds since the epoch), to a file per
process (``gw0.tsv``, ``gw1.tsv``). Run as a script over that folder, it prints what each
process did: its busy time, when it finished, the gaps between its tests over a second (a
process waiting for work), and the twenty modules that took the most time.
"""

from __future__ import annotations

import os
import sys
import time
from collections import defaultdict
from pathlib import Path

import pytest


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    start = time.time()
    yield
    end = time.time()
    folder = os.environ.get("SUITE_TIMELINE")
    if folder:
        process = os.environ.get("PYTEST_XDIST_WORKER", "main")
        with open(Path(folder) / f"{process}.tsv", "a", encoding="utf-8") as out:
            out.write(f"{start:.3f}\t{end:.3f}\t{item.nodeid}\n")


def summary(folder: Path) -> None:
    runs = {}
    for path in sorted(folder.glob("*.tsv")):
        rows = [line.rstrip("\n").split("\t") for line in path.read_text(encoding="utf-8").splitlines()]
        runs[path.stem] = sorted((float(start), float(end), node) for start, end, node in rows)
    first = min(rows[0][0] for rows in runs.values())
    by_module: dict[str, float] = defaultdict(float)
    for process, rows in runs.items():
        busy = sum(end - start for start, end, _ in rows)
        gaps = [(rows[i + 1][0] - rows[i][1], rows[i][1] - first) for i in range(len(rows) - 1)]
        long_gaps = [f"{gap:.1f} s at {at:.0f} s" for gap, at in gaps if gap > 1]
        print(f"{process}: {len(rows)} tests, busy {busy:.1f} s, last end {rows[-1][1] - first:.1f} s")
        print(f"  gaps over 1 s: {', '.join(long_gaps) or 'none'}")
        for start, end, node in rows:
            by_module[node.split("::")[0]] += end - start
    total = sum(by_module.values())
    print(f"all processes: {total:.1f} s of tests")
    for module, seconds in sorted(by_module.items(), key=lambda item: -item[1])[:20]:
        print(f"  {seconds:7.1f} s  {seconds / total:5.1%}  {module}")


if __name__ == "__main__":
    summary(Path(sys.argv[1]))
