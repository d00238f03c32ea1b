"""A process and its workers, their memory and their CPU time, from /proc (Linux only): what the
benches that start a build or a server measure.

    from proctree import process_tree, memory_kib, cpu_seconds
    memory_kib(process_tree(pid), "Pss")   # the tree's proportional set sizes, summed
    cpu_seconds(process_tree(pid))         # the tree's user and system CPU seconds so far
"""

from __future__ import annotations

import os
from pathlib import Path

#: Where each measure is read: the resident set (a page shared by a fork counts in each process)
#: and the proportional set size (a shared page counts once, split between its sharers).
_SOURCES = {"VmRSS": "status", "Pss": "smaps_rollup"}


def process_tree(pid: int) -> list[int]:
    """``pid`` and every process below it (workers, their workers), found now."""
    found, todo = [], [pid]
    while todo:
        here = todo.pop()
        found.append(here)
        try:
            children = Path(f"/proc/{here}/task/{here}/children").read_text().split()
        except OSError:  # ended meanwhile
            continue
        todo.extend(int(child) for child in children)
    return found


def memory_kib(pids: list[int], measure: str = "VmRSS") -> int:
    """``measure`` (``"VmRSS"`` or ``"Pss"``) of the processes, summed, in KiB; a process that
    ended meanwhile counts 0."""
    total = 0
    for pid in pids:
        try:
            lines = Path(f"/proc/{pid}/{_SOURCES[measure]}").read_text().splitlines()
        except OSError:
            continue
        total += sum(int(line.split()[1]) for line in lines if line.startswith(measure + ":"))
    return total


def cpu_seconds(pids: list[int]) -> float:
    """User and system CPU seconds the processes have used so far, summed; a process that ended
    meanwhile counts 0."""
    total = 0.0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime, stime
    return total
