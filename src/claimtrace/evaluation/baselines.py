"""What chance and constants score: the baselines every system is shown beside.

* **always the majority label** (SUPPORTS, the commonest label of train), with the notebook
  retrieval's passages: what a classifier that learned only the label balance scores;
* **a uniformly random label** (a fixed seed), with the notebook retrieval's passages: its
  expected accuracy is 1/4;
* **the course's baseline file** (``dev-claims-baseline.json``), the course's own example of a
  predictions file, labels and passages.

Each is a predictions mapping in the course's shape, scored like any system.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from claimtrace import constants
from claimtrace.data import files as data_layer
from claimtrace.data.files import Claim

#: The seed of the random-label baseline's draws.
RANDOM_SEED = 2024


@dataclass(frozen=True)
class Baseline:
    """One baseline: its name (as rows are named), what it is, and its predictions."""

    name: str
    description: str
    predictions: dict[str, dict]


def majority_label(train: Mapping[str, Claim]) -> str:
    """The commonest gold label of the training claims (ties: the first in ``LABELS`` order)."""
    counts = Counter(claim.label for claim in train.values())
    return max(constants.LABELS, key=lambda label: (counts[label], -constants.LABELS.index(label)))


def _with_labels(evidences: Mapping[str, dict], labels: Mapping[str, str]) -> dict[str, dict]:
    return {cid: {**entry, "claim_label": labels[cid]} for cid, entry in evidences.items()}


def label_baselines(notebook: Mapping[str, dict], train: Mapping[str, Claim]) -> list[Baseline]:
    """Always the majority label, and a uniformly random label, each with the passages of
    ``notebook`` (a row's predictions in the course's shape)."""
    majority = majority_label(train)
    ids = sorted(notebook)
    drawn = np.random.default_rng(RANDOM_SEED).integers(0, len(constants.LABELS), size=len(ids))
    random_labels = {cid: constants.LABELS[k] for cid, k in zip(ids, drawn.tolist(), strict=True)}
    return [
        Baseline(
            f"baseline:always-{majority}",
            f"always {majority} (the majority label of train), with the notebook retrieval's passages",
            _with_labels(notebook, dict.fromkeys(ids, majority)),
        ),
        Baseline(
            "baseline:random-label",
            f"a uniformly random label (seed {RANDOM_SEED}; expected accuracy 1/4), with the notebook retrieval's passages",
            _with_labels(notebook, random_labels),
        ),
    ]


def course_baseline(data_dir) -> Baseline | None:
    """The course's own baseline predictions of dev, or None when the data folder lacks them."""
    if not data_layer.course_file(data_dir, "baseline").is_file():
        return None
    claims = data_layer.load_claims("baseline", data_dir)
    predictions = {
        cid: {"claim_text": c.text, "claim_label": c.label, "evidences": list(c.evidences)} for cid, c in claims.items()
    }
    return Baseline("baseline:course-file", "the course's baseline file (dev-claims-baseline.json)", predictions)
