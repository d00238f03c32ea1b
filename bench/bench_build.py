"""The whole build, stage by stage: the demo corpus and the course-scale synthetic corpus.

    .venv/bin/python bench/bench_build.py [--demo] [--synthetic [--passages 1208827]] [--json]

Each build runs as a new user's would, ``claimtrace build ... --json`` in a fresh process over a
new workdir (removed afterwards unless ``--keep DIR``), and is reported with:

* its wall time and CPU time (the build's process and every worker it started: on a machine
  shared with other work the CPU time moves less than the wall time);
* each stage's wall and CPU time, from the build's own summary (``"seconds"``), and the tagging
  stage's parts (preprocess, fit, tags);
* its peak memory: the largest resident set of the build's process or of any of its workers
  (``getrusage``'s ``ru_maxrss`` over the children), and the build and its workers' PSS summed at
  once (sampled every 0.2 s);
* each step's peak memory, both ways (``stage_memory.StageMemory``, from the steps the build
  names on stderr), the step that peaks marked; ``--timeline FILE`` writes every sample.

``--calls`` times the classifier's forward calls alone on the demo's dev inputs (random ids
of the same shape when no build is given), the notebook's batches of 16 three ways: one call at
a time on one PyTorch thread, one at a time on two threads, two at a time on one thread each
(what the build does: ``claimtrace.models.predict.FORWARD_WORKERS``).

``--synthetic`` builds over ``bench/synthetic.py``'s 1,208,827 passages (written once to
``work/synthetic/evidence-<passages>.json``): minutes and 2-3 GB; run it on a quiet machine.
Without ``--demo`` or ``--synthetic``, the demo build alone.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from stage_memory import StageMemory

REPO = Path(__file__).resolve().parents[1]
#: The ``claimtrace`` command, run by this interpreter: the code on its path (``PYTHONPATH`` picks
#: a checkout: the same command before and after a change, in one run).
CLAIMTRACE = [sys.executable, "-m", "claimtrace.cli"]
PASSAGES = 1_208_827


def synthetic_corpus(passages: int) -> Path:
    """bench/synthetic.py's corpus of ``passages`` passages, written once."""
    path = REPO / "work" / "synthetic" / f"evidence-{passages}.json"
    if not path.is_file():
        subprocess.run(
            [sys.executable, str(REPO / "bench" / "synthetic.py"), "--out", str(path), "--passages", str(passages)],
            check=True,
        )
    return path


def run_build(corpus: list[str], workdir: Path, timeline: Path | None = None) -> dict:
    """One build in a fresh process: its summary, wall and CPU time and peak memory, overall and
    step by step (:class:`stage_memory.StageMemory`)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    process = subprocess.Popen(
        [*CLAIMTRACE, "build", *corpus, "--workdir", str(workdir), "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    sampler = StageMemory(process.pid)
    sampler.start()
    log: list[str] = []

    def read_log() -> None:  # the build's steps as it says them (stdout is read meanwhile)
        for line in process.stderr:
            sampler.saw(line)
            log.append(line)

    reader = threading.Thread(target=read_log, daemon=True)
    reader.start()
    stdout = process.stdout.read()
    process.wait()
    reader.join()
    sampler.done.set()
    sampler.join()
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if process.returncode != 0:
        raise SystemExit(f"build failed ({process.returncode}):\n{''.join(log)[-4000:]}")
    summary = json.loads(stdout)
    steps = sampler.peaks()
    if timeline is not None:
        timeline.write_text(json.dumps(sampler.timeline), encoding="utf-8")
    return {
        "wall_s": wall,
        "cpu_s": (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime),
        # ru_maxrss: the largest child's peak, in KiB on Linux
        "peak_memory_mib": after.ru_maxrss / 1024,
        # the build's process and its workers at once (PSS summed, sampled every 0.2 s)
        "peak_tree_memory_mib": max((s["pss_mib"] for s in steps.values()), default=0.0),
        "step_memory_mib": steps,
        "stages": summary.get("seconds", {}),
        "tagging_parts_s": summary["tagging"].get("timings", {}),
        "passages": summary["tagging"]["passages"],
    }


def time_calls(batches: int = 24) -> dict:
    """Seconds (wall and CPU) for ``batches`` notebook batches of 16 under each thread layout."""
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # before torch, as the command line sets it
    import numpy as np
    import torch

    from claimtrace.models.predict import load_classifier, notebook_batches
    from claimtrace.models.transformer import notebook_logits, torch_threads

    model = load_classifier().model
    generator = np.random.default_rng(0)
    ids = generator.integers(4, model.embedding.num_embeddings, size=(batches * 16, 128))
    ids[:, 100:] = 3  # [PAD], about the demo inputs' share
    layouts = {
        "1 call at a time, 1 thread": (1, lambda: notebook_batches(model, ids, workers=1)),
        "1 call at a time, 2 threads": (2, lambda: notebook_logits(model, torch.from_numpy(ids))),
        "2 calls at a time, 1 thread each": (1, lambda: notebook_batches(model, ids, workers=2)),
    }
    figures = {}
    for name, (threads, run) in layouts.items():
        with torch_threads(threads):
            run()  # warm-up
            started, cpu = time.perf_counter(), time.process_time()
            run()
            figures[name] = {"wall_s": time.perf_counter() - started, "cpu_s": time.process_time() - cpu}
        print(
            f"  {name:<34}{figures[name]['wall_s']:6.2f} s wall {figures[name]['cpu_s']:6.2f} s CPU ({batches} batches)"
        )
    return figures


def report(name: str, figures: dict) -> None:
    print(
        f"{name}: {figures['passages']:,} passages, {figures['wall_s']:.1f} s wall, {figures['cpu_s']:.1f} s CPU, "
        f"peak {figures['peak_memory_mib']:,.0f} MiB (one process), {figures['peak_tree_memory_mib']:,.0f} MiB "
        "(the build and its workers at once)"
    )
    for stage, took in figures["stages"].items():
        alongside = "  (alongside, its own process)" if took.get("alongside") else ""
        print(f"  {stage:<14}{took['wall']:7.1f} s wall {took['cpu']:7.1f} s CPU{alongside}")
    parts = ", ".join(f"{k.removesuffix('_s')} {v:.1f} s" for k, v in figures["tagging_parts_s"].items())
    print(f"  (tagging: {parts})")
    print("  memory by step: largest process's resident set (which) / the build and its workers' PSS at once")
    steps = figures["step_memory_mib"]
    top = max(steps, key=lambda step: steps[step]["rss_mib"], default=None)
    for step, peak in steps.items():
        mark = "  <- the peak" if step == top else ""
        print(
            f"  {step:<14}{peak['rss_mib']:7,.0f} MiB ({peak['largest']}, {peak['processes']} processes) "
            f"{peak['pss_mib']:7,.0f} MiB{mark}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--demo", action="store_true", help="the demo corpus (5,240 passages)")
    parser.add_argument("--synthetic", action="store_true", help="bench/synthetic.py's course-scale corpus")
    parser.add_argument("--passages", type=int, default=PASSAGES, help="the synthetic corpus's size")
    parser.add_argument("--calls", action="store_true", help="time the forward calls' thread layouts only")
    parser.add_argument("--keep", default=None, help="build into DIR/<name> and keep it")
    parser.add_argument("--timeline", default=None, help="write every memory sample of the last build to FILE (JSON)")
    parser.add_argument("--json", dest="as_json", action="store_true", help="also print the figures as JSON")
    args = parser.parse_args()
    if args.calls:
        print("forward calls, notebook batches of 16:")
        figures = time_calls()
        if args.as_json:
            print(json.dumps(figures, indent=1))
        return
    runs = {}
    if args.demo or not args.synthetic:
        runs["demo"] = ["--demo"]
    if args.synthetic:
        runs[f"synthetic {args.passages:,}"] = ["--evidence", str(synthetic_corpus(args.passages))]
    figures = {}
    for name, corpus in runs.items():
        parent = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="bench-build-"))
        workdir = parent / name.split()[0]
        if workdir.exists():
            raise SystemExit(f"{workdir}: exists (a bench times a new build)")
        try:
            figures[name] = run_build(corpus, workdir, Path(args.timeline) if args.timeline else None)
        finally:
            if not args.keep:
                shutil.rmtree(parent, ignore_errors=True)
        report(name, figures[name])
    print(f"({os.cpu_count()} CPUs; load average {', '.join(f'{x:.1f}' for x in os.getloadavg())} at the end)")
    if args.as_json:
        print(json.dumps(figures, indent=1))


if __name__ == "__main__":
    main()
