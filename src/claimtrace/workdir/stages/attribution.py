"""Attribution methods graded where the exact answer is known (``claimtrace attribute``): every
dev claim's model input (retrieved evidence, what the site shows), the notebook's Transformer
alone, each method of :mod:`claimtrace.models.attribution` beside the exact shares, graded by
:mod:`claimtrace.evaluation.attribution`.

Not a stage of ``claimtrace build`` (about 90 s on two cores would more than triple the demo
build's wall time): a command
that reads a finished build and writes ``attribution/claims.jsonl`` and ``attribution/grades.json``
into it, recorded in its manifest. Resumable: the claims are dealt to worker processes, each
appending every finished claim to its own scratch file, so a killed run redoes only the claims
in flight; the two files are written at the end, whole.
"""

from __future__ import annotations

import json
import multiprocessing
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

from claimtrace import constants as C
from claimtrace.evaluation import attribution as grading
from claimtrace.lib.store import read_json, write_atomic
from claimtrace.models import attribution as methods
from claimtrace.workdir.layout import FileManifest
from claimtrace.workdir.reader import Build

#: The split graded, and the evidence its inputs carry.
SPLIT, SOURCE = "dev", "retrieved"
#: Worker processes: one per core of a 2-core machine, each on one PyTorch thread.
WORKERS = 2
#: The baselines graded beside the methods: wrong answers a grade must fail, and the exact
#: answer itself, which must pass (checks of the grading, shown on the page).
BASELINES = ("shuffled", "random", "exact")
BASELINE_NAMES = {"shuffled": "Exact shares, shuffled", "random": "Random values", "exact": "Exact shares"}


def attribute_build(
    reader: Build, workers: int = WORKERS, limit: int | None = None, progress: Callable[[str], None] | None = None
) -> dict:
    """Attribute and grade every dev claim (the first ``limit``), resumably; the grades."""
    work = reader.work
    claim_ids = list(reader.inputs(SPLIT, SOURCE).claim_ids)[:limit]
    if work.attribution_grades.is_file():
        grades = read_json(work.attribution_grades)
        if list(grades.get("claims", {})) == claim_ids:
            return grades
    done = _finished(reader, workers)
    todo = [cid for cid in claim_ids if cid not in done]
    start = time.perf_counter()
    if todo:
        if progress:
            progress(f"attributing {len(todo)} of {len(claim_ids)} dev claims on {workers} processes")
        shares = [todo[k::workers] for k in range(workers)]
        context = multiprocessing.get_context("spawn")  # a fresh torch in each: no forked OpenMP state
        jobs = [
            context.Process(target=_worker, args=(str(reader.root), str(reader.data_dir), k, share))
            for k, share in enumerate(shares)
            if share
        ]
        for job in jobs:
            job.start()
        for job in jobs:
            job.join()
        if any(job.exitcode != 0 for job in jobs):
            raise RuntimeError("an attribution worker failed: run `claimtrace attribute` again to resume")
        done = _finished(reader, workers)
    records = [done[cid] for cid in claim_ids]
    grades = grade_records(records)
    grades["wall_seconds"] = time.perf_counter() - start  # this run's (a resumed run's: the rest)
    grades["workers"] = workers
    _write(reader, records, grades, workers, complete=limit is None)
    return grades


def _finished(reader: Build, workers: int) -> dict[str, dict]:
    """The claims the workers have finished (a line cut short by a kill is dropped)."""
    done = {}
    for path in sorted(reader.work.attribution_dir.glob(".part-*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                record = json.loads(line)
            except ValueError:
                continue
            done[record["claim_id"]] = record
    return done


def _worker(root: str, data_dir: str, worker: int, claim_ids: Sequence[str]) -> None:
    """Attribute some claims on one PyTorch thread, appending each to this worker's file."""
    import torch

    torch.set_num_threads(1)
    with threadpool_limits(1):  # the least-squares fits' BLAS, too: one thread per process
        reader = Build(root, data_dir)
        model = reader.classifier().model
        forward = methods.transformer_alone(model)
        path = reader.work.attribution_part(worker)
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "a", encoding="utf-8") as handle:
            if path.stat().st_size and not path.read_bytes().endswith(b"\n"):
                handle.write("\n")  # a line cut short by a kill stays on its own, and is dropped
            for claim_id in claim_ids:
                record = attribute_claim(reader, forward, model.embedding.weight, claim_id)
                handle.write(json.dumps(record) + "\n")
                handle.flush()


def attribute_claim(reader: Build, forward, embedding, claim_id: str) -> dict:
    """One claim's record: its real positions and tokens, the exact shares, every method's
    attributions there and its seconds."""
    classifier = reader.classifier()
    encoded = reader.inputs(SPLIT, SOURCE)
    ids = np.asarray(encoded.input_ids[encoded.claim_ids.index(claim_id)])
    pad_id = classifier.vocab.index[C.PAD]
    found = methods.attribute(forward, embedding, ids, pad_id)
    exact = methods.exact_shares(classifier.table.g, ids, pad_id, found.verdict, found.runner_up)
    real = np.flatnonzero(ids != pad_id)
    return {
        "claim_id": claim_id,
        "verdict": C.LABELS[found.verdict],
        "runner_up": C.LABELS[found.runner_up],
        "margin": found.margin,
        "difference": found.margin - found.baseline_margin,
        "positions": real.tolist(),
        "tokens": classifier.vocab.decode(ids[real].tolist()),
        "exact": exact[real].tolist(),
        "methods": {name: values[real].tolist() for name, values in found.values.items()},
        "seconds": found.seconds,
        "cpu_seconds": found.cpu_seconds,
    }


def _baseline(name: str, record: dict, index: int) -> np.ndarray:
    exact = np.asarray(record["exact"])
    if name == "exact":
        return exact
    if name == "shuffled":
        return grading.shuffled(exact, seed=index)
    # random values of the exact shares' spread, seeded per claim
    return np.random.default_rng(index).normal(0.0, float(np.std(exact)) or 1.0, len(exact))


def grade_records(records: Sequence[dict]) -> dict:
    """Every method's and baseline's grades over the records' claims (in their order)."""
    rows, per_claim = {}, {r["claim_id"]: {} for r in records}
    for name in (*methods.METHODS, *BASELINES):
        graded = []
        for index, record in enumerate(records):
            values = record["methods"][name] if name in methods.METHODS else _baseline(name, record, index)
            grade = grading.grade_claim(np.asarray(values), np.asarray(record["exact"]), record["difference"])
            graded.append(grade)
            per_claim[record["claim_id"]][name] = grade
        rows[name] = grading.grade_method(graded)
        if name in methods.METHODS:
            rows[name]["seconds"] = grading.timing([r["seconds"][name] for r in records])
            rows[name]["cpu_seconds"] = grading.timing([r["cpu_seconds"][name] for r in records])
    return {
        "split": SPLIT,
        "source": SOURCE,
        "protocol": "alone",
        "target": "logit[verdict] - logit[runner-up]",
        "absent": C.PAD,
        "settings": {
            "integrated_gradients_steps": methods.IG_STEPS,
            "samples": methods.SAMPLES,
            "seed": methods.SEED,
            "lime": "Captum defaults: Lasso alpha 0.01, exponential kernel on cosine distance (width 1)",
            "kernel_shap": "Captum defaults: Shapley kernel, least-squares fit",
        },
        "pass": {**grading.PASS, "method_lower_bound": grading.METHOD_PASS},
        # how many real tokens push toward the verdict (relative to [PAD]): when almost all do,
        # the top token's sign is right for nearly any answer, and says little
        "positive_exact": {
            "tokens": sum(int(np.sum(np.asarray(r["exact"]) > 0)) for r in records),
            "of": sum(len(r["exact"]) for r in records),
        },
        "methods": list(methods.METHODS),
        "baselines": list(BASELINES),
        "names": {**methods.METHOD_NAMES, **BASELINE_NAMES},
        "grades": rows,
        "claims": per_claim,
    }


def _write(reader: Build, records: Sequence[dict], grades: dict, workers: int, complete: bool) -> None:
    """Both files whole, recorded in the manifest; the workers' scratch removed once complete."""
    work = reader.work
    lines = "".join(json.dumps(r) + "\n" for r in records)
    write_atomic(work.attribution_claims, lines)
    write_atomic(work.attribution_grades, json.dumps(grades, indent=1))
    files = FileManifest.read(work)
    if files is not None:
        files.record(work.attribution_claims, save=False)
        files.record(work.attribution_grades)
    if complete:
        for path in work.attribution_dir.glob(".part-*.jsonl"):
            Path(path).unlink()
