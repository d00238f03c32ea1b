"""A predictions file scored as the course scores it, for Python: ``claimtrace evaluate
--predictions`` as an object (the same reading, scores, intervals and audit)."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any

from claimtrace.api.build import data_folder
from claimtrace.data.files import json_from_bytes
from claimtrace.errors import DataError
from claimtrace.evaluation.audit import FileReport, course_context, report_file
from claimtrace.evaluation.scorer import predictions_bytes
from claimtrace.evaluation.significance import figures_of
from claimtrace.web.notebook import notebook_renderer, notebook_template

__all__ = ["Scores", "evaluate", "read_predictions"]

#: The splits a file may be scored against (test's claims are unlabelled).
SPLITS = ("dev", "train", "test")


def read_predictions(predictions: str | os.PathLike | Mapping, name: str = "predictions") -> tuple[object, bytes, str]:
    """A predictions file's JSON value, its bytes and the name errors give it: a path's file
    (refused, naming it, when missing, over the size cap or not JSON), or a dict as it is (named
    ``name``; its bytes its JSON)."""
    if isinstance(predictions, (str, os.PathLike)):
        raw = predictions_bytes(predictions)
        return json_from_bytes(raw, str(predictions)), raw, str(predictions)
    if isinstance(predictions, Mapping):
        return dict(predictions), json.dumps(predictions, ensure_ascii=False).encode("utf-8"), name
    raise DataError(
        f"{name}: a predictions file's path or a dict {{claim_id: {{claim_label, evidences}}}}, "
        f"not {type(predictions).__name__}"
    )


class Scores:
    """A file's course scores (F, A, HM over the claims the course's scorer scored), the strict
    score beside them, their 95% intervals and the file's audit. :meth:`to_dict` is what
    ``claimtrace evaluate --predictions FILE --json`` prints."""

    def __init__(self, source: str, report: FileReport):
        if report.scored is None:
            raise DataError(
                f"{source}: its claims are {report.found.split} claims, which are unlabelled: there is nothing "
                "to score (claimtrace.compare shows its agreement with the notebook's pipeline)"
            )
        self.source = source
        self.report = report
        self.intervals: dict = figures_of(report.scored.course)

    @property
    def split(self) -> str:
        return self.report.found.split

    @property
    def F(self) -> float:  # noqa: N802 - the course's name for it
        return self.report.scored.course.F

    @property
    def A(self) -> float:  # noqa: N802
        return self.report.scored.course.A

    @property
    def HM(self) -> float:  # noqa: N802
        return self.report.scored.course.HM

    @property
    def claims(self) -> int:
        """The claims the course's scorer scored."""
        return self.report.scored.course.claims

    @property
    def strict(self) -> dict:
        """Every claim of the split counted (one the scorer skipped as wrong, F 0)."""
        return self.to_dict()["strict"]

    @property
    def audit(self) -> list[dict]:
        """What is odd in the file, a finding each: ``{"code", "count", "claims", "text"}``."""
        return [finding.to_dict() for finding in self.report.findings]

    @property
    def per_claim(self) -> list[dict]:
        """Each scored claim's precision, recall, F, label and whether it is right."""
        return self.report.scored.course.per_claim

    def to_dict(self) -> dict[str, Any]:
        return {"predictions": self.source, **self.report.to_dict(), "intervals": self.intervals}

    def __repr__(self) -> str:
        return f"<claimtrace.Scores {self.source} ({self.split}): F={self.F:.4f} A={self.A:.4f} HM={self.HM:.4f}>"

    def _repr_html_(self) -> str:
        title = f"{self.source}: the course's scores"
        return notebook_template(notebook_renderer(None), "notebook.html", title, view="scores", s=self.to_dict())


def evaluate(
    predictions: str | os.PathLike | Mapping, split: str | None = "dev", data: str | os.PathLike | None = None
) -> Scores:
    """Score ``predictions`` (a file's path, or a dict in the course's shape) as the course's
    eval.py does, against ``split`` (None: the split its claims belong to), with the data folder
    ``data`` (default: as the command line finds it). The figures equal ``claimtrace evaluate
    --predictions FILE``'s; a DataError names the file (or ``predictions``) and the claim or field
    for what the course's scorer could not score."""
    if split is not None and split not in SPLITS:
        raise DataError(f"split: {split!r} is not one of {', '.join(SPLITS)}")
    value, _, source = read_predictions(predictions)
    return Scores(source, report_file(value, source, split=split, **course_context(data_folder(data))))
