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

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from claimtrace.constants import PASSAGE_SHUFFLE_SEED, TAGGING_VECTORIZER, TAGS_PER_PASSAGE
from claimtrace.data.files import Claim
from claimtrace.lib.npsort import top_k_rows  # numpy 1.24's introsort, pruned to the top k
from claimtrace.pipeline.preprocess import preprocess, stem
from claimtrace.pipeline.tfidf import NotebookTfidf


def _older_text(text: str) -> str:
    return preprocess(text, keep_stopwords=True).text()


def final_stems(text: str) -> list[str]:
    """The vectorizers' tokenizer: the final preprocessing's stems."""
    return preprocess(text).stems


_RESTEMMED: dict[str, list[str]] = {}


def restem_token(token: str) -> list[str]:
    """``final_stems`` of one token, cached (the tokens of a build's tags recur everywhere)."""
    stems = _RESTEMMED.get(token)
    if stems is None:
        stems = _RESTEMMED[token] = preprocess(token).stems
    return stems


#: contractions.fix's only dictionary keys that contain a space, and so the only ones that can
#: match across tokens: "<verb> cause" (which protects "cause" from becoming "because") and
#: "r " (-> "are "), which matches a token ending in "r" when the next character is not an
#: ASCII word character (its bounds check knows only ASCII): "sɪˈljʊər ən" -> "sɪˈljʊəare ən".
#: A text where either could happen is preprocessed whole (a superset of the cases, so exact).
_NEIGHBOURS_MATTER = re.compile(r"cause|r (?:[^0-9A-Za-z_]|$)")


def restem(text: str) -> list[str]:
    """``final_stems`` for text that is already a preprocessing output (lowercase alphabetic
    tokens separated by single spaces), one cached token at a time.

    The second pass of the quirk "stems of stems" runs the whole preprocessing again on every
    document; on such text it acts on each token alone, except where contractions' multi-word
    keys could match (then the whole text is preprocessed). tests/pipeline/test_tagging.py proves the
    equality on every document of the demo build and on generated token sequences.
    """
    if _NEIGHBOURS_MATTER.search(text):
        return final_stems(text)
    tokens = text.split()
    out: list[str] = []
    for token in tokens:
        stems = _RESTEMMED.get(token)
        out.extend(stems if stems is not None else restem_token(token))
    return out


def restem_tags(tags: str) -> tuple[list[str], dict[str, list[str]]]:
    """The quirk "stems of stems" for one claim's tag string, done once: the retrieval
    vectorizer preprocesses the tags, which are stems already, again. Returns the tokens it
    reads, ``final_stems(tags.lower())``, and what each distinct tag became.

    When that one pass leaves the string's tokens as they were (no contraction expanded, no
    token split: a tag string is preprocessing output, so almost always), each tag's terms are
    read off it: its stem if it was kept, else nothing; the filter and the stemmer act on each
    token alone. Otherwise each tag is preprocessed alone (:func:`restem_token`).
    """
    lowered = tags.lower()
    whole = preprocess(lowered)
    pairs = dict(zip(tags.split(), lowered.split()))
    if whole.tokens == lowered.split():
        kept = set(whole.kept)
        return whole.stems, {tag: [stem(low)] if low in kept else [] for tag, low in pairs.items()}
    return whole.stems, {tag: restem_token(low) for tag, low in pairs.items()}


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


def _claim_rows_raw(claim_files: Sequence[Mapping[str, Claim]], passages: Mapping[str, str]) -> Iterable[str]:
    for claims in claim_files:
        for claim in claims.values():
            for evidence_id in claim.evidences or [None]:
                yield claim.text + " " + passages.get(evidence_id, "")


def fit_corpus_raw(claim_files: Sequence[Mapping[str, Claim]], evidence: Mapping[str, str]) -> Iterable[str]:
    """The fit corpus before preprocessing: ``claim_text + ' ' + evidence_text`` per row.

    claim_files: the baseline, dev and train claims, in that order. A claim with no evidence
    ids gives one row with an empty evidence side; an id missing from the de-duplicated passages
    (or whose text duplicated an earlier passage's) gives an empty evidence side too. Passage
    rows follow, with an empty claim side.
    """
    passages = deduplicated(evidence)
    yield from _claim_rows_raw(claim_files, passages)
    for text in passages.values():
        yield " " + text


def fit_corpus(claim_files: Sequence[Mapping[str, Claim]], evidence: Mapping[str, str]) -> Iterable[str]:
    """The fit corpus as the vectorizer saw it: each row through the keep-stopwords
    preprocessing, stems joined with spaces."""
    return (_older_text(doc) for doc in fit_corpus_raw(claim_files, evidence))


def fit_corpus_claim_rows(claim_files: Sequence[Mapping[str, Claim]], evidence: Mapping[str, str]) -> Iterable[str]:
    """Just the claim rows of :func:`fit_corpus`. The passage rows equal each distinct passage's
    keep-stopwords stems (the leading space changes nothing: tests prove it)."""
    return (_older_text(doc) for doc in _claim_rows_raw(claim_files, deduplicated(evidence)))


def tagging_vectorizer(**overrides) -> NotebookTfidf:
    """The notebook's 20,000-feature uni- to tri-gram vectorizer, unfitted."""
    params = {"tokenizer": final_stems, **TAGGING_VECTORIZER, **overrides}
    return NotebookTfidf(**params)


def passage_documents(texts: Iterable[str]) -> Iterable[str]:
    """What the notebook passed to ``transform`` for each passage: its final stems joined."""
    return (preprocess(text).text() for text in texts)


@dataclass(frozen=True)
class PassageTags:
    """Tags of one passage.

    tags: the sorted set of alphabetic names among its top ten features (the notebook's tags).
    nopad: the same without zero-weight features (the variant without the padding quirk).
    top: (10,) the top ten feature indices, largest weight first; weights: their weights.
    """

    tags: list[str]
    nopad: list[str]
    top: list[int]
    weights: list[float]


def tag_rows(rows: sp.csr_matrix, feature_names: np.ndarray, k: int = TAGS_PER_PASSAGE) -> list[PassageTags]:
    """Tags of each row of a (n_passages, n_features) TF-IDF matrix: numpy 1.24's
    ``np.argsort(dense_row)[-k:][::-1]`` computed without the dense row, alphabetic names only.
    """
    rows = rows.tocsr()
    rows.sort_indices()
    top = top_k_rows(rows, k)
    out = []
    for r in range(rows.shape[0]):
        lo, hi = rows.indptr[r], rows.indptr[r + 1]
        weight_of = dict(zip(rows.indices[lo:hi].tolist(), rows.data[lo:hi].tolist()))
        indices = top[r].tolist()
        weights = [weight_of.get(i, 0.0) for i in indices]
        alphabetic = [(feature_names[i], w) for i, w in zip(indices, weights) if feature_names[i].isalpha()]
        out.append(
            PassageTags(
                sorted({name for name, _ in alphabetic}),
                sorted({name for name, w in alphabetic if w > 0.0}),
                indices,
                weights,
            )
        )
    return out


def canonical_order(n_passages: int, seed: int = PASSAGE_SHUFFLE_SEED) -> np.ndarray:
    """The notebook's passage order: ``DataFrame.sample(frac=1, random_state=42)`` of
    evidence.json order, which pandas draws as ``RandomState(42).permutation(n)``.

    Returns (n_passages,) int64 positions into evidence.json order.
    """
    return np.random.RandomState(seed).permutation(n_passages).astype(np.int64)
