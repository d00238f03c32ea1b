"""A build's memory step by step: its process and every worker sampled while the build says on
stderr which step it is in (``claimtrace build`` logs ``<step>: <what>`` at each step's start and
``<step>: done in ...`` at its end).

    sampler = StageMemory(process.pid)
    sampler.start()
    for line in process.stderr:           # the build's log, read as it comes
        sampler.saw(line)
    sampler.done.set(); sampler.join()
    sampler.peaks()   # {step: {"rss_mib": ..., "pss_mib": ..., "largest": ...}} in the build's order

For each step: the largest single process's resident set (the build's or a worker's; its
``VmHWM`` where it rose between two samples, so a peak shorter than the sampling interval still
counts) and the summed PSS of the whole tree at one sample (what the machine gave the build at
once, a shared page counted once). Time before the first step is ``start`` (reading the corpus,
the passage store); time between two steps is the earlier one's (the manifest recording its
files); after the scoreboard, ``end`` (the build checked again).
"""

from __future__ import annotations

import re
import threading
import time
from pathlib import Path

from proctree import memory_kib, process_tree

#: The steps ``claimtrace build`` names (``BuildRun.step``), in the order it runs them.
STEPS = ("tagging", "retrieval", "variants", "bm25", "classifier", "more verdicts", "sweep", "scoreboard")
_STEP_LINE = re.compile(rf"^({'|'.join(STEPS)}): (?!done in )(?!.*, alongside: )")
_DONE_LINE = re.compile(rf"^({'|'.join(STEPS)}): done in ")


def _status_kib(pid: int) -> tuple[int, int, str]:
    """A process's resident set and its high-water mark (KiB) and its name; zeros once ended."""
    try:
        lines = Path(f"/proc/{pid}/status").read_text().splitlines()
    except OSError:
        return 0, 0, ""
    fields = dict(line.split(":", 1) for line in lines if ":" in line)

    def kib(name: str) -> int:
        return int(fields.get(name, "0 kB").split()[0])

    return kib("VmRSS"), kib("VmHWM"), fields.get("Name", "").strip()


class StageMemory(threading.Thread):
    """Samples the tree under ``pid`` every ``interval`` seconds, each sample filed under the
    step the build's log last named (:meth:`saw`)."""

    def __init__(self, pid: int, interval: float = 0.2):
        super().__init__(daemon=True)
        self.pid, self.interval, self.done = pid, interval, threading.Event()
        self.step = "start"
        self._hwm: dict[int, int] = {}
        self._peaks: dict[str, dict] = {}
        self._since = time.perf_counter()
        #: Every sample: (seconds since the start, step, largest process's MiB, the tree's PSS MiB,
        #: each process's resident MiB by pid), for ``--timeline``.
        self.timeline: list[tuple[float, str, float, float, dict[int, float]]] = []
        self._lock = threading.Lock()

    def saw(self, line: str) -> None:
        """One line of the build's stderr: a step's start moves the samples to it."""
        if match := _STEP_LINE.match(line):
            with self._lock:
                self._sample()  # what the step before held up to here is its own
                self.step = match.group(1)
        elif _DONE_LINE.match(line) and line.startswith("scoreboard"):
            with self._lock:
                self._sample()
                self.step = "end"

    def run(self) -> None:
        while not self.done.wait(self.interval):
            with self._lock:
                self._sample()

    def _sample(self) -> None:
        pids = process_tree(self.pid)
        largest, largest_pid = 0, self.pid
        each: dict[int, float] = {}
        for pid in pids:
            rss, hwm, _ = _status_kib(pid)
            each[pid] = rss / 1024
            seen = max(rss, hwm if hwm > self._hwm.get(pid, 0) else 0)
            self._hwm[pid] = max(hwm, self._hwm.get(pid, 0))
            if seen > largest:
                largest, largest_pid = seen, pid
        pss = memory_kib(pids, "Pss")
        peak = self._peaks.setdefault(self.step, {"rss_mib": 0.0, "pss_mib": 0.0, "largest": "", "processes": 0})
        if largest / 1024 > peak["rss_mib"]:
            peak["rss_mib"] = largest / 1024
            peak["largest"] = "build" if largest_pid == self.pid else "worker"
        peak["pss_mib"] = max(peak["pss_mib"], pss / 1024)
        peak["processes"] = max(peak["processes"], len(pids))
        self.timeline.append((time.perf_counter() - self._since, self.step, largest / 1024, pss / 1024, each))

    def peaks(self) -> dict[str, dict]:
        """Each step's peaks, in the order the build ran them (``start`` first, ``end`` last)."""
        with self._lock:
            return {step: dict(figures) for step, figures in self._peaks.items()}
