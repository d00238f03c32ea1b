"""The ways to run the retrieval: the notebook's as designed, and one variant per quirk, each
changing exactly one thing, so that each quirk's cost can be measured (:data:`VARIANTS`)."""

from __future__ import annotations

from dataclasses import dataclass

from claimtrace.constants import COSINE_WEIGHT_IN_SCORE
from claimtrace.pipeline.preprocess import Preprocessor

__all__ = ["Variant", "VARIANTS", "as_variant", "claim_input"]


@dataclass(frozen=True)
class Variant:
    """One way to run the retrieval. ``notebook`` is the pipeline as designed (notebook.md
    section 4); each other variant changes exactly one thing."""

    name: str
    description: str
    #: "tags": the claim's sorted stems (``Preprocessor.preprocess(text).tags()``), as cell JU-plzIGIzlH did;
    #: "text": the raw claim text, as the notebook's final dev and test runs did (F = 0.011).
    claim_input: str = "tags"
    #: 2 = the quirk "cosine added twice"; 1 = score = cosine + overlap (the query's
    #: ``combined_score > 1.5`` is kept literally, so it becomes binding).
    cosine_in_score: int = COSINE_WEIGHT_IN_SCORE
    #: "padded": the notebook's passage tags; "unpadded": without zero-weight features (the
    #: tagging stage's ``nopad``; pass them as ``unpadded_tags``).
    passage_tags: str = "padded"


VARIANTS: dict[str, Variant] = {
    v.name: v
    for v in (
        Variant("notebook", "as designed: claim tags, cosine added twice, padded passage tags"),
        Variant("raw-claim-text", "the raw claim text as its tags (the notebook's final dev run)", claim_input="text"),
        Variant("cosine-once", "score = cosine + overlap (the query's score > 1.5 kept)", cosine_in_score=1),
        Variant("unpadded-tags", "passage tags without zero-weight padding", passage_tags="unpadded"),
    )
}


def as_variant(variant: str | Variant) -> Variant:
    """The :class:`Variant` of a name of :data:`VARIANTS` (a Variant is returned as it is)."""
    if isinstance(variant, Variant):
        return variant
    try:
        return VARIANTS[variant]
    except KeyError:
        raise ValueError(f"unknown retrieval variant {variant!r}: expected one of {', '.join(VARIANTS)}") from None


def claim_input(claim_text: str, preprocessor: Preprocessor, variant: str | Variant = "notebook") -> str:
    """The string handed to ``find_top_evidence`` for a claim: its tags (``preprocessor``'s
    stems, sorted), or its raw text."""
    v = as_variant(variant)
    return preprocessor.preprocess(claim_text).tags() if v.claim_input == "tags" else claim_text
