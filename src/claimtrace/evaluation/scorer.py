"""The course's evaluation (notebook.md section 8): evidence F, label accuracy A, and their
harmonic mean, as the course's ``eval.py`` (COMP90042_2024) computes them.

Per gold claim, taken in sorted claim-id order:

* evidence: ``correct`` = how many entries of the gold list (duplicates counted) are in the set
  of predicted ids; when ``correct > 0``, recall = correct / len(gold), precision =
  correct / len(predicted list) (duplicates counted), F = 2PR / (P + R); otherwise F = 0;
* accuracy: 1 when the predicted label equals the gold label.

F and A are ``np.mean`` over the claims; the headline is ``2FA / (F + A)`` (0 when both are 0).

``eval.py`` silently skips a gold claim that is missing from the predictions (the averages are
then over the claims it kept); :func:`evaluate` raises instead unless ``skip_missing`` is set. A
predictions file is read as ``eval.py`` reads it by :mod:`claimtrace.evaluation.submission`, which
scores it here; :mod:`claimtrace.evaluation.audit` says what is odd in it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from claimtrace.data.files import Claim
from claimtrace.errors import DataError

__all__ = [
    "evidence_scores",
    "evidence_f",
    "Evaluation",
    "evaluate",
    "check_predictions_size",
    "predictions_bytes",
]


def evidence_scores(predicted: Sequence[str], gold: Sequence[str]) -> tuple[float, float, float]:
    """(precision, recall, F) of one claim's predicted evidence ids against its gold ids."""
    if not predicted:
        return 0.0, 0.0, 0.0
    retrieved = set(predicted)
    correct = sum(1 for evidence_id in gold if evidence_id in retrieved)
    if correct == 0:
        return 0.0, 0.0, 0.0
    recall = float(correct) / len(gold)
    precision = float(correct) / len(predicted)
    return precision, recall, (2 * precision * recall) / (precision + recall)


def evidence_f(predicted: Sequence[str], gold: Sequence[str]) -> float:
    """The course's per-claim evidence F (0 when no predicted id is gold)."""
    return evidence_scores(predicted, gold)[2]


def harmonic_mean(f: float, a: float) -> float:
    """``2FA / (F + A)``, 0 when both are 0."""
    if f == 0.0 and a == 0.0:
        return 0.0
    return (2 * f * a) / (f + a)


@dataclass
class Evaluation:
    """Scores of one prediction set against one labelled split."""

    F: float
    A: float
    HM: float
    claims: int
    per_claim: list[dict] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    extra: list[str] = field(default_factory=list)

    def summary(self) -> dict:
        return {
            "F": self.F,
            "A": self.A,
            "HM": self.HM,
            "claims": self.claims,
            "skipped_missing": len(self.skipped),
            "ignored_extra": len(self.extra),
        }


def evaluate(
    predictions: Mapping[str, Claim],
    gold: Mapping[str, Claim],
    *,
    source: str = "predictions",
    skip_missing: bool = False,
) -> Evaluation:
    """Score ``predictions`` against the labelled claims ``gold`` as the course's eval.py does.

    Raises DataError naming ``source`` when a gold claim has no prediction (unless
    ``skip_missing``: then it is left out of the averages, as eval.py does).
    """
    missing = [claim_id for claim_id in sorted(gold) if claim_id not in predictions]
    if missing and not skip_missing:
        shown = ", ".join(missing[:5]) + (f" and {len(missing) - 5} more" if len(missing) > 5 else "")
        raise DataError(f"{source}: no prediction for {len(missing)} of the {len(gold)} claims ({shown})")
    f_values, a_values, per_claim = [], [], []
    for claim_id, truth in sorted(gold.items()):
        if claim_id not in predictions:
            continue
        if truth.label is None:
            raise DataError(f"{claim_id}: the gold claim has no label: this split cannot be evaluated")
        predicted = predictions[claim_id]
        precision, recall, f = evidence_scores(list(predicted.evidences), list(truth.evidences))
        correct = 1.0 if predicted.label == truth.label else 0.0
        f_values.append(f)
        a_values.append(correct)
        per_claim.append(
            {
                "claim_id": claim_id,
                "precision": precision,
                "recall": recall,
                "F": f,
                "label": predicted.label,
                "gold_label": truth.label,
                "correct": bool(correct),
            }
        )
    mean_f = float(np.mean(f_values if f_values else [0.0]))
    mean_a = float(np.mean(a_values if a_values else [0.0]))
    return Evaluation(
        F=mean_f,
        A=mean_a,
        HM=float(harmonic_mean(mean_f, mean_a)),
        claims=len(f_values),
        per_claim=per_claim,
        skipped=missing,
        extra=sorted(set(predictions) - set(gold)),
    )


#: The largest predictions file read: many times a course file's size, so that no file in the
#: course's shape is refused (the sizes: docs/benchmarks.md, "A class: `claimtrace compare --class`").
MAX_PREDICTIONS_BYTES = 8 * 2**20


def check_predictions_size(size: int, source: str) -> None:
    """DataError naming ``source`` when a predictions file is over :data:`MAX_PREDICTIONS_BYTES`."""
    if size > MAX_PREDICTIONS_BYTES:
        raise DataError(
            f"{source}: {size:,} bytes, over the {MAX_PREDICTIONS_BYTES // 2**20} MiB a predictions file may hold"
        )


def predictions_bytes(path: str | Path) -> bytes:
    """A predictions file's bytes, refused (naming it) when missing or over the size cap."""
    path = Path(path)
    if not path.is_file():
        raise DataError(f"{path}: file is missing")
    check_predictions_size(path.stat().st_size, str(path))
    return path.read_bytes()
