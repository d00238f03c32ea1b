"""Why a passage was or was not returned for a claim, read from the build's retrieval model
(nothing refit): the filter rule, once (the notebook's tests, and a typed text's retrieval under
a scoring rule of :data:`claimtrace.evaluation.sweep.RULES`, which the walkthrough and the
counterfactuals' tracer both run), and :class:`RetrievalView`, the one view of any passage that
the walkthrough (its missed gold passages, its near misses, the vectorisation's verdict) and a
compared run (:mod:`claimtrace.compare.runs`) both show.

The filter keeps a passage whose cosine is above 0.55 and whose tag overlap is above 0.5
(:data:`claimtrace.constants.COSINE_THRESHOLD`, :data:`~claimtrace.constants.OVERLAP_THRESHOLD`);
the retrieval kernel applies it to every passage, and the functions here say, for the passages a
page shows, which of its tests a passage fails and which one stops it first.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from claimtrace.constants import COSINE_THRESHOLD, MAX_EVIDENCES, OVERLAP_THRESHOLD
from claimtrace.evaluation.sweep import RULES, Rule
from claimtrace.pipeline.retrieval import Query, Retrieval, Retriever, Scores, Thresholds

__all__ = [
    "FailedTest",
    "filter_failures",
    "passes_filter",
    "Stop",
    "filter_stop",
    "NOTEBOOK_RULE",
    "rule_named",
    "rule_thresholds",
    "retrieval_under",
    "retrieval_and_scores_under",
    "RetrievalView",
]


# --- the filter rule -----------------------------------------------------------------------------


@dataclass(frozen=True)
class FailedTest:
    """One of the filter's tests that a passage fails: ``name`` (``"cosine"`` or ``"overlap"``),
    the passage's ``value`` and the ``threshold`` it is not above."""

    name: str
    value: float
    threshold: float


def filter_failures(cosine: float, overlap: float) -> list[FailedTest]:
    """The filter's tests a passage fails, in the order the notebook's query states them (cosine,
    then overlap); empty when it passes. A test keeps a value strictly above its threshold."""
    tests = (("cosine", cosine, COSINE_THRESHOLD), ("overlap", overlap, OVERLAP_THRESHOLD))
    return [FailedTest(name, float(value), threshold) for name, value, threshold in tests if not value > threshold]


def passes_filter(cosine: float, overlap: float) -> bool:
    """Whether a passage with these figures passes the filter."""
    return not filter_failures(cosine, overlap)


@dataclass(frozen=True)
class Stop:
    """What kept a passage out of a claim's returned six (or that it is one of them): the
    ``rule`` (a short name pages filter on) and ``why``, in words with the passage's figures."""

    rule: str
    why: str


def filter_stop(row: dict) -> Stop | None:
    """The first of the filter's tests a passage fails (None when it passes), from its
    ``shared``, ``cosine`` and ``overlap``. A passage sharing no tag fails the overlap test, and
    is told so in those words."""
    if row["shared"] == 0:
        return Stop("no shared tag", "it shares no tag with the claim (overlap 0)")
    failures = filter_failures(row["cosine"], row["overlap"])
    if not failures:
        return None
    first = failures[0]
    return Stop(first.name, f"{first.name} {first.value:.3f} ≤ {first.threshold}")


#: The notebook's own rule (:data:`claimtrace.evaluation.sweep.RULES`), which every course
#: claim's retrieval in a build follows.
NOTEBOOK_RULE = RULES[0]


def rule_named(name: str) -> Rule:
    """The rule of :data:`~claimtrace.evaluation.sweep.RULES` called ``name``; a ValueError
    naming the choices for any other."""
    for rule in RULES:
        if rule.name == name:
            return rule
    raise ValueError(f"unknown rule {name!r}: expected one of {', '.join(r.name for r in RULES)}")


def rule_thresholds(rule: Rule) -> Thresholds:
    """The query's three bounds under ``rule``: the notebook's cosine and overlap bounds, the
    rule's own score bound."""
    return Thresholds(COSINE_THRESHOLD, OVERLAP_THRESHOLD, rule.score_threshold)


def retrieval_under(retriever: Retriever, query: Query, rule: Rule) -> Retrieval:
    """A query's retrieval under ``rule`` (one kernel pass): the score counts the cosine as the
    rule does, and the filter keeps a score above the rule's bound. Under the notebook's rule it
    is the build's own ``retrieve``."""
    return retriever.retrieve(query, rule.cosine_in_score, thresholds=rule_thresholds(rule))


def retrieval_and_scores_under(retriever: Retriever, query: Query, rule: Rule) -> tuple[Retrieval, Scores]:
    """:func:`retrieval_under` and every passage the query touches, scored under ``rule`` with
    the rule's filter mask. The notebook's rule takes one kernel pass; another takes two, since
    :meth:`Retriever.scores` takes no bounds and its mask holds the notebook's score bound (1.5),
    which binds once the cosine is counted once: the mask is the rule's three tests on the
    columns themselves (the kernel's comparisons, on the same values), and the retrieval's count
    of passing rows checks it."""
    if rule == NOTEBOOK_RULE:
        return retriever.retrieve_with_scores(query)
    result = retrieval_under(retriever, query, rule)
    columns = retriever.scores(query, rule.cosine_in_score)
    bounds = rule_thresholds(rule)
    passing = (columns.cosine > bounds.cosine) & (columns.overlap > bounds.overlap) & (columns.score > bounds.score)
    if int(passing.sum()) != result.passed:
        raise AssertionError(f"the rule's mask counts {int(passing.sum())} rows, the retrieval {result.passed}")
    return result, columns._replace(passing=passing)


# --- the notebook retrieval's view of any passage ------------------------------------------------


class RetrievalView:
    """The notebook retrieval's view of any passage for one claim, from the build's retrieval
    model (nothing refit): the passage's tags, the tags it shares with the claim, its cosine,
    overlap and score, and the first rule that kept it out of the six returned (or that it was
    returned). One implementation serves the walkthrough's missed gold passages and the passages
    a compared run named (:mod:`claimtrace.compare.runs`).

    Parameters
    ----------
    build : claimtrace.workdir.reader.BuildReader
    record : dict
        The claim's retrieval record (``tags``, ``evidences``, ``fallback``, ``kept``).
    fallback_scores : numpy.ndarray, shape (n_candidates,), optional
        The score of every passage with a non-zero score for this claim (``Retriever.scores``),
        which ranks a passage in the fallback. A trace that already ran the retrieval kernel
        hands its scores down; otherwise the kernel runs once, and only for a fallback claim.
    query : claimtrace.pipeline.retrieval.Query, optional
        The claim's tag string as the retrieval model reads it, when the caller made it (a
        trace); otherwise it is made once, on first use.
    """

    def __init__(self, build, record: dict, fallback_scores: np.ndarray | None = None, query=None):
        self.build = build
        self.record = record
        self._fallback_scores = fallback_scores
        self._query = query
        self.claim_tags = set(record["tags"].split())
        self.returned = {pid: rank for rank, pid in enumerate(record["evidences"], 1)}
        self.kept_rank = {k["id"]: rank for rank, k in enumerate(record["kept"], 1)}
        # The max-shared rule keeps only the passages sharing the most tags; a fallback has no such cut.
        self.max_shared = None if record["fallback"] else max((k["shared"] for k in record["kept"]), default=0)

    def query(self):
        """The claim's :class:`claimtrace.pipeline.retrieval.Query`, made once."""
        if self._query is None:
            self._query = self.build.retriever().query(self.record["tags"])
        return self._query

    def fallback_scores(self) -> np.ndarray:
        if self._fallback_scores is None:
            self._fallback_scores = self.build.retriever().scores(self.query()).score
        return self._fallback_scores

    def passages(self, passage_ids: Sequence[str], gold: Sequence[str] = ()) -> list[dict]:
        """One row per passage id, in the order given.

        Returns
        -------
        list of dict
            ``{"id", "text", "gold", "in_build", "retrievable", "tags", "shared_tags", "cosine",
            "overlap", "score", "shared", "returned_rank", "stopped_by", "why"}``; ``stopped_by``
            is ``"returned"`` for a passage among the claim's six, else the first rule that
            stopped it (``"not in the build"``, ``"no tags"``, the filter's ``"no shared tag"``,
            ``"cosine"`` or ``"overlap"``, ``"max shared"``, ``"past the sixth"``, ``"fallback"``).
        """
        retriever = self.build.retriever()
        store = self.build.passages()
        gold_set = set(gold)
        rows, scored = [], []
        for pid in passage_ids:
            row: dict[str, Any] = {
                "id": pid,
                "text": self.build.passage_text(pid),
                "gold": pid in gold_set,
                "in_build": pid in store,
                "returned_rank": self.returned.get(pid),
            }
            position = retriever.position(pid)
            row["retrievable"] = position is not None
            if not row["in_build"] or position is None:
                row.update(_unscored(row["in_build"]))
            else:
                tags = retriever.passage_tags(position)
                row.update({"tags": tags, "shared_tags": sorted(self.claim_tags & set(tags))})
                scored.append((row, position))
            rows.append(row)
        if scored:
            columns = retriever.point_columns(self.query(), [position for _, position in scored])
            for k, (row, _) in enumerate(scored):
                cosine, overlap, score, shared = (x[k] for x in columns)
                row.update({"cosine": float(cosine), "overlap": float(overlap), "score": float(score)})
                row["shared"] = int(shared)
                stop = self._first_stop(row)
                row["stopped_by"], row["why"] = stop.rule, stop.why
        return rows

    def _first_stop(self, row: dict) -> Stop:
        """The rule that kept a scored passage out of the returned six: the filter, the max-shared
        cut, the six-passage limit, or its rank in the fallback ("returned" when it is one of them)."""
        rank = row["returned_rank"]
        if rank is not None:
            return Stop("returned", f"returned #{rank} of the {len(self.returned)}")
        failed = filter_stop(row)
        if self.record["fallback"]:
            # Nothing passed, so the fallback's ranking by score is what decided, whatever the filter said.
            higher = int(np.count_nonzero(self.fallback_scores() > row["score"]))
            because = failed.why if failed else "it passes"
            return Stop(
                "fallback",
                f"below the sixth in the fallback: nothing passed the filter (here: {because}), so the "
                f"{MAX_EVIDENCES} best scores are returned, and {higher:,} passages score higher than this one",
            )
        if failed:
            return failed
        if self.max_shared is not None and row["shared"] < self.max_shared:
            return Stop(
                "max shared",
                f"cut by the max-shared rule: it shares {row['shared']} tags, the kept ones {self.max_shared}",
            )
        return Stop("past the sixth", f"kept #{self.kept_rank.get(row['id'])}, past the {MAX_EVIDENCES} returned")


def _unscored(in_build: bool) -> dict:
    """The figures of a passage the retrieval model cannot score: none, and why."""
    if not in_build:
        stop = Stop("not in the build", "not in this build’s corpus")
    else:
        stop = Stop("no tags", "it has no usable tag, so it is never a candidate")
    no_figures = {"tags": [], "shared_tags": [], "cosine": None, "overlap": None, "score": None, "shared": None}
    return {**no_figures, "stopped_by": stop.rule, "why": stop.why}
