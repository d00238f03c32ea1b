"""Attribution methods graded where the exact answer is known (``claimtrace attribute``): every
dev claim's model input (retrieved evidence, what the site shows), the notebook's Transformer
alone, each method of :mod:`claimtrace.models.attribution` beside the exact shares, graded by
:mod:`claimtrace.evaluation.attribution`. Then the same claims through the notebook's other
model, its LSTM (a claim alone: it never meets its batch-mates), where no exact answer exists:
the methods whose cost fits the command's budget (:data:`LSTM_METHODS`), at the settings they
were graded with, so the grade beside each is the grade of exactly that method, and how far the
two agree with each other.

Not a stage of ``claimtrace build`` (about four minutes on two cores would multiply the demo
build's wall time): a command that reads a finished build and writes ``attribution/claims.jsonl``,
``attribution/lstm.jsonl`` and ``attribution/grades.json`` into it, recorded in its manifest.
Resumable: the claims are dealt to worker processes, each appending every finished claim of
each model to its own scratch file, so a killed run redoes only the claims in flight; the files
are written at the end, whole (and a run over a build attributed before the LSTM was reuses the
Transformer's records and attributes the LSTM's verdicts only).
"""

from __future__ import annotations

import json
import multiprocessing
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

from claimtrace import constants
from claimtrace.errors import DataError
from claimtrace.evaluation import attribution as grading
from claimtrace.lib.build_files import read_json, write_atomic
from claimtrace.models import attribution as methods
from claimtrace.workdir.layout import FileManifest
from claimtrace.workdir.reader import BuildReader

#: The split graded, and the evidence its inputs carry.
SPLIT, SOURCE = "dev", "retrieved"
#: Worker processes: one per core of a 2-core machine, each on one PyTorch thread.
WORKERS = 2
#: The baselines graded beside the methods: wrong answers a grade must fail, and the exact
#: answer itself, which must pass (checks of the grading, shown on the page).
BASELINES = ("shuffled", "random", "exact")
BASELINE_NAMES = {"shuffled": "Exact shares, shuffled", "random": "Random values", "exact": "Exact shares"}
#: The models whose verdicts are attributed: the Transformer alone (graded), the notebook's LSTM.
MODELS = ("transformer", "lstm")
#: The methods applied to the LSTM's verdict. On the LSTM a method's cost is its forward calls,
#: each stepping through all 128 positions whatever they hold: occlusion makes one batch of 128
#: inputs, Integrated Gradients 24 with their gradients, KernelSHAP and LIME 256 each, so these
#: two are the cheapest (about 0.6 and 0.3 CPU s a claim against 1.0 each, docs/architecture.md);
#: the four would take the command past its budget (:data:`BUDGET_SECONDS`). Both also pass on
#: the Transformer, where LIME fails.
LSTM_METHODS = ("occlusion", "integrated_gradients")
#: The methods not applied to the LSTM, run on its first :data:`COSTED_CLAIMS` claims only so that
#: the written file says what they would have cost.
LSTM_LEFT_OUT = tuple(m for m in methods.METHODS if m not in LSTM_METHODS)
COSTED_CLAIMS = 5
#: Why those methods, as the written file says it.
LSTM_CHOICE = (
    "chosen by cost, to keep the whole command within its budget on two cores: on the LSTM every "
    "forward call steps through all 128 positions, and occlusion (one batch of 128 inputs) and "
    "Integrated Gradients (24 steps with their gradients) make fewer calls than KernelSHAP's and "
    "LIME's 256 sampled inputs each; LIME also fails its grade on the Transformer"
)
#: The command's budget: every dev claim graded in under 5 minutes on two cores (issue 28).
BUDGET_SECONDS = 300


def attribute_build(
    reader: BuildReader, workers: int = WORKERS, limit: int | None = None, progress: Callable[[str], None] | None = None
) -> dict:
    """Attribute and grade every dev claim (the first ``limit``), the Transformer's verdict and
    the LSTM's, resumably; the grades (the LSTM's summary under ``"lstm"``)."""
    claim_ids = list(reader.inputs(SPLIT, SOURCE).claim_ids)[:limit]
    written = _written(reader, claim_ids)
    if written is not None:
        return written
    built = _lstm_verdicts(reader)  # read first: a build without them stops now, not after the workers
    done = {model: _finished(reader, model) for model in MODELS}
    todo = [
        (cid, [m for m in MODELS if cid not in done[m]], index < COSTED_CLAIMS) for index, cid in enumerate(claim_ids)
    ]
    todo = [entry for entry in todo if entry[1]]
    start = time.perf_counter()
    if todo:
        if progress:
            counts = {m: sum(m in models for _, models, _ in todo) for m in MODELS}
            progress(
                f"attributing {len(todo)} of {len(claim_ids)} dev claims on {workers} processes"
                f" (the Transformer's verdict on {counts['transformer']}, the LSTM's on {counts['lstm']})"
            )
        _run_workers(reader, todo, workers)
        done = {model: _finished(reader, model) for model in MODELS}
    records = [done["transformer"][cid] for cid in claim_ids]
    lstm_records = [done["lstm"][cid] for cid in claim_ids]
    grades = grade_records(records)
    grades["lstm"] = summarise_lstm(lstm_records, grades, built)
    grades["wall_seconds"] = time.perf_counter() - start  # this run's (a resumed run's: the rest)
    grades["workers"] = workers
    _write(reader, records, lstm_records, grades, complete=limit is None)
    return grades


def _lstm_verdicts(reader: BuildReader) -> dict[str, str]:
    """The build's LSTM verdicts on the attributed claims (dev, retrieved evidence, alone), which
    the LSTM's attributions are checked against; a DataError naming the command when the build
    has none (a build made before it ran the LSTM)."""
    try:
        return reader.verdict_of(SPLIT, "lstm", SOURCE, "alone")
    except KeyError:
        raise DataError(
            f"{reader.work.more_verdicts(SPLIT)}: holds no LSTM verdicts (a build made before claimtrace ran the "
            f"LSTM): run `claimtrace build --workdir {reader.work.root}` first"
        ) from None


def _written(reader: BuildReader, claim_ids: list[str]) -> dict | None:
    """The grades of a finished run over these claims (the LSTM's included), or None."""
    work = reader.work
    if not (work.attribution_grades.is_file() and work.attribution_lstm.is_file()):
        return None
    grades = read_json(work.attribution_grades)
    return grades if list(grades.get("claims", {})) == claim_ids and "lstm" in grades else None


def _run_workers(reader: BuildReader, todo: list, workers: int) -> None:
    """The claims dealt in turn to ``workers`` spawned processes, waited for."""
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


def _finished(reader: BuildReader, model: str) -> dict[str, dict]:
    """The claims of one model finished before: the file a run wrote whole (its scratch is
    removed once complete), then the workers' scratch files (a line cut short by a kill is
    dropped)."""
    work = reader.work
    written = work.attribution_claims if model == "transformer" else work.attribution_lstm
    scratch = work.attribution_parts(model)
    done = {}
    for path in [written, *scratch] if written.is_file() else scratch:
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                record = json.loads(line)
            except ValueError:
                continue
            done[record["claim_id"]] = record
    return done


def _worker(root: str, data_dir: str, worker: int, todo: Sequence[tuple[str, list[str], bool]]) -> None:
    """Attribute some claims on one PyTorch thread, appending each model's record of a claim to
    this worker's scratch file of that model."""
    import torch

    from claimtrace.models.lstm import load_lstm_model

    torch.set_num_threads(1)
    with threadpool_limits(1):  # the least-squares fits' BLAS, too: one thread per process
        reader = BuildReader(root, data_dir)
        model = reader.classifier().model
        forward = methods.transformer_alone(model)
        lstm = load_lstm_model()  # the shipped checkpoint: the one the build's verdicts are of
        attributors = {
            "transformer": lambda cid, costed: attribute_claim(reader, forward, model.embedding.weight, cid),
            "lstm": lambda cid, costed: attribute_lstm_claim(reader, lstm, cid, costed),
        }
        handles = {}
        try:
            for claim_id, models, costed in todo:
                for name in models:
                    if name not in handles:
                        handles[name] = _scratch(reader.work.attribution_part(worker, name))
                    handles[name].write(json.dumps(attributors[name](claim_id, costed)) + "\n")
                    handles[name].flush()
        finally:
            for handle in handles.values():
                handle.close()


def _scratch(path: Path):
    """A worker's scratch file, open for appending (a line cut short by a kill stays on its own
    line, and is dropped)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle = open(path, "a", encoding="utf-8")  # noqa: SIM115 (closed by the worker)
    if path.stat().st_size and not path.read_bytes().endswith(b"\n"):
        handle.write("\n")
    return handle


def _claim_input(reader: BuildReader, claim_id: str) -> tuple[np.ndarray, int, np.ndarray, list[str]]:
    """A dev claim's 128 ids (retrieved evidence), the ``[PAD]`` id, its real positions and
    their tokens."""
    classifier = reader.classifier()
    encoded = reader.inputs(SPLIT, SOURCE)
    ids = np.asarray(encoded.input_ids[encoded.claim_ids.index(claim_id)])
    pad_id = classifier.vocab.index[constants.PAD]
    real = np.flatnonzero(ids != pad_id)
    return ids, pad_id, real, classifier.vocab.decode(ids[real].tolist())


def attribute_claim(reader: BuildReader, forward, embedding, claim_id: str) -> dict:
    """One claim's record: its real positions and tokens, the exact shares, every method's
    attributions there and its seconds."""
    ids, pad_id, real, tokens = _claim_input(reader, claim_id)
    found = methods.attribute(forward, embedding, ids, pad_id)
    exact = methods.exact_shares(reader.classifier().table.g, ids, pad_id, found.verdict, found.runner_up)
    values = {name: values[real].tolist() for name, values in found.values.items()}
    return _record(claim_id, found, real, tokens, exact=exact[real].tolist(), methods=values)


def _record(claim_id: str, found, real: np.ndarray, tokens: list[str], **answers) -> dict:
    """A claim's record of one model's attributions: what both models' records hold, with
    ``answers`` (the attributions, and the exact shares or the top words) among them."""
    return {
        "claim_id": claim_id,
        "verdict": constants.LABELS[found.verdict],
        "runner_up": constants.LABELS[found.runner_up],
        "margin": found.margin,
        "difference": found.margin - found.baseline_margin,
        "positions": real.tolist(),
        "tokens": tokens,
        **answers,
        "seconds": found.seconds,
        "cpu_seconds": found.cpu_seconds,
    }


def attribute_lstm_claim(reader: BuildReader, lstm, claim_id: str, costed: bool = False) -> dict:
    """One claim's LSTM record: its real positions and tokens, the LSTM's verdict and runner-up
    (from its own forward call on the claim alone), the lead explained and its difference from
    the all-``[PAD]`` input's, each applied method's attributions and top words, and the seconds
    of every method run (``costed``: also of those left out, whose answers are not kept)."""
    ids, pad_id, real, tokens = _claim_input(reader, claim_id)
    run = LSTM_METHODS + (LSTM_LEFT_OUT if costed else ())
    found = methods.attribute(lstm.logits_from_embeddings, lstm.embedding.weight, ids, pad_id, run)
    values = {name: found.values[name][real].tolist() for name in LSTM_METHODS}
    top = {name: grading.top_words(tokens, v) for name, v in values.items()}
    return _record(claim_id, found, real, tokens, methods=values, top=top)


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
        "absent": constants.PAD,
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


def summarise_lstm(records: Sequence[dict], grades: dict, built: Mapping[str, str] | None = None) -> dict:
    """What the LSTM's records say over their claims: the methods applied and why (their grades
    are the Transformer's, ``grades``), their agreement with each other per claim and over
    claims, how far each one's values add up to the lead's difference, and every method's cost
    (those left out: on the first claims). ``built``: claim id -> the build's verdict of the
    LSTM alone, to count the claims whose verdict here is the build's."""
    first, second = LSTM_METHODS
    per_claim = {
        r["claim_id"]: grading.agreement_claim(np.asarray(r["methods"][first]), np.asarray(r["methods"][second]))
        for r in records
    }
    costed = [r for r in records if all(m in r["cpu_seconds"] for m in LSTM_LEFT_OUT)]
    cost = {m: _cost(records if m in LSTM_METHODS else costed, m) for m in methods.METHODS}
    return {
        "model": "lstm",
        "checkpoint": constants.CHECKPOINT_FILES["lstm"],
        "protocol": "alone",
        "target": grades["target"],
        "absent": constants.PAD,
        "methods": list(LSTM_METHODS),
        "left_out": list(LSTM_LEFT_OUT),
        "why": LSTM_CHOICE,
        "budget_seconds": BUDGET_SECONDS,
        "settings": grades["settings"],  # the graded runs' own: each grade is of exactly the method applied
        "agreement": {"methods": [first, second], **grading.agreement(list(per_claim.values()))},
        "completeness": {
            m: grading.median_interval([grading.completeness_error(r["methods"][m], r["difference"]) for r in records])
            for m in LSTM_METHODS
        },
        # how far the words move the lead from the all-[PAD] input's: what the values share out
        "difference": grading.median_interval([abs(r["difference"]) for r in records]),
        "verdict_as_built": None
        if built is None
        else {"same": sum(built.get(r["claim_id"]) == r["verdict"] for r in records), "of": len(records)},
        "cost": cost,
        "claims": per_claim,
    }


def _cost(records: Sequence[dict], method: str) -> dict | None:
    """A method's seconds over the records that ran it (None: none did)."""
    if not records:
        return None
    return {
        "claims": len(records),
        "cpu_seconds": grading.timing([r["cpu_seconds"][method] for r in records]),
        "seconds": grading.timing([r["seconds"][method] for r in records]),
    }


def _write(
    reader: BuildReader, records: Sequence[dict], lstm_records: Sequence[dict], grades: dict, complete: bool
) -> None:
    """The three files whole, recorded in the manifest; the workers' scratch removed once complete."""
    work = reader.work
    write_atomic(work.attribution_claims, "".join(json.dumps(r) + "\n" for r in records))
    write_atomic(work.attribution_lstm, "".join(json.dumps(r) + "\n" for r in lstm_records))
    write_atomic(work.attribution_grades, json.dumps(grades, indent=1))
    files = FileManifest.read(work)
    if files is not None:
        files.record(work.attribution_claims, save=False)
        files.record(work.attribution_lstm, save=False)
        files.record(work.attribution_grades)
    if complete:
        for path in (path for model in MODELS for path in work.attribution_parts(model)):
            path.unlink()
