"""The walkthrough's third stage: the claim's and one passage's tag vectors under the retrieval
model, and their cosine, overlap and score, so that each can be checked by hand."""

from __future__ import annotations

from collections.abc import Callable

from claimtrace.explain.retrieval import passes_filter
from claimtrace.web.views.walkthrough.claim import ClaimRetrieval, Section
from claimtrace.workdir.reader import BuildReader


def tag_terms(vocabulary, tags: list[str], shared: set[str], terms_of: Callable[[str], list[str]]) -> list[dict]:
    """Each distinct tag as the retrieval model reads it, so overlap and cosine can be checked by
    hand: overlap counts the raw tags, cosine only the re-stemmed terms in the vocabulary.

    Parameters
    ----------
    vocabulary : Mapping[str, int]
        The retrieval vectorizer's term -> column.
    tags : list of str
        A tag string split on whitespace (duplicates are dropped: overlap uses sets).
    shared : set of str
        The tags the other side also has.
    terms_of : callable
        tag -> its terms: read off the tag string stemmed again once
        (:meth:`claimtrace.pipeline.tagging.Restemmer.restem_tags`), or each tag looked up in the
        build's table (:meth:`claimtrace.pipeline.tagging.Restemmer.terms`).

    Returns
    -------
    list of dict
        ``{"tag", "term", "in_vocabulary", "shared"}`` per distinct tag, sorted; ``term`` is the
        tag stemmed again (empty when nothing survives).
    """
    rows = []
    for tag in sorted(set(tags)):
        terms = terms_of(tag)
        rows.append(
            {
                "tag": tag,
                "term": " ".join(terms),
                "in_vocabulary": bool(terms) and all(t in vocabulary for t in terms),
                "shared": tag in shared,
            }
        )
    return rows


def _claim_terms(found: ClaimRetrieval) -> dict[str, float]:
    """The claim's vector under the retrieval model: term -> weight."""
    names = found.retriever.vectorizer.feature_names
    query = found.query
    return {str(names[t]): float(v) for t, v in zip(query.terms.tolist(), query.weights.tolist())}


def _claim_vector(found: ClaimRetrieval, claim_terms: dict[str, float], shared: set[str]) -> dict:
    """The claim's tags, stemmed again (the quirk "stems of stems"), and its vector."""
    retriever, query = found.retriever, found.query
    restemmed = query.restemmed
    tags = query.text.split()
    changes = [f"{a} → {b}" for a, b in zip(tags, restemmed) if a != b] if len(tags) == len(restemmed) else []
    return {
        "tags": tags,
        "restemmed": restemmed,
        "restem_changes": changes,
        "out_of_vocabulary": [t for t in restemmed if t not in retriever.vocabulary],
        "terms": [{"term": k, "weight": v} for k, v in sorted(claim_terms.items())],
        "tag_terms": tag_terms(retriever.vocabulary, tags, shared, found.tag_terms.__getitem__),
    }


def vectorisation_section(
    build: BuildReader, found: ClaimRetrieval | dict, passage_id: str | None, role: str
) -> Section:
    """The claim's and one passage's tag vectors under the retrieval model, and their cosine,
    overlap and score as the build's model computes them."""
    if not isinstance(found, ClaimRetrieval):
        return Section(found)  # the retrieval stage is missing
    retriever = found.retriever
    claim_terms = _claim_terms(found)
    passage, shared = None, set()
    if passage_id is not None and passage_id not in build.passages():
        passage = {"id": passage_id, "role": role, "in_build": False}
    elif passage_id is not None:
        passage = _passage_vector(found, claim_terms, passage_id, role)
        shared = set(passage["shared_tags"])
    return Section(
        {
            "status": "ok",
            "features": len(retriever.vectorizer.feature_names),
            "fit_passages": len(retriever),
            "excluded_passages": int(retriever.excluded),
            "claim": _claim_vector(found, claim_terms, shared),
            "passage": passage,
        }
    )


def _passage_vector(found: ClaimRetrieval, claim_terms: dict[str, float], passage_id: str, role: str) -> dict:
    """One passage of the build: its tags and vector, the products of the terms it shares with
    the claim, and the cosine, overlap and score the build's model gives the pair."""
    retriever, query = found.retriever, found.query
    names = retriever.vectorizer.feature_names
    position = retriever.position(passage_id)
    passage_tags = retriever.passage_tags(position)
    columns, weights = retriever.passage_vector(position)
    passage_terms = {str(names[i]): float(v) for i, v in zip(columns.tolist(), weights.tolist())}
    products = [
        {"term": t, "claim": claim_terms[t], "passage": passage_terms[t], "product": claim_terms[t] * passage_terms[t]}
        for t in sorted(set(claim_terms) & set(passage_terms))
    ]
    claim_set, passage_set = set(query.text.split()), set(passage_tags)
    shared = claim_set & passage_set
    cosine = overlap = score = 0.0
    if position is not None:
        cos, ov, sc, _ = retriever.point_columns(query, [position], found.rule.cosine_in_score)
        cosine, overlap, score = float(cos[0]), float(ov[0]), float(sc[0])
    return {
        "id": passage_id,
        "role": role,
        "in_build": True,
        "retrievable": position is not None,
        "tags": passage_tags,
        "tag_terms": tag_terms(
            retriever.vocabulary, passage_tags, shared, lambda tag: retriever.restemmer.terms(tag.lower())
        ),
        "terms": [{"term": k, "weight": v} for k, v in sorted(passage_terms.items())],
        "products": products,
        "cosine": cosine,
        "shared_tags": sorted(shared),
        "shared": len(shared),
        "claim_tag_count": len(claim_set),
        "passage_tag_count": len(passage_set),
        "overlap": overlap,
        "score": score,
        "passes": passes_filter(cosine, overlap),
    }
