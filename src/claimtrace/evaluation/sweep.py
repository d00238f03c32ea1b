"""The threshold sweep: F (with evidence precision and recall), A, HM and the fallback share of
a split as functions of the retrieval's cosine threshold, overlap threshold, score threshold (the
combined score's minimum) and top-n, under two scoring rules, computed
exactly from each claim's kernel columns instead of a retrieval per point.

For every claim the retrieval model's non-zero columns (cosine, overlap, score, shared) are
computed once per rule (:meth:`Retriever.scores`), with its fallback order (the top ten of every
passage by score, :func:`fallback_six`: the fallback does not depend on the thresholds, and the
first n of the top ten are the top n, the sort being the same whatever is cut). Each setting then
filters those columns with the query's three bounds, orders the survivors as the notebook does
(:func:`notebook_order`) and keeps the first n, or takes the fallback's first n: what
``Retriever.retrieve`` with those thresholds returns (tests/evaluation/test_sweep.py checks it).

The rules:

* ``notebook``: score = cosine + overlap + cosine, the query's ``combined_score > 1.5`` kept (the
  notebook's ``find_top_evidence``);
* ``submission``: score = cosine + overlap, ``combined_score > 1.0``: the rule behind the team's
  submitted files, as the 2026 explainer reconstructed it from them. At the notebook's thresholds
  its third clause is implied (0.55 + 0.5 > 1.0); it binds once the cosine threshold falls.

The score threshold is each rule's own (1.5, 1.0) except in its own sweep, from 0 to 3 in steps of
0.1 (a setting's ``score`` is None at the rule's own). F, precision and recall are the means over
claims of the course's per-claim figures (:func:`claimtrace.evaluation.scorer.evidence_scores`),
each with its percentile bootstrap interval over claims; A with its Wilson interval.

A is the build's classifier on what each setting retrieves under the protocol "alone" (each
claim a batch of one), read off its exact table (:class:`claimtrace.models.table.Table`): the
notebook's batches of 16 would tie each claim's verdict to its neighbours' evidence at the same
setting, and need the model's forward per batch and setting. Identical evidence lists of a claim
are encoded and classified once.

Choosing a setting on dev and reporting its dev figure is optimistic: the best of many settings
on the same 154 claims is partly chance; the notebook's own setting and the best are paired and
tested (:func:`claimtrace.evaluation.significance.against_reference`), with the always-SUPPORTS
baseline beside them.

May import: ``models`` and below (it is ``evaluation``'s).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from claimtrace.constants import COSINE_THRESHOLD, LABELS, MAX_EVIDENCES, OVERLAP_THRESHOLD
from claimtrace.data.files import Claim
from claimtrace.evaluation import statistics as S
from claimtrace.evaluation.scorer import evidence_scores, harmonic_mean
from claimtrace.evaluation.significance import against_reference
from claimtrace.models.inputs import Vocabulary, join_row
from claimtrace.models.table import Table
from claimtrace.pipeline.retrieval import Retriever, fallback_six, notebook_order

__all__ = ["Rule", "RULES", "Setting", "NOTEBOOK", "PARAMETERS", "settings", "ClaimColumns", "sweep"]

#: The thresholds' grid: 0 to 1 in steps of 0.05 (rounded, so 0.55 is the notebook's 0.55).
GRID = tuple(round(k * 0.05, 2) for k in range(21))
TOP_N = tuple(range(1, 11))
#: The combined score's minimum: 0 to 3 (the notebook rule's largest score) in steps of 0.1.
SCORE_GRID = tuple(round(k * 0.1, 1) for k in range(31))


@dataclass(frozen=True)
class Rule:
    """A scoring rule: how often the cosine is added into the score, and the query's score bound."""

    name: str
    description: str
    cosine_in_score: int
    score_threshold: float


RULES = (
    Rule("notebook", "score = cosine + overlap + cosine, score > 1.5 (the notebook's find_top_evidence)", 2, 1.5),
    Rule(
        "submission",
        "score = cosine + overlap, score > 1.0 (the submitted run, as the 2026 explainer reconstructed it)",
        1,
        1.0,
    ),
)


class Setting(NamedTuple):
    cosine: float
    overlap: float
    top_n: int
    score: float | None = None  # the combined score's minimum; None: the rule's own


NOTEBOOK = Setting(COSINE_THRESHOLD, OVERLAP_THRESHOLD, MAX_EVIDENCES)
#: The swept parameters, each with its values (the others at the notebook's setting).
PARAMETERS = {"cosine": GRID, "overlap": GRID, "top_n": TOP_N, "score": SCORE_GRID}


def settings() -> list[tuple[str, float, Setting]]:
    """(parameter, value, setting) of every point of the three sweeps, in order."""
    return [(p, v, NOTEBOOK._replace(**{p: v})) for p, values in PARAMETERS.items() for v in values]


class ClaimColumns(NamedTuple):
    """One claim's non-zero rows under one rule (frame order) and its fallback's top ten."""

    positions: np.ndarray
    cosine: np.ndarray
    overlap: np.ndarray
    score: np.ndarray
    shared: np.ndarray
    fallback: np.ndarray

    @classmethod
    def from_retriever(cls, retriever: Retriever, claim_tags: str, rule: Rule) -> ClaimColumns:
        s = retriever.scores(claim_tags, rule.cosine_in_score)
        top = fallback_six(s.positions, s.score, len(retriever), max(TOP_N))
        return cls(s.positions, s.cosine, s.overlap, s.score, s.shared, top)

    def retrieve(self, setting: Setting, score_threshold: float) -> tuple[tuple[int, ...], bool]:
        """The positions retrieved at ``setting`` (as ``Retriever.retrieve`` with those
        thresholds and ``k = top_n``), and whether it fell back."""
        rows = np.flatnonzero(
            (self.cosine > setting.cosine) & (self.overlap > setting.overlap) & (self.score > score_threshold)
        )
        if len(rows) == 0:
            return tuple(self.fallback[: setting.top_n].tolist()), True
        order = notebook_order(self.cosine[rows], self.overlap[rows], self.score[rows], self.shared[rows])
        return tuple(self.positions[rows[order]][: setting.top_n].tolist()), False


class _Point(NamedTuple):
    f: np.ndarray  # (claims,) the course's per-claim F
    precision: np.ndarray  # (claims,) its precision and recall
    recall: np.ndarray
    lists: list[tuple[int, ...]]
    fallback: np.ndarray  # (claims,) bool


def _verdicts(
    keys: Sequence[tuple[str, tuple[int, ...]]],
    claim_stems: Mapping[str, str],
    passage_stems: Callable[[int], str],
    vocab: Vocabulary,
    table: Table,
) -> dict[tuple[str, tuple[int, ...]], str]:
    """The classifier's verdict, alone, on each distinct (claim, evidence list)."""
    if not keys:
        return {}
    ids = np.array([vocab.encode(join_row(claim_stems[c], map(passage_stems, p))) for c, p in keys], np.int64)
    logits = table.logits(ids)
    return {key: LABELS[int(np.argmax(row))] for key, row in zip(keys, logits, strict=True)}


def sweep(
    retriever: Retriever,
    claims: Mapping[str, Claim],
    claim_tags: Mapping[str, str],
    claim_stems: Mapping[str, str],
    passage_stems: Callable[[str], str],
    vocab: Vocabulary,
    table: Table,
    majority: str,
) -> dict:
    """Every rule's four sweeps over ``claims`` (a labelled split).

    claim_tags: each claim's tag string (what the notebook retrieves with); claim_stems: its
    stems joined (the classifier's input); passage_stems: a passage id's stems joined;
    vocab, table: the build's classifier; majority: the majority label of train (the baseline).

    Returns
    -------
    dict
        ``{"claims", "protocol", "rules", "notebook", "parameters", "curves": {rule: {parameter:
        [point]}}, "best": {rule: point}, "tests": {rule: against_reference(...)}, "distinct"}``;
        a point is ``{"value", "setting", "key", "F", "P", "R", "A", "HM", "fallback", "correct",
        "fallbacks", "A_interval", "F_interval", "P_interval", "R_interval"}``.
    """
    ids = sorted(claims)  # the scorer's order
    labels = [claims[c].label for c in ids]
    points = {rule.name: _rule_points(retriever, rule, [claim_tags[c] for c in ids], claims, ids) for rule in RULES}
    keys = sorted({(c, p) for rows in points.values() for *_, pt in rows for c, p in zip(ids, pt.lists, strict=True)})
    verdicts = _verdicts(keys, claim_stems, lambda p: passage_stems(retriever.ids[p]), vocab, table)
    out: dict = {
        "claims": len(ids),
        "protocol": "alone",
        "rules": [rule.__dict__ for rule in RULES],
        "notebook": NOTEBOOK._asdict(),
        "parameters": {p: list(v) for p, v in PARAMETERS.items()},
        "distinct": len(keys),
        "curves": {},
        "best": {},
        "tests": {},
    }
    for rule in RULES:
        curves: dict[str, list[dict]] = {p: [] for p in PARAMETERS}
        systems: dict[str, S.PerClaim] = {}
        for parameter, value, setting, pt in points[rule.name]:
            predicted = tuple(verdicts[(c, p)] for c, p in zip(ids, pt.lists, strict=True))
            right = np.array([v == label for v, label in zip(predicted, labels, strict=True)])
            entry = _figures(value, setting, pt, right)
            curves[parameter].append(entry)
            systems.setdefault(entry["key"], S.PerClaim(tuple(labels), predicted, pt.f, right))
        _mean_intervals([e for c in curves.values() for e in c], [pt for *_, pt in points[rule.name]])
        best = max((e for c in curves.values() for e in c), key=lambda e: e["HM"])  # the first of equals
        out["curves"][rule.name] = curves
        out["best"][rule.name] = best
        out["tests"][rule.name] = _tests(systems, best, labels, majority)
    return out


def _rule_points(
    retriever: Retriever, rule: Rule, tags: Sequence[str], claims: Mapping[str, Claim], ids: Sequence[str]
) -> list[tuple[str, float, Setting, _Point]]:
    """Every setting's retrievals of the claims ``ids`` (tag strings ``tags``) under one rule,
    with their course F, from each claim's columns, computed once.

    One claim's columns are held at a time: every setting's retrieval of it is taken, then they
    are let go. A claim of a course-scale corpus touches about 140,000 passages, and holding
    every claim's columns for both rules at once was the build's peak (docs/benchmarks.md, "The
    1,208,827-passage synthetic build")."""
    gold = [claims[c].evidences for c in ids]
    swept = []
    for parameter, value, setting in settings():
        if setting.score == rule.score_threshold:
            setting = setting._replace(score=None)  # the rule's own: the notebook setting's key
        threshold = rule.score_threshold if setting.score is None else setting.score
        swept.append((parameter, value, setting, threshold))
    found: list[list[tuple[tuple[int, ...], bool]]] = [[] for _ in swept]  # [setting][claim]
    for claim_tags in tags:
        columns = ClaimColumns.from_retriever(retriever, claim_tags, rule)
        for each, (*_, setting, threshold) in zip(found, swept, strict=True):
            each.append(columns.retrieve(setting, threshold))
        del columns
    rows = []
    for (parameter, value, setting, _), got in zip(swept, found, strict=True):
        names = [[retriever.ids[p] for p in positions] for positions, _ in got]
        scores = np.array([evidence_scores(n, g) for n, g in zip(names, gold, strict=True)]).reshape(-1, 3)
        point = _Point(
            scores[:, 2],
            scores[:, 0],
            scores[:, 1],
            [positions for positions, _ in got],
            np.array([fb for _, fb in got]),
        )
        rows.append((parameter, value, setting, point))
    return rows


def _key(setting: Setting) -> str:
    score = "" if setting.score is None else f", score>{setting.score:g}"
    return f"cosine>{setting.cosine:g}, overlap>{setting.overlap:g}{score}, top {setting.top_n}"


def _figures(value: float, setting: Setting, pt: _Point, right: np.ndarray) -> dict:
    f, a = float(pt.f.mean()), float(right.mean())
    return {
        "value": value,
        "setting": setting._asdict(),
        "key": _key(setting),
        "F": f,
        "P": float(pt.precision.mean()),
        "R": float(pt.recall.mean()),
        "A": a,
        "HM": harmonic_mean(f, a),
        "fallback": float(pt.fallback.mean()),
        "fallbacks": int(pt.fallback.sum()),
        "correct": int(right.sum()),
        "A_interval": S.wilson(int(right.sum()), len(right)).to_dict(),
    }


def _mean_intervals(entries: Sequence[dict], points: Sequence[_Point]) -> None:
    """Give each point's F, precision and recall (``entries[i]``'s, of ``points[i]``) its
    percentile bootstrap interval over claims, in place: one set of resamples for them all."""
    values = np.stack([v for pt in points for v in (pt.f, pt.precision, pt.recall)])
    resampled = S.resampled_means(values, S.resample_indices(values.shape[1]))
    for i, entry in enumerate(entries):
        for k, key in enumerate(("F", "P", "R")):
            row = resampled[3 * i + k]
            entry[f"{key}_interval"] = S.percentile_interval(entry[key], row, len(row), S.SEED).to_dict()


def _tests(systems: Mapping[str, S.PerClaim], best: dict, labels: Sequence[str], majority: str) -> dict:
    """The notebook's setting and the best one, each with its intervals, paired and tested,
    with always answering ``majority`` (on the notebook setting's passages) beside them."""
    notebook = systems[_key(NOTEBOOK)]
    chosen = {"notebook setting": notebook}
    if best["key"] != _key(NOTEBOOK):
        chosen["best setting"] = systems[best["key"]]
    predicted = (majority,) * len(labels)
    right = np.array([label == majority for label in labels])
    chosen[f"always {majority}"] = S.PerClaim(tuple(labels), predicted, notebook.f, right)
    return against_reference(chosen, "notebook setting")
