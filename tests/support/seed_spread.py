"""Seed-spread files for tests, written by scripts/seed_spread.py's own ``write`` (so the reader is
held to what the script writes), from made-up right counts instead of hours of training.

``WHOLE`` is five seeds of each model whose figures make one comparison survive the seeds and
another not; ``PARTIAL`` is one Transformer seed, as the first file the script wrote.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from claimtrace.evaluation.statistics import wilson

REPO = Path(__file__).resolve().parents[2]
CLAIMS = 154

#: Right dev claims per model, evidence-protocol and seed (in the order of ``SEEDS``). On gold
#: evidence the LSTM is right on more claims under every seed than the Transformer under any
#: (their ranges do not overlap); on retrieved evidence the two ranges overlap. The LSTM's two
#: protocols agree, as they do for the real model (it never meets its batch-mates).
SEEDS = (42, 1, 2, 3, 4)
WHOLE = {
    "transformer": {
        "gold-notebook": (90, 88, 86, 91, 85),
        "gold-alone": (88, 87, 89, 90, 86),
        "retrieved-notebook": (41, 39, 43, 40, 42),
        "retrieved-alone": (39, 40, 38, 41, 42),
    },
    "lstm": {
        "gold-notebook": (93, 95, 97, 92, 96),
        "gold-alone": (93, 95, 97, 92, 96),
        "retrieved-notebook": (41, 44, 38, 43, 40),
        "retrieved-alone": (41, 44, 38, 43, 40),
    },
}
PARTIAL = {"transformer": {key: counts[:1] for key, counts in WHOLE["transformer"].items()}}


def script():
    """scripts/seed_spread.py as a module (it is not a package's)."""
    spec = importlib.util.spec_from_file_location("seed_spread_script", REPO / "scripts" / "seed_spread.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _figure(correct: int, claims: int = CLAIMS) -> dict:
    interval = wilson(correct, claims)
    return {
        "correct": correct,
        "claims": claims,
        "accuracy": correct / claims,
        "interval": [interval.lower, interval.upper],
    }


def run(seed: int, counts: dict[str, int], epochs: int = 10) -> dict:
    """One model x seed as the script records it (its curve left empty: the site does not draw it)."""
    dev: dict = {}
    for key, correct in counts.items():
        evidence, protocol = key.split("-")
        dev.setdefault(evidence, {})[protocol] = _figure(correct)
    return {
        "seed": seed,
        "epochs": epochs,
        "threads": 1,
        "best_epoch": epochs,
        "seconds": 600.0 + seed,
        "curve": [],
        "dev": dev,
    }


def write_seed_spread(path: Path, models: dict[str, dict[str, tuple[int, ...]]], retrieved_from: str = "work/demo"):
    """A seed-spread file at ``path`` holding ``models``: ``{model: {"gold-notebook": (right
    under SEEDS[0], SEEDS[1], ...), ...}}``; the seeds after the counts given are not trained."""
    module = script()
    document = {
        "what": "made up for a test",
        "regenerate": "python scripts/seed_spread.py --workdir BUILD",
        "retrieved_from": retrieved_from,
        "libraries": {},
        "machine": "test",
        "models": {},
    }
    for name, panels in models.items():
        trained = len(next(iter(panels.values())))
        runs = {
            str(seed): run(seed, {key: counts[i] for key, counts in panels.items()})
            for i, seed in enumerate(SEEDS[:trained])
        }
        document["models"][name] = {"variant": module.MODELS[name], "runs": runs}
    module.write(path, document)
    return path
