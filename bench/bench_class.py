"""Time a class: ``claimtrace compare --class DIR --json`` over N synthetic dev predictions files.

    .venv/bin/python bench/bench_class.py [--workdir DIR] [--files 70 300] [--repeat 1] [--src DIR] [--json]

For each N it writes N dev predictions files in the course's shape into a temporary folder
(:func:`write_class`: labels and evidences drawn with a fixed seed from the dev claims' gold
passage ids, the course baseline file's ids and random ``evidence-<n>`` ids; some files with
odd shapes: repeated ids, more than six evidences, a few claims left out, no claim text), then:

* ``end_to_end``: ``claimtrace compare --class DIR --json`` in a new process, its output to a
  file: wall seconds, CPU seconds and peak memory (the process's ``ru_maxrss``, from
  ``os.wait4``), and the output's size;
* ``breakdown``: the same steps in one new process, each timed (wall and CPU): reading and
  auditing every file as the course's scorer reads it (``course_context`` and ``load_run``),
  the claim rows and course scores of ``compare`` (everything but its statistics), the
  statistics (``run_statistics``: every figure, every run against the notebook's row and three
  baselines, every pair of runs), and the JSON output, streamed (``json.dump``) and then made
  whole as the command line makes it (``json.dumps``, a newline added, encoded); with the peak
  memory of that process before the output and after each way of writing it.

``--src DIR`` times another copy of the package (``git archive COMMIT src | tar -x -C DIR``
then ``--src DIR/src``): the before and after of a change, on the same files.

Both need a build: ``--workdir`` (default ``/tmp/e-demo``, built with ``claimtrace build
--demo`` when missing: about two minutes). Before the figures it prints this machine's
calibration (``python ../shared/bench/calibrate.py ../shared/data``, seconds) and the load
average, so that timings can be compared across machines.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from bench_statistics import calibrate

REPO = Path(__file__).resolve().parent.parent
#: The environment of every process the bench starts: the code timed (``--src``) first.
ENV = dict(os.environ)


def use_source(src: Path) -> None:
    """Time the claimtrace package under ``src`` (this checkout's, or another commit's export)."""
    sys.path.insert(0, str(src))
    ENV["PYTHONPATH"] = os.pathsep.join(filter(None, [str(src), os.environ.get("PYTHONPATH")]))


CLAIMTRACE = REPO / ".venv" / "bin" / "claimtrace"
SEED = 2024
#: The odd shapes a file may have, each with the share of files that have it.
ODD = {"repeated_ids": 0.1, "over_six": 0.1, "missing_claims": 0.1, "no_claim_text": 0.1}


def _data_dir() -> Path:
    from claimtrace.data.files import find_data_dir

    return Path(find_data_dir())


def write_class(folder: Path, count: int, data_dir: Path, seed: int = SEED) -> list[Path]:
    """Write ``count`` dev predictions files (``student-000.json``, ...) into ``folder``.

    Each file draws from its own generator (``seed`` and its number), so file k is the same
    whatever ``count`` is. Per claim: a label, right about a third of the time, else one of the
    four at random; one to six evidences, each a gold id of the claim, one of the course
    baseline file's ids for it or a random ``evidence-<n>``. A file has each odd shape of
    :data:`ODD` with its probability: an id repeated in some lists, some lists of 7 to 12 ids,
    one to five claims left out, no ``claim_text``.
    """
    from claimtrace.constants import EVIDENCE_PASSAGES, LABELS, MAX_EVIDENCES
    from claimtrace.evaluation.audit import course_context

    context = course_context(data_dir)
    claims, baseline = context["splits"]["dev"], context["baseline"] or {}
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for k in range(count):
        rng = np.random.default_rng([seed, k])
        odd = {name: rng.random() < share for name, share in ODD.items()}
        left_out = (
            set(rng.choice(sorted(claims), rng.integers(1, 6), replace=False)) if odd["missing_claims"] else set()
        )
        body = {}
        for cid, claim in claims.items():
            if cid in left_out:
                continue
            pool = {"gold": list(claim.evidences), "baseline": list(baseline.get(cid, ()))}
            ids = [_draw_id(rng, pool, EVIDENCE_PASSAGES) for _ in range(rng.integers(1, MAX_EVIDENCES + 1))]
            if odd["over_six"] and rng.random() < 0.3:
                ids += [_draw_id(rng, pool, EVIDENCE_PASSAGES) for _ in range(rng.integers(1, 7))]
            if odd["repeated_ids"] and rng.random() < 0.3:
                ids.append(ids[0])
            label = claim.label if rng.random() < 1 / 3 else LABELS[rng.integers(0, len(LABELS))]
            entry = {"claim_label": label, "evidences": ids}
            body[cid] = entry if odd["no_claim_text"] else {"claim_text": claim.text, **entry}
        path = folder / f"student-{k:03d}.json"
        path.write_text(json.dumps(body))
        paths.append(path)
    return paths


def _draw_id(rng: np.random.Generator, pool: dict[str, list[str]], passages: int) -> str:
    """A gold id (a fifth of draws), a course baseline id (two fifths) or a random course id."""
    roll = rng.random()
    if roll < 0.2 and pool["gold"]:
        return pool["gold"][rng.integers(0, len(pool["gold"]))]
    if roll < 0.6 and pool["baseline"]:
        return pool["baseline"][rng.integers(0, len(pool["baseline"]))]
    return f"evidence-{rng.integers(0, passages)}"


def ensure_build(workdir: Path) -> None:
    """Build the demo into ``workdir`` unless a finished build is there."""
    if (workdir / "build.json").is_file():
        return
    print(f"building the demo into {workdir} (about two minutes) ...", file=sys.stderr)
    subprocess.run(
        [str(CLAIMTRACE), "build", "--demo", "--workdir", str(workdir)], check=True, stdout=subprocess.DEVNULL, env=ENV
    )


def end_to_end(folder: Path, workdir: Path, out: Path) -> dict:
    """``claimtrace compare --class folder --json`` in a new process: wall, CPU, peak RSS."""
    command = [str(CLAIMTRACE), "compare", "--class", str(folder), "--workdir", str(workdir), "--json"]
    started = time.perf_counter()
    with out.open("wb") as sink:
        process = subprocess.Popen(command, stdout=sink, stderr=subprocess.PIPE, env=ENV)
        _, status, usage = os.wait4(process.pid, 0)
    seconds = time.perf_counter() - started
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode != 0:
        raise SystemExit(f"claimtrace compare failed ({process.returncode}): {process.stderr.read().decode()}")
    return {
        "seconds": seconds,
        "cpu_seconds": usage.ru_utime + usage.ru_stime,
        "max_rss_mb": usage.ru_maxrss / 1024,
        **_counted(out),
        "output_mb": out.stat().st_size / 2**20,
    }


#: Counts the output in a process of its own: a process started from one holding the parsed
#: output would inherit its peak memory (Linux keeps the high-water mark across exec).
COUNT = (
    "import json, sys; r = json.load(open(sys.argv[1], encoding='utf-8')); "
    "print(json.dumps({'runs': len(r['runs']), 'set_aside': len(r['set_aside']), "
    "'pairs': len(r.get('statistics', {}).get('pairs', []))}))"
)


def _counted(out: Path) -> dict:
    done = subprocess.run([sys.executable, "-c", COUNT, str(out)], check=True, capture_output=True, text=True)
    return json.loads(done.stdout)


def breakdown(folder: Path, workdir: Path) -> dict:
    """The end-to-end steps timed one by one, in this process (run it in a new one)."""
    from claimtrace.compare import runs as compare_runs
    from claimtrace.evaluation.audit import course_context
    from claimtrace.workdir.reader import BuildReader

    data_dir = _data_dir()
    steps: dict[str, dict] = {}

    def timed(name, step):
        started, cpu = time.perf_counter(), time.process_time()
        result = step()
        steps[name] = {
            "seconds": time.perf_counter() - started,
            "cpu_seconds": time.process_time() - cpu,
            "rss_mb_after": _rss_mb(),
        }
        return result

    build = BuildReader(workdir, data_dir)
    timed("open_build", build.build_record)

    def read_all():
        context = course_context(data_dir)
        splits = context.pop("splits")
        return [compare_runs.load_run(p, None, splits, None, **context) for p in sorted(folder.glob("*.json"))]

    runs = timed("read_and_audit", read_all)
    statistics = compare_runs.run_statistics

    def timed_statistics(*args):
        return timed("statistics", lambda: statistics(*args))

    compare_runs.run_statistics = timed_statistics
    report = timed("compare", lambda: compare_runs.compare(build, runs, "dev"))
    compare_runs.run_statistics = statistics
    peaks = {"before_output": _max_rss_mb()}
    with open(os.devnull, "w", encoding="utf-8") as sink:  # noqa: PTH123
        timed("json_streamed", lambda: json.dump(report, sink, ensure_ascii=False))
    peaks["json_streamed"] = _max_rss_mb()
    # what the command line does: the whole text, a newline added (a copy), encoded
    timed("json_text", lambda: (json.dumps(report, ensure_ascii=False) + "\n").encode())
    peaks["json_text"] = _max_rss_mb()
    rows = steps.pop("compare")
    steps["rows_and_scores"] = {key: rows[key] - steps["statistics"][key] for key in ("seconds", "cpu_seconds")}
    steps["rows_and_scores"]["rss_mb_after"] = rows["rss_mb_after"]
    order = ("open_build", "read_and_audit", "rows_and_scores", "statistics", "json_streamed", "json_text")
    return {"runs": len(runs), "steps": {name: steps[name] for name in order}, "max_rss_mb": peaks}


def _max_rss_mb() -> float:
    """This process's peak resident memory so far, in MB."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _rss_mb() -> float:
    """This process's resident memory now, in MB (``/proc/self/statm``)."""
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def measure(count: int, args) -> dict:
    """End to end (best of ``args.repeat`` by wall time) and the breakdown, for ``count`` files."""
    with tempfile.TemporaryDirectory(prefix="bench-class-") as tmp:
        folder = Path(tmp) / "class"
        write_class(folder, count, _data_dir())
        runs = [end_to_end(folder, args.workdir, Path(tmp) / "out.json") for _ in range(args.repeat)]
        result = {"files": count, "end_to_end": min(runs, key=lambda run: run["seconds"])}
        if not args.no_breakdown:
            command = [sys.executable, __file__, "--one", str(folder), "--workdir", str(args.workdir)]
            command += ["--src", str(args.src)]
            done = subprocess.run(command, check=True, capture_output=True, text=True, env=ENV)
            result["breakdown"] = json.loads(done.stdout)
    return result


def report(results: dict) -> None:
    print(f"calibrate: {results['calibrate']} s (python ../shared/bench/calibrate.py ../shared/data)")
    print(f"load average: {' '.join(f'{x:.1f}' for x in results['load_average'])}")
    for result in results["classes"]:
        whole = result["end_to_end"]
        print(
            f"{result['files']} files: claimtrace compare --class --json {whole['seconds']:.2f} s wall, "
            f"{whole['cpu_seconds']:.2f} s CPU, max RSS {whole['max_rss_mb']:.0f} MB; {whole['runs']} runs, "
            f"{whole['pairs']:,} pairs, {whole['output_mb']:.1f} MB of JSON"
        )
        if "breakdown" in result:
            steps = result["breakdown"]["steps"]
            print(
                "  breakdown (wall / CPU): "
                + "; ".join(
                    f"{name} {s['seconds']:.2f} / {s['cpu_seconds']:.2f} s (RSS after {s['rss_mb_after']:.0f} MB)"
                    for name, s in steps.items()
                )
            )
            peaks = result["breakdown"]["max_rss_mb"]
            print(
                f"  peak RSS: {peaks['before_output']:.0f} MB before the output; {peaks['json_streamed']:.0f} MB "
                f"with the JSON streamed; {peaks['json_text']:.0f} MB with it made whole, as the command line does"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/e-demo"), help="a build (default: /tmp/e-demo)")
    parser.add_argument("--files", type=int, nargs="+", default=[300], help="class sizes to time (default: 300)")
    parser.add_argument("--repeat", type=int, default=1, help="end-to-end runs per class size (best kept)")
    parser.add_argument("--no-breakdown", action="store_true", help="time the end-to-end command only")
    parser.add_argument("--write", type=Path, default=None, help="only write --files[0] files into this folder")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--src", type=Path, default=REPO / "src", help="the code to time (default: this checkout's)")
    parser.add_argument("--one", type=Path, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    use_source(args.src.resolve())
    if args.one:
        print(json.dumps(breakdown(args.one, args.workdir)))
        return
    if args.write:
        write_class(args.write, args.files[0], _data_dir())
        return
    ensure_build(args.workdir)
    results = {"calibrate": calibrate(_data_dir()), "load_average": os.getloadavg(), "src": str(args.src)}
    results["classes"] = [measure(count, args) for count in args.files]
    print(json.dumps(results, indent=2) if args.json else "", end="\n" if args.json else "")
    if not args.json:
        report(results)


if __name__ == "__main__":
    main()
