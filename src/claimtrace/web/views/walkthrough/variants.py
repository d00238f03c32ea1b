"""A labelled claim's evidence under every retrieval the build ran (the notebook's, each quirk
variant, BM25 as the reference): for each, how many passages it returned, how many of the
claim's gold passages they hold, and the course's per-claim precision, recall and F
(:func:`claimtrace.evaluation.scorer.evidence_scores`), read off the build's records."""

from __future__ import annotations

from claimtrace.data.files import Claim
from claimtrace.errors import DataError, Missing
from claimtrace.evaluation.scorer import evidence_scores
from claimtrace.web.views.status import missing
from claimtrace.workdir.reader import BuildReader

#: The splits the build retrieves with every variant (train: the notebook's retrieval only).
VARIANT_SPLITS = ("dev", "test")


def variants_section(build: BuildReader, claim: Claim | None, split: str | None) -> dict:
    """``{"status": "ok", "gold_total", "rows": [{"variant", "description", "reference",
    "returned", "gold_retrieved", "precision", "recall", "F", "fallback"}]}`` for a dev claim;
    ``{"status": "none"}`` for a typed text, an unlabelled claim or a train claim; missing while
    the retrieval stage (or BM25's) is not built; damaged when one of their files is."""
    if claim is None or claim.label is None or split not in VARIANT_SPLITS:
        return {"status": "none"}
    gold = list(claim.evidences)
    rows = []
    try:
        for variant in build.retrieval_variants():
            record = build.retrieval_records(split, variant["variant"]).get(claim.id)
            if record is None:
                continue
            returned = list(record["evidences"])
            precision, recall, f = evidence_scores(returned, gold)
            rows.append(
                {
                    "variant": variant["variant"],
                    "description": variant["description"],
                    "reference": bool(variant.get("reference")),
                    "returned": len(returned),
                    "gold_retrieved": sum(1 for passage in gold if passage in set(returned)),
                    "precision": precision,
                    "recall": recall,
                    "F": f,
                    "fallback": record.get("fallback"),
                }
            )
    except Missing as err:
        return missing(err.stage, err.reason)
    except DataError as err:  # a damaged variant's file: this section says so, the others still show
        return {"status": "damaged", "stage": "retrieval", "reason": str(err)}
    return {"status": "ok", "gold_total": len(gold), "rows": rows}
