"""What a retrieval is worth over a whole split: each retrieval variant's evidence F on labelled
claims (dev), with the course's measure (:func:`claimtrace.evaluation.scorer.evidence_f`), from the
records :func:`claimtrace.pipeline.retrieval.retrieve_all` makes."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import numpy as np

from claimtrace.data.files import Claim
from claimtrace.evaluation.scorer import evidence_f
from claimtrace.pipeline.retrieval.retriever import Retriever, retrieve_all
from claimtrace.pipeline.retrieval.variants import VARIANTS, Variant, as_variant

__all__ = ["variant_f_table", "variant_f_row"]


def variant_f_table(
    retrievers: Mapping[str, Retriever],
    claims: Mapping[str, Claim],
    variants: Iterable[str] | None = None,
    records: Mapping[str, Sequence[dict]] | None = None,
) -> list[dict]:
    """Evidence F of each variant on labelled claims (dev): one row per variant
    (:func:`variant_f_row`).

    Parameters
    ----------
    retrievers : mapping of str to Retriever
        Fitted retrievers by the passage tags they were fit on, ``"padded"`` (the notebook's tags)
        and ``"unpadded"`` (the tagging stage's ``nopad``); a variant whose tags have no retriever
        is left out.
    claims : mapping of str to Claim
        The ``n_claims`` labelled claims by id.
    variants : iterable of str, optional
        Names of :data:`VARIANTS` (default: all of them, in their order).
    records : mapping of str to sequence of dict, optional
        Each variant's :func:`retrieve_all` records of these claims where already made (the build
        keeps them): those variants are scored without retrieving again.

    Returns
    -------
    rows : list of dict
        One :func:`variant_f_row` per variant scored, in the order of ``variants``.
    """
    names = list(variants) if variants is not None else list(VARIANTS)
    rows = []
    for name in names:
        v = as_variant(name)
        if v.passage_tags not in retrievers:
            continue
        if records is not None and v.name in records:
            records_of_v = records[v.name]
        else:
            records_of_v = retrieve_all(retrievers[v.passage_tags], claims, v)
        rows.append(variant_f_row(v, records_of_v, claims, len(retrievers[v.passage_tags])))
    return rows


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
