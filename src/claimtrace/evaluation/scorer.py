"""The course's evaluation (notebook.md section 8): evidence F, label accuracy A, and their
harmonic mean, as the course's ``eval.py`` (COMP90042_2024) computes them.

Per gold claim, taken in sorted claim-id order:

* evidence: ``correct`` = how many entries of the gold list (duplicates counted) are in the set
  of predicted ids; when ``correct > 0``, recall = correct / len(gold), precision =
  correct / len(predicted list) (duplicates counted), F = 2PR / (P + R); otherwise F = 0;
* accuracy: 1 when the predicted label equals the gold label.

F and A are ``np.mean`` over the claims; the headline is ``2FA / (F + A)`` (0 when both are 0).

One deliberate difference: ``eval.py`` silently skips a gold claim that is missing from the
predictions (which raises the averages over the claims it kept). Here a missing claim is an error
unless ``skip_missing`` is set, which reproduces ``eval.py``. Prediction files are validated with
:func:`claimtrace.data.files.parse_claims` (every problem names the file and the field).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from claimtrace import constants as C
from claimtrace.data import files as data_layer
from claimtrace.data.files import Claim
from claimtrace.errors import DataError

__all__ = [
    "evidence_scores",
    "evidence_f",
    "Evaluation",
    "evaluate",
    "parse_predictions",
    "read_predictions",
    "load_predictions",
    "evaluate_file",
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


#: The largest predictions file read (a course dev file is about 25 KB; train's about 200 KB).
MAX_PREDICTIONS_BYTES = 8 * 2**20


def parse_predictions(raw: object, source: str, known: Mapping[str, Claim] | None = None) -> dict[str, Claim]:
    """Validate predictions in the course's shape ``{claim_id: {claim_label, evidences}}``.

    ``claim_text`` may be left out (the course's scorer never reads it; the claim's own text is
    used). Every problem is a DataError naming ``source``, the claim and the field: a label
    outside the four, evidences that are not a list of strings, an id named twice in one list
    (the course's scorer would count it twice in the precision), and, when ``known`` (a split's
    claims) is given, a claim id that is not one of them.
    """
    if not isinstance(raw, dict):
        raise DataError(f"{source}: expected a JSON object mapping claim ids to predictions, got {_kind(raw)}")
    out: dict[str, Claim] = {}
    for claim_id, body in raw.items():
        where = f"{source}: claim {claim_id!r}"
        if known is not None and claim_id not in known:
            raise DataError(f"{where} is not one of the {len(known)} claims it is scored against")
        if not isinstance(body, dict):
            raise DataError(f"{where} is {_kind(body)}, expected an object with claim_label and evidences")
        label = body.get("claim_label")
        if label not in C.LABELS:
            raise DataError(f"{where} has claim_label {json.dumps(label)}, expected one of {', '.join(C.LABELS)}")
        evidences = body.get("evidences")
        if not isinstance(evidences, list):
            raise DataError(f"{where}: evidences is {_kind(evidences)}, expected a list of evidence ids")
        seen: dict[str, int] = {}
        for position, evidence_id in enumerate(evidences):
            if not isinstance(evidence_id, str):
                raise DataError(f"{where}: evidences[{position}] is {json.dumps(evidence_id)}, not an evidence id")
            if evidence_id in seen:
                raise DataError(
                    f"{where}: evidences[{position}] {evidence_id!r} repeats evidences[{seen[evidence_id]}] "
                    "(the course's scorer would count it twice in the precision)"
                )
            seen[evidence_id] = position
        text = body.get("claim_text")
        if text is None and known is not None:
            text = known[claim_id].text
        out[claim_id] = Claim(claim_id, text if isinstance(text, str) else "", label, tuple(evidences))
    return out


def _kind(value: object) -> str:
    return "missing" if value is None else type(value).__name__


def check_predictions_size(size: int, source: str) -> None:
    """DataError naming ``source`` when a predictions file is over :data:`MAX_PREDICTIONS_BYTES`."""
    if size > MAX_PREDICTIONS_BYTES:
        raise DataError(
            f"{source}: {size:,} bytes, over the {MAX_PREDICTIONS_BYTES // 2**20} MiB a predictions file may hold"
        )


def read_predictions(raw: bytes, source: str, known: Mapping[str, Claim] | None = None) -> dict[str, Claim]:
    """:func:`parse_predictions` of a file's bytes, refused over :data:`MAX_PREDICTIONS_BYTES`."""
    check_predictions_size(len(raw), source)
    return parse_predictions(data_layer.json_from_bytes(raw, source), source, known)


def load_predictions(path: str | Path, known: Mapping[str, Claim] | None = None) -> dict[str, Claim]:
    """Read and validate a prediction file in the course's shape (:func:`parse_predictions`),
    refused over the size cap before it is read."""
    return read_predictions(predictions_bytes(path), str(path), known)


def predictions_bytes(path: str | Path) -> bytes:
    """A predictions file's bytes, refused (naming it) when missing or over the size cap."""
    path = Path(path)
    if not path.is_file():
        raise DataError(f"{path}: file is missing")
    check_predictions_size(path.stat().st_size, str(path))
    return path.read_bytes()


def evaluate_file(
    path: str | Path, split: str = "dev", data_dir: Path | None = None, *, skip_missing: bool = False
) -> Evaluation:
    """Score a prediction file against a labelled course split (train or dev)."""
    if split == "test":
        raise DataError("the test claims are unlabelled: evaluate against dev (or train)")
    if split not in ("train", "dev"):
        raise DataError(f"unknown split {split!r}: expected dev or train")
    gold = data_layer.load_claims(split, data_dir)
    predictions = load_predictions(path)
    return evaluate(predictions, gold, source=str(path), skip_missing=skip_missing)
