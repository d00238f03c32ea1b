"""Issue 44's three figures in one run, each against its budget scaled by this machine's speed.

    .venv/bin/python bench/bench_scale.py [--passages 1208827] [--first-pages 3] [--keep DIR] [--json]

Runs, in order:

1. ``calibrate.py`` (``../shared/bench/calibrate.py``): this machine's seconds for a fixed CPU
   workload; K = those seconds / 0.46 (the reference machine's), so a budget of T seconds at the
   reference is T x K here;
2. the demo build (``bench_build.py``'s: ``claimtrace build --demo`` in a new process over a new
   workdir): its wall time, against 30 s x K + 10 s (a noisy machine's allowance);
3. the course-scale build over ``bench/synthetic.py``'s corpus (1,208,827 passages): its wall
   time against 150 s x K, its peak memory (the largest single process's, ``ru_maxrss``, and the
   build and its workers' PSS summed at once) against 4 GB, and each step's peak;
4. the site's first page over that build (``bench_serve.py``: ``claimtrace serve`` with its
   defaults, typed-claims processes included, until ``/`` answers), ``--first-pages`` times,
   each against 3 s x K;
5. ``calibrate.py`` again.

K scales by the mean of the two readings; both are printed beside the figures, with the load
average, since other work on the machine moves them. Every figure is printed as
``figure  measured  budget  within?``. The builds are removed at the end unless ``--keep DIR``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from bench_build import PASSAGES, run_build, synthetic_corpus

REPO = Path(__file__).resolve().parents[1]
#: calibrate.py's reading on the reference machine, the budgets' unit.
REFERENCE_SECONDS = 0.46
#: The budgets at the reference (seconds; the demo build's allowance is added unscaled).
DEMO_BUILD_S, DEMO_ALLOWANCE_S = 30.0, 10.0
COURSE_BUILD_S = 150.0
FIRST_PAGE_S = 3.0
#: The course-scale build's memory budget, bytes (4 GB).
PEAK_BYTES = 4e9


def data_dir() -> Path:
    """The course data: ``CLAIMTRACE_DATA``, else ``../shared/data`` beside the repository."""
    chosen = os.environ.get("CLAIMTRACE_DATA")
    return Path(chosen) if chosen else REPO.parent / "shared" / "data"


def calibrate(data: Path) -> float:
    """``calibrate.py``'s seconds (it lies in ``bench/`` beside the data folder)."""
    script = data.parent / "bench" / "calibrate.py"
    if not script.is_file():
        raise SystemExit(f"{script}: not found (set CLAIMTRACE_DATA to the shared data folder)")
    env = {**os.environ, "NLTK_DATA": str(data / "nltk_data")}
    done = subprocess.run([sys.executable, str(script), str(data)], capture_output=True, text=True, env=env, check=True)
    return float(done.stdout.strip().splitlines()[-1])


def first_page_s(workdir: Path, data: Path) -> float:
    """Seconds from ``claimtrace serve``'s start to its first page (``bench_serve.py``)."""
    done = subprocess.run(
        [sys.executable, str(REPO / "bench" / "bench_serve.py"), "--workdir", str(workdir), "--data", str(data)]
        + ["--claims", "1"],
        capture_output=True,
        text=True,
        check=True,
    )
    return float(json.loads(done.stdout)["first_page_s"])


def rows(figures: dict, k: float) -> list[tuple[str, str, str, bool]]:
    """(figure, measured, budget, within) of each figure, the budgets scaled by ``k``."""
    demo, course = figures["demo"], figures["course"]
    peak_rss, peak_pss = course["peak_memory_mib"] * 2**20, course["peak_tree_memory_mib"] * 2**20
    out = [
        (
            "demo build, wall",
            f"{demo['wall_s']:.1f} s",
            f"{DEMO_BUILD_S * k + DEMO_ALLOWANCE_S:.1f} s",
            demo["wall_s"] <= DEMO_BUILD_S * k + DEMO_ALLOWANCE_S,
        ),
        (
            f"{course['passages']:,}-passage build, wall",
            f"{course['wall_s']:.1f} s",
            f"{COURSE_BUILD_S * k:.1f} s",
            course["wall_s"] <= COURSE_BUILD_S * k,
        ),
        ("  peak, one process", f"{peak_rss / 1e9:.2f} GB", "4.00 GB", peak_rss <= PEAK_BYTES),
        ("  peak, build and workers at once", f"{peak_pss / 1e9:.2f} GB", "4.00 GB", peak_pss <= PEAK_BYTES),
    ]
    for i, seconds in enumerate(figures["first_page_s"], 1):
        out.append(
            (
                f"first page over it, run {i}",
                f"{seconds:.2f} s",
                f"{FIRST_PAGE_S * k:.2f} s",
                seconds <= FIRST_PAGE_S * k,
            )
        )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--passages", type=int, default=PASSAGES, help="the synthetic corpus's size")
    parser.add_argument("--first-pages", type=int, default=3, help="how many times the first page is timed")
    parser.add_argument("--keep", default=None, help="build into DIR/demo and DIR/course and keep them")
    parser.add_argument("--json", dest="as_json", action="store_true", help="also print the figures as JSON")
    args = parser.parse_args()
    data = data_dir()
    figures: dict = {"calibrate_s": [calibrate(data)], "load_average": [os.getloadavg()]}
    print(f"calibrate.py: {figures['calibrate_s'][0]:.3f} s before", flush=True)
    parent = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="bench-scale-"))
    try:
        figures["demo"] = run_build(["--demo"], parent / "demo")
        print(f"demo build: {figures['demo']['wall_s']:.1f} s", flush=True)
        corpus = synthetic_corpus(args.passages)
        figures["course"] = run_build(["--evidence", str(corpus)], parent / "course")
        print(f"course-scale build: {figures['course']['wall_s']:.1f} s", flush=True)
        figures["first_page_s"] = [first_page_s(parent / "course", data) for _ in range(args.first_pages)]
    finally:
        if not args.keep:
            shutil.rmtree(parent, ignore_errors=True)
    figures["calibrate_s"].append(calibrate(data))
    figures["load_average"].append(os.getloadavg())
    report(figures)
    if args.as_json:
        print(json.dumps(figures, indent=1))


def report(figures: dict) -> None:
    before, after = figures["calibrate_s"]
    k = (before + after) / 2 / REFERENCE_SECONDS
    print(
        f"\ncalibrate.py: {before:.3f} s before, {after:.3f} s after: K = {k:.2f} (their mean / {REFERENCE_SECONDS} s); "
        f"load average {', '.join(f'{x:.1f}' for x in figures['load_average'][0])} before, "
        f"{', '.join(f'{x:.1f}' for x in figures['load_average'][1])} after ({os.cpu_count()} CPUs)"
    )
    print(f"{'figure':<38}{'measured':>10}{'budget':>11}  within")
    for name, measured, budget, within in rows(figures, k):
        print(f"{name:<38}{measured:>10}{budget:>11}  {'yes' if within else 'NO'}")
    print("the course-scale build's memory by step (largest process / the build and its workers at once):")
    for step, peak in figures["course"]["step_memory_mib"].items():
        print(f"  {step:<14}{peak['rss_mib']:7,.0f} MiB {peak['pss_mib']:7,.0f} MiB")


if __name__ == "__main__":
    main()
