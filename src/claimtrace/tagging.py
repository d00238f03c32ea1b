"""Stage 2, tagging: every passage keeps its ten highest-weighted TF-IDF features, single words
only (notebook.md sections 2 and 3).

* :func:`fit_corpus` assembles the 20,000-feature vectorizer's fit corpus as the notebook did:
  baseline rows, dev gold rows, train gold rows (each claim exploded over its evidence ids and
  left-merged to the de-duplicated passages), then every de-duplicated passage; each document
  is ``claim_text + ' ' + evidence_text`` passed through the keep-stopwords preprocessing.
* :func:`tagging_vectorizer` is fit on it; its tokenizer preprocesses *again* (quirk "stems of
  stems": ``increased -> increas -> increa``).
* :func:`tag_rows` takes each passage's top ten features with numpy 1.24's introsort (quirk
  "zero-weight padding": short passages are padded with zero-weight features, often the last
  vocabulary entry), keeps the alphabetic names, as a set.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Mapping, Sequence

import numpy as np
import scipy.sparse as sp

from . import constants as C
from .data import Claim
from .preprocess import preprocess
from .tfidf import NotebookTfidf


def _older_text(text: str) -> str:
    return preprocess(text, keep_stopwords=True).text()


def final_stems(text: str) -> list[str]:
    """The vectorizers' tokenizer: the final preprocessing's stems."""
    return preprocess(text).stems


def deduplicated(evidence: Mapping[str, str]) -> dict[str, str]:
    """evidence.json with duplicate texts dropped, keeping the first (the notebook's
    ``drop_duplicates``)."""
    seen: set[str] = set()
    out = {}
    for evidence_id, text in evidence.items():
        if text not in seen:
            seen.add(text)
            out[evidence_id] = text
    return out


def fit_corpus_raw(claim_files: Sequence[Mapping[str, Claim]], evidence: Mapping[str, str]) -> Iterable[str]:
    """The fit corpus before preprocessing: ``claim_text + ' ' + evidence_text`` per row.

    claim_files: the baseline, dev and train claims, in that order. A claim with no evidence
    ids gives one row with an empty evidence side; an id missing from the de-duplicated passages
    (or whose text duplicated an earlier passage's) gives an empty evidence side too.
    """
    passages = deduplicated(evidence)
    for claims in claim_files:
        for claim in claims.values():
            for evidence_id in claim.evidences or [None]:
                yield claim.text + " " + passages.get(evidence_id, "")
    for text in passages.values():
        yield " " + text


def fit_corpus(claim_files: Sequence[Mapping[str, Claim]], evidence: Mapping[str, str]) -> Iterable[str]:
    """The fit corpus as the vectorizer saw it: each row through the keep-stopwords
    preprocessing, stems joined with spaces."""
    return (_older_text(doc) for doc in fit_corpus_raw(claim_files, evidence))


def tagging_vectorizer(**overrides) -> NotebookTfidf:
    """The notebook's 20,000-feature uni- to tri-gram vectorizer, unfitted."""
    params = {**C.TAGGING_VECTORIZER, **overrides}
    return NotebookTfidf(tokenizer=final_stems, **params)


def passage_documents(texts: Iterable[str]) -> Iterable[str]:
    """What the notebook passed to ``transform`` for each passage: its final stems joined."""
    return (preprocess(text).text() for text in texts)


@dataclass(frozen=True)
class PassageTags:
    """Tags of one passage: the sorted set of alphabetic names among its top ten features,
    and for each of the ten, its feature index and weight (zero-weight padding visible)."""

    tags: list[str]
    top: list[int]
    weights: list[float]


def tag_rows(rows: sp.csr_matrix, feature_names: np.ndarray, k: int = C.TAGS_PER_PASSAGE, pad_with_zeros: bool = True) -> list[PassageTags]:
    """Tags of each row of a (n_passages, n_features) TF-IDF matrix.

    ``pad_with_zeros=False`` is the variant without the quirk: only non-zero features count.
    """
    from .npsort import top_k_csr  # numpy 1.24's introsort, pruned to the top k

    rows = rows.tocsr()
    rows.sort_indices()
    top = top_k_csr(rows.data, rows.indices, rows.indptr, rows.shape[1], k)
    out = []
    for r in range(rows.shape[0]):
        lo, hi = rows.indptr[r], rows.indptr[r + 1]
        weight_of = dict(zip(rows.indices[lo:hi].tolist(), rows.data[lo:hi].tolist()))
        indices = top[r].tolist()
        weights = [weight_of.get(i, 0.0) for i in indices]
        names = {
            feature_names[i]
            for i, w in zip(indices, weights)
            if feature_names[i].isalpha() and (pad_with_zeros or w > 0.0)
        }
        out.append(PassageTags(sorted(names), indices, weights))
    return out


def canonical_order(n_passages: int, seed: int = C.PASSAGE_SHUFFLE_SEED) -> np.ndarray:
    """The notebook's passage order: ``DataFrame.sample(frac=1, random_state=42)`` of
    evidence.json order, which pandas draws as ``RandomState(42).permutation(n)``.

    Returns (n_passages,) int64 positions into evidence.json order.
    """
    return np.random.RandomState(seed).permutation(n_passages).astype(np.int64)
