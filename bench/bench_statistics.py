"""Time the statistics: a build's dev scoreboard, and a class of students' prediction files.

    python bench/bench_statistics.py [--workdir DIR] [--students 70] [--json]

Each measurement runs in its own process (so its max RSS is its own), best of ``--repeat``
runs by wall time:

* ``scoreboard``: the statistics of a build's dev scoreboard (every row's figures with their
  intervals, every row and baseline paired with the notebook's row, Holm-corrected:
  ``significance.against_reference``), on the rows and baselines ``--workdir`` already scored;
  without a workdir, 20 synthetic rows and 3 baselines of 154 claims instead;
* ``class``: ``--students`` synthetic dev prediction systems (154 claims, random labels and
  per-claim F values, seed 2024) with every pair compared (``significance.every_pair``: 2,415
  pairs for 70), then each against three reference systems (``against_reference``);
* the notebook-style baselines, timed on one pair and scaled to every pair of the class: a
  plain-Python loop over the 10,000 resamples (the means of both systems' F and right/wrong at
  each resample's claims, A, F and HM differences, their sorted quantiles and p), and
  ``scipy.stats.bootstrap`` (paired, percentile, vectorised) once per figure (A, F and HM).

Before the figures it prints this machine's calibration, ``calibrate.py``'s seconds (the shared
bench beside the repository: ``python ../shared/bench/calibrate.py ../shared/data``), so that
the timings can be compared across machines.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
N_CLAIMS, SEED = 154, 2024
#: Per-claim F values a system gets, besides 0 (the course's F of a handful of passages).
F_VALUES = (0.2, 0.25, 1 / 3, 0.4, 0.5, 2 / 3, 1.0)


def synthetic_systems(count: int, prefix: str, seed: int = SEED) -> dict:
    """``count`` systems on the same 154 claims (their gold labels drawn from :data:`SEED`):
    uniformly random labels, F 0 for about half the claims and one of :data:`F_VALUES` for the
    others (``count`` and ``seed`` fix them all)."""
    from claimtrace.constants import LABELS
    from claimtrace.evaluation.statistics import PerClaim

    gold = tuple(LABELS[i] for i in np.random.default_rng(SEED).integers(0, len(LABELS), N_CLAIMS))
    rng = np.random.default_rng([seed, count])
    out = {}
    for k in range(count):
        predicted = tuple(LABELS[i] for i in rng.integers(0, len(LABELS), N_CLAIMS))
        f = np.where(rng.random(N_CLAIMS) < 0.5, 0.0, rng.choice(F_VALUES, N_CLAIMS))
        right = np.array([p == g for p, g in zip(predicted, gold, strict=True)])
        out[f"{prefix}{k}"] = PerClaim(gold, predicted, f, right)
    return out


def scoreboard_systems(workdir: Path | None) -> tuple[dict, str]:
    """The scoreboard's systems (its rows and baselines, per claim) and its reference row: the
    build's, scored as the build scores them, or 20 + 3 synthetic ones."""
    if workdir is None:
        systems = synthetic_systems(20, "row-")
        systems.update(synthetic_systems(3, "baseline-", SEED + 1))
        return systems, "row-0"
    from claimtrace.data.files import find_data_dir
    from claimtrace.evaluation import scoreboard as board
    from claimtrace.evaluation.significance import strict_per_claim
    from claimtrace.workdir.reader import BuildReader

    build = BuildReader(workdir, find_data_dir())
    gold = build.claims("dev")
    systems = {row.name: strict_per_claim(board.row_result(build, "dev", row), gold) for row in board.scoreboard_rows()}
    systems.update({b.name: strict_per_claim(r, gold) for b, r in board.baseline_results(build, "dev", gold)})
    return systems, board.NOTEBOOK_ROW.name


#: CPU seconds of every step timed in this process (on a shared machine, wall time mostly
#: measures the neighbours): summed into each measurement's ``cpu_seconds``.
_CPU: list[float] = []


def _timed(step) -> tuple[float, object]:
    """Wall seconds of ``step()`` and its result; its CPU seconds go to :data:`_CPU`."""
    started, cpu = time.perf_counter(), time.process_time()
    result = step()
    _CPU.append(time.process_time() - cpu)
    return time.perf_counter() - started, result


def measure_scoreboard(workdir: Path | None) -> dict:
    from claimtrace.evaluation.significance import against_reference

    systems, reference = scoreboard_systems(workdir)
    seconds, tested = _timed(lambda: against_reference(systems, reference))
    return {"systems": len(systems), "comparisons": len(tested["paired"]), "seconds": seconds}


def measure_class(students: int) -> dict:
    from claimtrace.evaluation.significance import against_reference, every_pair

    systems = synthetic_systems(students, "student-")
    pair_seconds, pairs = _timed(lambda: every_pair(systems))
    with_references = {**synthetic_systems(3, "reference-", SEED + 1), **systems}
    reference_seconds, tested = _timed(lambda: against_reference(with_references, "reference-0"))
    return {
        "systems": students,
        "pairs": len(pairs),
        "every_pair_seconds": pair_seconds,
        "against_references": len(tested["paired"]),
        "against_references_seconds": reference_seconds,
        "seconds": pair_seconds + reference_seconds,
    }


def _plain_quantile(values: list[float], q: float) -> float:
    """numpy's default (linear) quantile of a list, in plain Python."""
    ordered = sorted(values)
    position = q * (len(ordered) - 1)
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def _plain_hm(f: float, a: float) -> float:
    return 0.0 if f + a == 0 else 2 * f * a / (f + a)


def measure_plain_loop(resamples: int) -> dict:
    """One pair's paired bootstrap as a notebook would write it: a Python loop over resamples."""
    one, other = list(synthetic_systems(2, "s-").values())
    f1, f2, r1, r2 = one.f.tolist(), other.f.tolist(), one.right.tolist(), other.right.tolist()
    draws = np.random.default_rng(SEED).integers(0, N_CLAIMS, size=(resamples, N_CLAIMS)).tolist()

    def pair() -> dict:
        gaps = {"A": [], "F": [], "HM": []}
        for claims in draws:
            mf1, mf2 = sum(f1[i] for i in claims) / N_CLAIMS, sum(f2[i] for i in claims) / N_CLAIMS
            ma1, ma2 = sum(r1[i] for i in claims) / N_CLAIMS, sum(r2[i] for i in claims) / N_CLAIMS
            gaps["A"].append(ma1 - ma2)
            gaps["F"].append(mf1 - mf2)
            gaps["HM"].append(_plain_hm(mf1, ma1) - _plain_hm(mf2, ma2))
        out = {}
        for key, values in gaps.items():
            below = sum(v <= 0 for v in values) / len(values)
            above = sum(v >= 0 for v in values) / len(values)
            out[key] = (_plain_quantile(values, 0.025), _plain_quantile(values, 0.975), min(1.0, 2 * min(below, above)))
        return out

    seconds, _ = _timed(pair)
    return {"resamples": resamples, "seconds_one_pair": seconds}


def measure_scipy(resamples: int) -> dict:
    """One pair's three figures (A, F, HM differences), each by ``scipy.stats.bootstrap``."""
    from scipy import stats

    one, other = list(synthetic_systems(2, "s-").values())
    columns = (one.f, one.right.astype(float), other.f, other.right.astype(float))

    def hm(f, a):
        total = f + a
        return np.where(total == 0, 0.0, 2 * f * a / np.where(total == 0, 1.0, total))

    statistics = {
        "A": lambda f1, a1, f2, a2, axis=-1: a1.mean(axis) - a2.mean(axis),
        "F": lambda f1, a1, f2, a2, axis=-1: f1.mean(axis) - f2.mean(axis),
        "HM": lambda f1, a1, f2, a2, axis=-1: hm(f1.mean(axis), a1.mean(axis)) - hm(f2.mean(axis), a2.mean(axis)),
    }

    def pair() -> None:
        for statistic in statistics.values():
            stats.bootstrap(
                columns, statistic, n_resamples=resamples, paired=True, vectorized=True,
                method="percentile", random_state=np.random.default_rng(SEED),
            )  # fmt: skip

    seconds, _ = _timed(pair)
    return {"resamples": resamples, "seconds_one_pair": seconds}


MODES = {
    "scoreboard": lambda args: measure_scoreboard(args.workdir),
    "class": lambda args: measure_class(args.students),
    "plain_loop": lambda args: measure_plain_loop(args.resamples),
    "scipy_bootstrap": lambda args: measure_scipy(args.resamples),
}


def one_run(args) -> dict:
    result = MODES[args.one](args)
    return {**result, "cpu_seconds": sum(_CPU), "max_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def in_process(mode: str, args) -> dict:
    """Best of ``args.repeat`` runs of ``mode``, each in a new process."""
    command = [sys.executable, __file__, "--one", mode, "--students", str(args.students)]
    command += ["--resamples", str(args.resamples)] + (["--workdir", str(args.workdir)] if args.workdir else [])
    runs = [
        json.loads(subprocess.run(command, check=True, capture_output=True, text=True).stdout)
        for _ in range(args.repeat)
    ]
    return min(runs, key=lambda run: run.get("seconds", run.get("seconds_one_pair")))


def calibrate(data_dir: Path) -> float | None:
    """``calibrate.py``'s seconds on this machine (None when the shared bench is not there)."""
    script = REPO.parent / "shared" / "bench" / "calibrate.py"
    if not script.is_file():
        return None
    env = {**os.environ, "NLTK_DATA": str(data_dir / "nltk_data")}
    done = subprocess.run([sys.executable, str(script), str(data_dir)], capture_output=True, text=True, env=env)
    return float(done.stdout.strip()) if done.returncode == 0 else None


def report(results: dict) -> None:
    pairs = results["class"]["pairs"]
    print(f"calibrate: {results['calibrate']} s (python ../shared/bench/calibrate.py ../shared/data)")
    print(f"load average: {' '.join(f'{x:.1f}' for x in results['load_average'])}")
    board = results["scoreboard"]
    print(f"scoreboard ({results['scoreboard_source']}): {board['systems']} systems, {board['comparisons']} paired with the reference: "
          f"{board['seconds']:.3f} s (CPU {board['cpu_seconds']:.3f} s), max RSS {board['max_rss_mb']:.0f} MB")  # fmt: skip
    klass = results["class"]
    print(f"class of {klass['systems']}: every pair ({pairs:,}) {klass['every_pair_seconds']:.2f} s; "
          f"each against 3 references ({klass['against_references']}) {klass['against_references_seconds']:.2f} s; "
          f"CPU {klass['cpu_seconds']:.2f} s in all; max RSS {klass['max_rss_mb']:.0f} MB")  # fmt: skip
    for mode, words in (
        ("plain_loop", "a plain-Python loop over resamples"),
        ("scipy_bootstrap", "scipy.stats.bootstrap per figure"),
    ):
        one = results[mode]["seconds_one_pair"]
        scaled = one * pairs
        print(f"notebook-style, {words}: {one:.2f} s a pair, x {pairs:,} pairs = {scaled / 60:.1f} min "
              f"({scaled / klass['every_pair_seconds']:,.0f}x every_pair)")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workdir", type=Path, default=None, help="a build whose dev scoreboard to time")
    parser.add_argument("--students", type=int, default=70)
    parser.add_argument("--resamples", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--one", choices=sorted(MODES), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(one_run(args)))
        return
    from claimtrace.data.files import find_data_dir

    results = {"calibrate": calibrate(Path(find_data_dir())), "load_average": os.getloadavg()}
    results["scoreboard_source"] = str(args.workdir) if args.workdir else "20 + 3 synthetic systems"
    for mode in MODES:
        results[mode] = in_process(mode, args)
    print(json.dumps(results, indent=2) if args.json else "", end="\n" if args.json else "")
    if not args.json:
        report(results)


if __name__ == "__main__":
    main()
