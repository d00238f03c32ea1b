"""Runs with their uncertainty (claimtrace.compare.uncertainty): one set of resamples for every
figure, comparison and pair gives what one set per reference and one for the pairs gave."""

from __future__ import annotations

import json
import time

import pytest

from claimtrace.compare.runs import load_run
from claimtrace.compare.uncertainty import class_statistics, references, run_statistics
from claimtrace.data import files as data
from claimtrace.evaluation.scorer import evaluate
from claimtrace.evaluation.significance import against_reference, every_pair, method_note, strict_per_claim


@pytest.fixture(scope="module")
def dev_claims(demo_build):
    return demo_build.claims("dev")


@pytest.fixture(scope="module")
def class_runs(demo_build, data_dir, dev_claims, tmp_path_factory):
    """Three runs written here: the course's baseline file, it with every other label REFUTES,
    and the gold answers."""
    folder = tmp_path_factory.mktemp("runs")
    baseline = data.course_file(data_dir, "baseline")
    raw = json.loads(baseline.read_text(encoding="utf-8"))
    for claim in list(raw.values())[::2]:
        claim["claim_label"] = "REFUTES"
    (folder / "refutes.json").write_text(json.dumps(raw), encoding="utf-8")
    gold = {c.id: {"claim_label": c.label, "evidences": list(c.evidences)} for c in dev_claims.values()}
    (folder / "gold.json").write_text(json.dumps(gold), encoding="utf-8")
    return [
        load_run(baseline, "course baseline", {"dev": dev_claims}, "dev"),
        load_run(folder / "refutes.json", "refutes", {"dev": dev_claims}, "dev"),
        load_run(folder / "gold.json", "gold", {"dev": dev_claims}, "dev"),
    ]


def _results(runs, claims) -> dict:
    return {run.name: evaluate(run.predictions, claims, source=run.name, skip_missing=True) for run in runs}


def _one_reference_at_a_time(build, results, claims, split) -> dict:
    """The statistics as they were made before: a new set of resamples per reference, and
    another for the pairs."""
    systems = {name: strict_per_claim(result, claims) for name, result in results.items()}
    against = references(build, split, claims)
    systems.update({name: strict_per_claim(result, claims) for name, result in against.items()})
    figures, paired = {}, {name: {} for name in results}
    for reference in against:
        tested = against_reference({name: systems[name] for name in [*paired, reference]}, reference)
        figures.update(tested["figures"])
        for name in paired:
            paired[name][reference] = tested["paired"][name]
    pairs = every_pair({name: systems[name] for name in results}) if len(results) > 1 else []
    return {"method": method_note(), "figures": figures, "paired": paired, "pairs": pairs}


def _bits(value) -> str:
    """Every float by its repr, keys in their order: equal strings are equal bits."""
    return json.dumps(value, allow_nan=True)


@pytest.mark.parametrize("count", [1, 3])
def test_one_resampling_gives_the_same_bits_as_one_per_reference(demo_build, dev_claims, class_runs, count):
    results = _results(class_runs[:count], dev_claims)
    started = time.perf_counter()
    new = run_statistics(demo_build, results, dev_claims, "dev")
    once = time.perf_counter() - started
    started = time.perf_counter()
    old = _one_reference_at_a_time(demo_build, results, dev_claims, "dev")
    before = time.perf_counter() - started
    assert _bits(new) == _bits(old)
    assert list(new["figures"]) == [*results, *references(demo_build, "dev", dev_claims)]
    assert len(new["pairs"]) == count * (count - 1) // 2
    print(f"{count} runs: {once:.3f} s with one resampling, {before:.3f} s with one per reference")


def test_a_class_is_named_by_digest_and_matches_the_runs_statistics(demo_build, dev_claims, class_runs):
    stats = class_statistics(demo_build, class_runs, "dev")
    by_name = run_statistics(demo_build, _results(class_runs, dev_claims), dev_claims, "dev")
    for run in class_runs:
        assert _bits(stats["figures"][run.digest]) == _bits(by_name["figures"][run.name])
        assert _bits(stats["paired"][run.digest]) == _bits(by_name["paired"][run.name])
    assert [(p["a"], p["b"]) for p in stats["pairs"]] == [
        (class_runs[i].digest, class_runs[j].digest) for i, j in ((0, 1), (0, 2), (1, 2))
    ]
    gold = stats["paired"][class_runs[2].digest]["notebook+notebook+notebook"]
    assert gold["HM"]["verdict"] == gold["verdict"] == "more than chance"
