"""The walkthrough's fourth stage: the notebook retrieval for one claim, as the build ran it.
The filter, the sorts, the max-shared cut, the six returned and the fallback: the build's record,
the rows around it (every passage that passed, the nearest misses, each gold passage missed and
the rule that stopped it), and the claim's and its split's figures beside the course's."""

from __future__ import annotations

from typing import Any

import numpy as np

from claimtrace import course
from claimtrace.constants import MAX_EVIDENCES
from claimtrace.data.files import Claim
from claimtrace.evaluation.scorer import evidence_scores
from claimtrace.evaluation.sweep import Rule
from claimtrace.explain.retrieval import RetrievalView, filter_failures, rule_thresholds
from claimtrace.pipeline.retrieval import notebook_order
from claimtrace.web.views.walkthrough.claim import ClaimRetrieval, Section
from claimtrace.workdir.reader import BuildReader

#: Rows of the "passed the filter" table kept in a trace (the count is always exact).
MAX_PASSED_ROWS = 100
#: Passages that came closest without passing, shown beside the filter.
NEAR_MISSES = 5
#: The note of a claim nothing passed the filter for.
FALLBACK = (
    "Nothing passed the filter: the retrieved passages are the notebook's fallback, "
    "the top six by score over every passage."
)


def missed_gold(found: ClaimRetrieval, build: BuildReader, gold: list[str]) -> list[dict]:
    """Every gold passage the claim did not get back, with its numbers and the first rule that
    stopped it (:class:`claimtrace.explain.retrieval.RetrievalView`, which also explains a compared
    run's passages), in gold order; from the trace's one query and kernel pass."""
    record = found.record
    view = RetrievalView(build, record, found.scores.score, found.query)
    return view.passages([pid for pid in gold if pid not in record["evidences"]], gold)


def retrieval_section(
    build: BuildReader, found: ClaimRetrieval | dict, claim: Claim | None, split: str | None, gold: list[str]
) -> Section:
    """The filter, the sorts, the cut and the fallback for one claim: the build's record, and
    the rows around it (every passage that passed, the nearest misses)."""
    if not isinstance(found, ClaimRetrieval):
        return Section(found)  # the retrieval stage is missing
    record, store = found.record, build.passages()
    passed = int(np.count_nonzero(found.scores.passing))
    data: dict[str, Any] = {
        "status": "ok",
        "source": found.source,
        "claim_tags": record["tags"],
        "rule": rule_facts(found.rule),
        "thresholds": {
            **rule_thresholds(found.rule)._asdict(),
            "max_evidences": MAX_EVIDENCES,
            "cosine_in_score": found.rule.cosine_in_score,
        },
        "candidates": int(len(found.scores.positions)),
        "passages": len(found.retriever),
        "passed": int(record["passed"]),
        "passed_rows": _passed_rows(build, found, set(gold)),
        "passed_rows_truncated": max(0, passed - MAX_PASSED_ROWS),
        "max_shared": max((r["shared"] for r in record["kept"]), default=0) if not record["fallback"] else None,
        "kept": len(record["kept"]) if not record["fallback"] else 0,
        "fallback": bool(record["fallback"]),
        "near_misses": _near_misses(build, found, set(gold)),
        "evidences": _returned(build, record, set(gold), claim.id if claim is not None else None),
        "gold": [{"id": g, "retrieved": g in record["evidences"], "in_build": g in store} for g in gold],
        "missed_gold": missed_gold(found, build, gold),
    }
    data.update(_figures(build, record, claim, split, gold))
    if claim is not None and claim.id == course.WALKTHROUGH_CLAIM:
        data["course"].update(_course_walkthrough_claim(data))
    return Section(data, (FALLBACK,) if record["fallback"] else ())


def rule_facts(rule: Rule) -> dict:
    """What the page says of the scoring rule a retrieval followed: its name, its score's
    formula and the score's bound."""
    formula = "cosine + overlap" + " + cosine" * (rule.cosine_in_score - 1)
    return {"name": rule.name, "formula": f"score = {formula}", "score_threshold": rule.score_threshold}


def gold_claims(build: BuildReader, passage_id: str) -> list[dict]:
    """The course claims (train, then dev, in file order) whose gold list holds ``passage_id``,
    each ``{"id", "split"}``; the index over every labelled claim is made once per build."""

    def index() -> dict[str, list[dict]]:
        out: dict[str, list[dict]] = {}
        for split in ("train", "dev"):  # the splits with gold lists
            for claim_id, claim in build.claims(split).items():
                for pid in dict.fromkeys(claim.evidences):
                    out.setdefault(pid, []).append({"id": claim_id, "split": split})
        return out

    return build.once("gold_claims", index).get(passage_id, [])


def _touched(build: BuildReader, found: ClaimRetrieval, gold: set[str], k: int) -> dict:
    """The ``k``-th passage the claim's terms touch, with its figures from the kernel pass."""
    scores = found.scores
    position = int(scores.positions[k])
    pid = found.retriever.ids[position]
    return {
        "id": pid,
        "text": build.passage_text(pid),
        "tags": found.retriever.passage_tags(position),
        "cosine": float(scores.cosine[k]),
        "overlap": float(scores.overlap[k]),
        "score": float(scores.score[k]),
        "shared": int(scores.shared[k]),
        "gold": pid in gold,
    }


def _passed_rows(build: BuildReader, found: ClaimRetrieval, gold: set[str]) -> list[dict]:
    """The passages that passed the filter, by score (the first :data:`MAX_PASSED_ROWS`), each
    with its rank after the notebook's sorts and the max-shared cut, and whether it is returned."""
    scores = found.scores
    rows = np.flatnonzero(scores.passing)
    if not len(rows):
        return []
    order = notebook_order(scores.cosine[rows], scores.overlap[rows], scores.score[rows], scores.shared[rows])
    kept_rank = {int(rows[o]): rank for rank, o in enumerate(order.tolist(), 1)}
    display = rows[np.argsort(-scores.score[rows], kind="stable")]
    passed = []
    for k in display[:MAX_PASSED_ROWS].tolist():
        row = _touched(build, found, gold, k)
        row["kept"] = k in kept_rank
        row["kept_rank"] = kept_rank.get(k)
        row["returned"] = kept_rank.get(k, MAX_EVIDENCES + 1) <= MAX_EVIDENCES
        passed.append(row)
    return passed


def _near_misses(build: BuildReader, found: ClaimRetrieval, gold: set[str]) -> list[dict]:
    """The :data:`NEAR_MISSES` best-scored passages that failed the filter, each with every test
    it failed."""
    score = found.scores.score
    failing = np.flatnonzero(~found.scores.passing)
    near = failing[np.argsort(-score[failing], kind="stable")][:NEAR_MISSES]
    rows = []
    for k in near.tolist():
        row = _touched(build, found, gold, k)
        failed = filter_failures(row["cosine"], row["overlap"])
        row["why"] = [f"{test.name} {test.value:.3f} is not above {test.threshold}" for test in failed]
        rows.append(row)
    return rows


def _returned(build: BuildReader, record: dict, gold: set[str], claim_id: str | None) -> list[dict]:
    """The passages the claim got back, in order, with the figures the build kept (none for a
    fallback's), and the other course claims each is a gold passage of (``gold_for``: a reader
    follows a passage to the claims it was chosen as evidence for)."""
    by_id = {k["id"]: k for k in record["kept"]}
    evidences = []
    for rank, pid in enumerate(record["evidences"], 1):
        kept = by_id.get(pid, {})
        evidences.append(
            {
                "rank": rank,
                "id": pid,
                "text": build.passage_text(pid),
                "gold": pid in gold,
                "cosine": kept.get("cosine"),
                "overlap": kept.get("overlap"),
                "score": kept.get("score"),
                "shared": kept.get("shared"),
                "gold_for": [c for c in gold_claims(build, pid) if c["id"] != claim_id],
            }
        )
    return evidences


def _figures(build: BuildReader, record: dict, claim: Claim | None, split: str | None, gold: list[str]) -> dict:
    """The section's figures: the claim's evidence F (a labelled claim), its split's fallback
    share, and the course's figure beside it (dev)."""
    figures: dict[str, Any] = {"scores": None, "split": None, "course": {}}
    if claim is not None and claim.label is not None:
        precision, recall, f = evidence_scores(record["evidences"], gold)
        figures["scores"] = {
            "precision": precision,
            "recall": recall,
            "F": f,
            "gold_retrieved": sum(g in set(record["evidences"]) for g in gold),
            "gold_total": len(gold),
        }
    if split is not None:
        records = build.retrieval(split).values()
        fallbacks = sum(bool(r["fallback"]) for r in records)
        figures["split"] = {
            "name": split,
            "claims": len(records),
            "fallbacks": fallbacks,
            "fallback_share": fallbacks / len(records) if records else 0.0,
        }
        if split == "dev":
            # The course printed 47%: a whole percent.
            figures["course"]["fallback_share"] = course.pair(
                "dev_fallback_share", figures["split"]["fallback_share"], close=0.005
            )
    return figures


def _course_walkthrough_claim(data: dict) -> dict:
    """claim-752's retrieval figures the course printed, beside this build's."""
    return {
        "passed": course.pair("claim752_passed", data["passed"]),
        "kept": course.pair("claim752_kept", data["kept"]),
        "max_shared": course.pair("claim752_max_shared", data["max_shared"]),
        "F": course.pair("claim752_F", data["scores"]["F"] if data["scores"] else None, close=0.005),
    }
