"""The seed spread: the notebook's Transformer and its LSTM retrained under several seeds (what
``scripts/seed_spread.py`` writes to ``assets/seed_spread.json``), read and checked here, and the
two models set against each other over their seeds.

A training run is one draw of the training's randomness (the initial weights, the dropout): under
another seed the same recipe gives another checkpoint, and its dev accuracy moves. A run's Wilson
interval says how far its accuracy could move on another sample of claims; the spread over seeds
says how far it moves on these same claims under another seed. Whether the two models differ by
more than their seeds move them is asked of the seeds: Welch's t-test on each model's accuracies
over its seeds (the two spreads need not be equal), Holm-corrected over the comparisons made
together (:func:`compare_models`).

The file is rewritten after every model x seed, so it may hold a few seeds of one model only:
:func:`read_seed_spread` takes what is there (None when there is no file yet) and refuses a file
that is not what the script writes, naming the file and the field, as every damaged input is.
This reader lives with the other figures of what a result is worth rather than beside the
checkpoints' provenance (models/): the file holds dev accuracies and their intervals, not weights.
"""

from __future__ import annotations

import json
import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from scipy import stats

from claimtrace.assets import ASSETS_DIR
from claimtrace.constants import PROTOCOLS
from claimtrace.errors import DataError
from claimtrace.evaluation import statistics as S

#: The file, shipped beside the checkpoints (the build never reads it).
SEED_SPREAD_FILE = "seed_spread.json"
SEED_SPREAD_PATH = ASSETS_DIR / SEED_SPREAD_FILE
#: The seeds the script trains, the 2024 site's, in its order.
SEEDS = (42, 1, 2, 3, 4)
#: The models the file holds, by the name it gives them.
MODELS = ("transformer", "lstm")
#: The evidence each run is scored with.
EVIDENCE = ("gold", "retrieved")
#: Each evidence x protocol the models are compared on, the notebook's protocol first.
PANELS = tuple((evidence, protocol) for evidence in EVIDENCE for protocol in reversed(PROTOCOLS))
#: How the file is made, or made again (``BUILD``: the build whose retrieved evidence it scores).
COMMAND = "python scripts/seed_spread.py --workdir {build}"
#: How far a figure the file repeats (an accuracy, the spread) may lie from its recomputation.
TOLERANCE = 1e-9


@dataclass(frozen=True)
class Accuracy:
    """A run's dev accuracy on one evidence and protocol: ``correct`` of ``claims``, and its
    95% Wilson interval as the file records it."""

    correct: int
    claims: int
    lower: float
    upper: float

    @property
    def accuracy(self) -> float:
        return self.correct / self.claims

    def to_dict(self) -> dict:
        return {
            "correct": self.correct,
            "claims": self.claims,
            "accuracy": self.accuracy,
            "lower": self.lower,
            "upper": self.upper,
        }


@dataclass(frozen=True)
class SeedRun:
    """One model trained under one seed: its epochs, its best dev epoch (None when none beat
    the start), its seconds, and its dev accuracy by ``(evidence, protocol)``."""

    seed: int
    epochs: int
    best_epoch: int | None
    seconds: float
    dev: dict[tuple[str, str], Accuracy]


@dataclass(frozen=True)
class SeedSpread:
    """The file as read: the build its retrieved evidence is of (``retrieved_from``, as the
    script was given it) and each model's runs, in ascending seed order (the file's spread's)."""

    path: Path
    retrieved_from: str
    runs: dict[str, tuple[SeedRun, ...]]

    def seeds(self, model: str) -> list[int]:
        return [run.seed for run in self.runs.get(model, ())]

    def accuracies(self, model: str, evidence: str, protocol: str) -> list[float]:
        return [run.dev[evidence, protocol].accuracy for run in self.runs.get(model, ())]

    def command(self) -> str:
        """The command that continues (or repeats) the file: the script over the same build."""
        return COMMAND.format(build=self.retrieved_from)


def describe(values: Sequence[float]) -> dict | None:
    """``{"n", "min", "max", "mean", "sd"}`` of a model's accuracies over its seeds (SD with
    n - 1, 0 for one seed, as the script writes it); None without a seed."""
    if not values:
        return None
    array = np.asarray(values, dtype=np.float64)
    return {
        "n": len(array),
        "min": float(array.min()),
        "max": float(array.max()),
        "mean": float(array.mean()),
        "sd": float(array.std(ddof=1)) if len(array) > 1 else 0.0,
    }


# --- reading the file -----------------------------------------------------------------------------


class _Fields:
    """Reads one file's fields, each failure a DataError naming the file and the field."""

    HINT = f"remove it and run `{COMMAND.format(build='BUILD')}` to write it again"

    def __init__(self, path: Path):
        self.path = path

    def error(self, where: str, problem: str) -> DataError:
        return DataError(f"{self.path}: damaged (field {where}: {problem}): {self.HINT}")

    def get(self, parent: dict, key: str, where: str, kind: type | tuple[type, ...]) -> Any:
        name = f"{where}.{key}" if where else key
        if key not in parent:
            raise self.error(name, "missing")
        value = parent[key]
        # a JSON true is Python's 1: never a count or a figure here
        if isinstance(value, bool) or not isinstance(value, kind):
            raise self.error(name, f"expected {_kind_name(kind)}, found {json.dumps(value)[:40]}")
        return value


def _kind_name(kind) -> str:
    names = {dict: "an object", list: "a list", str: "a string", int: "an integer", float: "a number"}
    kinds = kind if isinstance(kind, tuple) else (kind,)
    return " or ".join(dict.fromkeys(names[k] for k in kinds))


NUMBER = (int, float)


def _accuracy(fields: _Fields, figure: dict, where: str) -> Accuracy:
    correct = fields.get(figure, "correct", where, int)
    claims = fields.get(figure, "claims", where, int)
    if claims <= 0 or not 0 <= correct <= claims:
        raise fields.error(f"{where}.correct", f"{correct} of {claims} claims")
    shown = fields.get(figure, "accuracy", where, NUMBER)
    if not abs(shown - correct / claims) <= TOLERANCE:  # NaN included
        raise fields.error(f"{where}.accuracy", f"{shown} is not {correct}/{claims}")
    interval = fields.get(figure, "interval", where, list)
    if len(interval) != 2 or not all(isinstance(b, NUMBER) and not isinstance(b, bool) for b in interval):
        raise fields.error(f"{where}.interval", "expected [lower, upper]")
    lower, upper = (float(b) for b in interval)
    if not 0 <= lower <= correct / claims <= upper <= 1:
        raise fields.error(f"{where}.interval", f"[{lower}, {upper}] does not hold {correct}/{claims}")
    return Accuracy(correct, claims, lower, upper)


def _run(fields: _Fields, key: str, run: Any, where: str) -> SeedRun:
    if not isinstance(run, dict):
        raise fields.error(where, "expected an object")
    seed = fields.get(run, "seed", where, int)
    if str(seed) != key:
        raise fields.error(f"{where}.seed", f"{seed}, under the key {key!r}")
    epochs = fields.get(run, "epochs", where, int)
    best = run.get("best_epoch")
    if best is not None and (isinstance(best, bool) or not isinstance(best, int) or not 1 <= best <= epochs):
        raise fields.error(f"{where}.best_epoch", f"expected an epoch from 1 to {epochs} or null, found {best!r}")
    seconds = fields.get(run, "seconds", where, NUMBER)
    if not (math.isfinite(seconds) and seconds >= 0):
        raise fields.error(f"{where}.seconds", f"expected a finite number of seconds, found {seconds!r}")
    dev = fields.get(run, "dev", where, dict)
    figures = {}
    for evidence, protocol in PANELS:
        by_protocol = fields.get(dev, evidence, f"{where}.dev", dict)
        figure = fields.get(by_protocol, protocol, f"{where}.dev.{evidence}", dict)
        figures[evidence, protocol] = _accuracy(fields, figure, f"{where}.dev.{evidence}.{protocol}")
    return SeedRun(seed, epochs, best, float(seconds), figures)


def _check_spread(fields: _Fields, entry: dict, runs: tuple[SeedRun, ...], where: str) -> None:
    """The file's spread is what its runs give (the script computes it from them)."""
    spread = entry.get("spread")
    if not runs:
        return
    if not isinstance(spread, dict):
        raise fields.error(f"{where}.spread", "missing, with runs in the file")
    for evidence, protocol in PANELS:
        by_protocol = fields.get(spread, evidence, f"{where}.spread", dict)
        shown = fields.get(by_protocol, protocol, f"{where}.spread.{evidence}", dict)
        at = f"{where}.spread.{evidence}.{protocol}"
        seeds = fields.get(shown, "seeds", at, list)
        if seeds != [run.seed for run in runs]:
            raise fields.error(f"{at}.seeds", f"{seeds}, where the runs are of {[run.seed for run in runs]}")
        recomputed = describe([run.dev[evidence, protocol].accuracy for run in runs])
        for key in ("min", "max", "mean", "sd"):
            value = fields.get(shown, key, at, NUMBER)
            if not abs(value - recomputed[key]) <= TOLERANCE:  # NaN included
                raise fields.error(f"{at}.{key}", f"{value}, where its runs give {recomputed[key]}")


def _model(fields: _Fields, entry: Any, where: str) -> tuple[SeedRun, ...]:
    if not isinstance(entry, dict):
        raise fields.error(where, "expected an object")
    found = fields.get(entry, "runs", where, dict)
    for key in found:
        if not key.isdecimal():
            raise fields.error(f"{where}.runs", f"the key {key!r} is not a seed")
    runs = tuple(_run(fields, key, found[key], f"{where}.runs.{key}") for key in sorted(found, key=int))
    _check_spread(fields, entry, runs, where)
    return runs


def _same_claims(fields: _Fields, runs: dict[str, tuple[SeedRun, ...]]) -> None:
    """Every figure of the file is over the same claims (one dev split): the first that is not
    is named."""
    first = None
    for model, model_runs in runs.items():
        for run in model_runs:
            for (evidence, protocol), figure in run.dev.items():
                first = figure.claims if first is None else first
                if figure.claims != first:
                    where = f"models.{model}.runs.{run.seed}.dev.{evidence}.{protocol}.claims"
                    raise fields.error(where, f"{figure.claims}, where the file's first figure has {first}")


def read_seed_spread(path: Path | None = None) -> SeedSpread | None:
    """The seed-spread file (the shipped one by default): None when it is not there yet, a
    DataError naming the file and the field when it is not what the script writes.

    A model the file does not hold yet has no runs; one it holds has its runs in ascending seed
    order. A model the reader does not know is left out.
    """
    path = SEED_SPREAD_PATH if path is None else Path(path)
    if not path.is_file():
        return None
    fields = _Fields(path)
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError, RecursionError) as err:
        raise DataError(f"{path}: damaged (not JSON: {err}): {fields.HINT}") from None
    if not isinstance(document, dict):
        raise fields.error("(top)", "expected an object")
    retrieved_from = fields.get(document, "retrieved_from", "", str)
    models = fields.get(document, "models", "", dict)
    runs = {name: _model(fields, models[name], f"models.{name}") for name in MODELS if name in models}
    _same_claims(fields, runs)
    return SeedSpread(path, retrieved_from, {name: runs.get(name, ()) for name in MODELS})


# --- the two models over their seeds ----------------------------------------------------------------


def welch(a: Sequence[float], b: Sequence[float]) -> dict:
    """Welch's t-test of ``a`` against ``b`` (scipy's ``ttest_ind(equal_var=False)``): ``{"t",
    "df", "p"}``, two-sided, t positive when ``a``'s mean is the larger."""
    with warnings.catch_warnings():
        # a model whose seeds all gave the same accuracy (one that answers one label whatever its
        # seed) has a spread of 0 up to rounding, which scipy warns of; its variance's share of
        # Welch's t is then 0, as it should be
        warnings.filterwarnings("ignore", "Precision loss", RuntimeWarning)
        result = stats.ttest_ind(np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64), equal_var=False)
    return {"t": float(result.statistic), "df": float(result.df), "p": float(result.pvalue)}


def welch_interval(a: Sequence[float], b: Sequence[float], level: float = 0.95) -> list[float]:
    """The ``level`` interval of ``mean(a) - mean(b)`` that Welch's test inverts (scipy's
    ``ttest_ind(equal_var=False).confidence_interval``; statsmodels' ``tconfint_diff(usevar=
    "unequal")`` gives the same): ``[lower, upper]``."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "Precision loss", RuntimeWarning)  # as in :func:`welch`
        result = stats.ttest_ind(np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64), equal_var=False)
        interval = result.confidence_interval(level)
    return [float(interval.low), float(interval.high)]


def _overlap(one: dict | None, other: dict | None) -> bool | None:
    if one is None or other is None:
        return None
    return max(one["min"], other["min"]) <= min(one["max"], other["max"])


def _compared(spread: SeedSpread | None, evidence: str, protocol: str) -> dict:
    values = {model: spread.accuracies(model, evidence, protocol) if spread else [] for model in MODELS}
    described = {model: describe(values[model]) for model in MODELS}
    lstm, transformer = described["lstm"], described["transformer"]
    out = {
        "evidence": evidence,
        "protocol": protocol,
        **described,
        "difference": None if lstm is None or transformer is None else lstm["mean"] - transformer["mean"],
        "overlap": _overlap(lstm, transformer),
        "welch": None,
        "difference_interval": None,
        "untested": None,
    }
    if min(len(v) for v in values.values()) < 2:
        out["untested"] = "fewer than 2 seeds"
    elif lstm["sd"] == 0 and transformer["sd"] == 0:  # Welch's t divides by the spread
        out["untested"] = "no spread"
    else:
        out["welch"] = welch(values["lstm"], values["transformer"])
        out["difference_interval"] = welch_interval(values["lstm"], values["transformer"])
    return out


def compare_models(spread: SeedSpread | None) -> list[dict]:
    """The LSTM against the Transformer over their seeds, per evidence and protocol
    (:data:`PANELS`): each model's spread (:func:`describe`), the difference of their means (LSTM
    minus Transformer) and, when tested, its 95% Welch interval (``difference_interval``), whether their ranges (min to max) overlap, and Welch's t-test over the
    seeds (``welch``, with ``p_holm``, Holm's correction over the comparisons tested here, and
    ``verdict``), or why it was not made (``untested``: "fewer than 2 seeds" of a model, or "no
    spread": every seed of each gave the same accuracy)."""
    compared = [_compared(spread, evidence, protocol) for evidence, protocol in PANELS]
    tested = [entry for entry in compared if entry["welch"] is not None]
    for entry, corrected in zip(tested, S.with_holm([e["welch"] for e in tested]), strict=True):
        entry["welch"] = {**corrected, "tested_together": len(tested)}
    return compared
