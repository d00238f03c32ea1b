"""What a retrieval is worth over a whole split: each retrieval variant's evidence F on labelled
claims (dev), with the course's measure (:func:`claimtrace.evaluation.scorer.evidence_f`), from the
records :func:`claimtrace.pipeline.retrieval.retrieve_all` makes."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from claimtrace.data.files import Claim
from claimtrace.evaluation.scorer import evidence_f
from claimtrace.pipeline.retrieval.variants import Variant, as_variant

__all__ = ["variant_f_row"]


def variant_f_row(variant: str | Variant, records: Sequence[dict], claims: Mapping[str, Claim], passages: int) -> dict:
    """One variant's row of the F table from its :func:`retrieve_all` records of labelled claims.

    Parameters
    ----------
    variant : str or Variant
        A name of :data:`VARIANTS`, or the variant.
    records : sequence of dict
        Its ``n_records`` records (``claim_id``, ``evidences``, ``fallback`` are read).
    claims : mapping of str to Claim
        The labelled claims, by id: each record's gold evidences.
    passages : int
        How many passages its retriever retrieves from.

    Returns
    -------
    row : dict
        ``{"variant", "description", "F", "fallback_share", "claims", "passages"}``: the mean
        evidence F and the share of claims that fell back over the records (0.0 for none),
        ``claims`` = n_records.
    """
    v = as_variant(variant)
    f_values = [evidence_f(r["evidences"], claims[r["claim_id"]].evidences) for r in records]
    return {
        "variant": v.name,
        "description": v.description,
        "F": float(np.mean(f_values)) if f_values else 0.0,
        "fallback_share": float(np.mean([r["fallback"] for r in records])) if records else 0.0,
        "claims": len(records),
        "passages": passages,
    }
