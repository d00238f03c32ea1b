"""Stage 3, retrieval: the second TF-IDF model over passage tags, and the notebook's scoring,
filter, sorts and cut, exactly (notebook.md section 4).

What the notebook did (cells ``v0lvNHEgdhvq``, ``6a3krRq1PlTG`` and ``aH73ZZERIdNa`` of
COMP90042_Wed5PM_Group1.ipynb), and how this module reproduces it:

* ``processed_evidence_df = pd.read_csv(...).dropna(subset=['evidence_tags'])``: passages whose
  tag string is empty, or one of pandas' NA strings ("nan", "null", ...), are dropped (quirk
  "CSV NA tags", :data:`constants.CSV_NA_TAGS`). The rest keep the canonical passage order.
* ``TfidfVectorizer(tokenizer=preprocess_and_tokenize, max_df=0.5, min_df=3, max_features=1000)``
  fit on those tag strings (so tags are stemmed once more on the way in), re-implemented by
  :class:`claimtrace.pipeline.tfidf.NotebookTfidf` (max_features ties cut by numpy 1.24's introsort).
* ``find_top_evidence(claim_tags, ...)``, per claim and over every passage:

  - ``cosine_similarity(vectorizer.transform([claim_tags]), evidence_tfidf)``: both sides are
    l2-normalised a second time and multiplied with scipy's sparse product. The values are
    reproduced bit for bit (quirk "cosine re-normalised", :func:`notebook_weights`): the
    normalisations sum squares in the column order scikit-learn stores (descending), and the
    product adds the claim's terms in that order, one posting list at a time
    (:func:`_claim_kernel`), as scipy's ``csr_matmat`` does.
  - ``overlap = |C & P| / min(|C|, |P|)`` on ``set(tags.split())`` of both raw strings (not
    re-stemmed); ``shared = |C & P|``; counted through an inverted index of raw tags.
  - ``score = (cosine + overlap) + cosine`` (quirk "cosine added twice").
  - ``query("similaritie > 0.55 and overlap_rate > 0.5 and combined_score > 1.5")``.
  - if something passed: ``sort_values(["overlap_rate", "similaritie"], ascending=[False,
    False])`` (a stable lexsort), then ``sort_values("combined_score", ascending=False)``
    (pandas' ``nargsort``: numpy's quicksort on the *reversed* column, then reversed back), keep
    the rows whose ``max_match`` equals the maximum, ``head(6)`` (:func:`notebook_order`);
  - else: ``evidence_df.sort_values("combined_score", ascending=False).head(6)`` over *all*
    passages, ties (mostly zeros) ordered by numpy 1.24's introsort (:func:`fallback_six`).

Only the passages that share a term or a tag with the claim are ever touched: cosine and shared
counts come from posting lists streamed block by block (:func:`_claim_kernel`, numba), the
filter's survivors go through the exact pandas-order emulation, and the fallback's full-column
quicksort is numpy 1.24's introsort (:mod:`claimtrace.lib.npsort`) pruned to the top six, run on the
sparse score row or on the dense column, whichever is cheaper.

A claim with no tags made the notebook divide by zero; here it gets overlap 0 everywhere and
hence the fallback over all-zero scores (:data:`constants.NO_TAGS_OVERLAP`).

Variants, to measure each quirk (:data:`VARIANTS`): ``raw-claim-text`` (what the notebook's final
dev and test runs passed), ``cosine-once``, ``unpadded-tags``.
"""

from __future__ import annotations

import json
from collections import namedtuple
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numba
import numpy as np
import scipy.sparse as sp

from claimtrace import constants as C
from claimtrace.data.files import Claim
from claimtrace.errors import DataError
from claimtrace.evaluation.scorer import evidence_f
from claimtrace.lib import npsort
from claimtrace.lib.store import PackedStrings, StringIndex, load_npz, write_npz
from claimtrace.pipeline.preprocess import preprocess
from claimtrace.pipeline.tagging import final_stems, restem
from claimtrace.pipeline.tfidf import NotebookTfidf
from claimtrace.pipeline.tfidf import load as load_vectorizer
from claimtrace.pipeline.tfidf import save as save_vectorizer

__all__ = [
    "Variant",
    "VARIANTS",
    "Retriever",
    "Retrieval",
    "retrieve_all",
    "variant_f_table",
    "variant_f_row",
    "claim_input",
    "notebook_weights",
    "notebook_order",
    "fallback_six",
]


# --- variants -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Variant:
    """One way to run the retrieval. ``notebook`` is the pipeline as designed (notebook.md
    section 4); each other variant changes exactly one thing."""

    name: str
    description: str
    #: "tags": the claim's sorted stems (``preprocess(text).tags()``), as cell JU-plzIGIzlH did;
    #: "text": the raw claim text, as the notebook's final dev and test runs did (F = 0.011).
    claim_input: str = "tags"
    #: 2 = the quirk "cosine added twice"; 1 = score = cosine + overlap (the query's
    #: ``combined_score > 1.5`` is kept literally, so it becomes binding).
    cosine_in_score: int = C.COSINE_WEIGHT_IN_SCORE
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


def _variant(variant: str | Variant) -> Variant:
    if isinstance(variant, Variant):
        return variant
    try:
        return VARIANTS[variant]
    except KeyError:
        raise ValueError(f"unknown retrieval variant {variant!r}: expected one of {', '.join(VARIANTS)}") from None


def claim_input(claim_text: str, variant: str | Variant = "notebook") -> str:
    """The string handed to ``find_top_evidence`` for a claim: its tags, or its raw text."""
    v = _variant(variant)
    return preprocess(claim_text).tags() if v.claim_input == "tags" else claim_text


# --- exact TF-IDF weights ------------------------------------------------------------------------


@numba.njit(cache=True)
def _notebook_weights_kernel(indptr, indices, counts, idf, out):
    """Per row (indices ascending): counts * idf, l2-normalised twice, each sum of squares taken
    from the highest column down, as scikit-learn 1.2.2 stores a transformed row."""
    for row in range(indptr.shape[0] - 1):
        lo = indptr[row]
        hi = indptr[row + 1]
        total = 0.0
        for p in range(hi - 1, lo - 1, -1):
            value = counts[p] * idf[indices[p]]
            out[p] = value
            total += value * value
        for _ in range(2):  # transform's normalize, then cosine_similarity's
            if total == 0.0:
                break
            norm = np.sqrt(total)
            total = 0.0
            for p in range(hi - 1, lo - 1, -1):
                value = out[p] / norm
                out[p] = value
                total += value * value


def notebook_weights(counts: sp.csr_matrix, idf: np.ndarray) -> sp.csr_matrix:
    """What ``cosine_similarity`` multiplies: ``normalize(transform(docs))``, bit for bit.

    counts: (n_docs, n_features) raw term counts. Returns a CSR matrix with ascending indices
    whose values equal scikit-learn's (which stores them in descending column order).
    """
    counts = sp.csr_matrix(counts, dtype=np.float64, copy=True)
    counts.sum_duplicates()
    counts.sort_indices()
    out = np.empty_like(counts.data)
    _notebook_weights_kernel(
        counts.indptr.astype(np.int64),
        counts.indices.astype(np.int64),
        counts.data,
        np.asarray(idf, dtype=np.float64),
        out,
    )
    return sp.csr_matrix((out, counts.indices, counts.indptr), shape=counts.shape)


# --- the per-claim kernel ------------------------------------------------------------------------


#: Passages per block of the per-claim kernel: its work arrays (8 + 1 bytes a passage) stay in
#: the CPU's L2 cache while the claim's posting lists stream through.
BLOCK = 1 << 15


@numba.njit(cache=True, inline="always")
def _overlap_and_score(c, m, size, n_claim_tags, cosine_in_score, no_tags_overlap):
    """compute_overlap_rate and the combined score of one passage: overlap = shared /
    min(|claim tags|, |passage tags|), an IEEE division of two exact integers (as Python's
    int / int); score = (cosine + overlap) + cosine (or cosine + overlap)."""
    if n_claim_tags > 0:
        smaller = n_claim_tags if n_claim_tags < size else size
        o = np.float64(m) / np.float64(smaller)
    else:  # the notebook divided by zero here
        o = no_tags_overlap
    score = c + o
    if cosine_in_score == 2:
        score = score + c
    return o, score


#: The index the kernels read, as one structure: each term's posting list (``t_ptr`` into
#: ``t_doc`` passages and ``t_weight`` weights, sorted by passage), each raw tag's (``g_ptr``
#: into ``g_doc``), and every passage's raw-tag set size (``sizes``).
Postings = namedtuple("Postings", ["t_ptr", "t_doc", "t_weight", "g_ptr", "g_doc", "sizes"])

#: One claim as the kernels read it: its terms (scikit-learn's order) and their weights, the ids
#: of its raw tags that the index knows, and its number of distinct raw tags.
QueryArrays = namedtuple("QueryArrays", ["terms", "weights", "tags", "n_tags"])

#: The notebook's rules as the kernels apply them: (cosine counted in the score 1 or 2 times,
#: overlap when the claim has no tag, the cosine, overlap and score thresholds).
Rules = namedtuple("Rules", ["cosine_in_score", "no_tags_overlap", "cosine", "overlap", "score"])


@numba.njit(cache=True, inline="always")
def _next_block_start(query, index, t_cursor, g_cursor, n_passages):
    """The smallest passage any of the claim's posting lists still holds (``n_passages``: none)."""
    first = n_passages
    for a in range(query.terms.shape[0]):
        if t_cursor[a] < index.t_ptr[query.terms[a] + 1] and index.t_doc[t_cursor[a]] < first:
            first = index.t_doc[t_cursor[a]]
    for b in range(query.tags.shape[0]):
        if g_cursor[b] < index.g_ptr[query.tags[b] + 1] and index.g_doc[g_cursor[b]] < first:
            first = index.g_doc[g_cursor[b]]
    return first


@numba.njit(cache=True, inline="always")
def _add_block_postings(query, index, t_cursor, g_cursor, start, stop, cosine, touch):
    """Step 1 of a block: the claim's terms in the given order, one posting list at a time, each
    product added to the passage's running sum (scipy's ``csr_matmat`` order); then the shared
    raw-tag counts (``touch`` = 0 for an untouched passage, else 1 + 2 x its shared count)."""
    for a in range(query.terms.shape[0]):
        x = query.weights[a]
        end = index.t_ptr[query.terms[a] + 1]
        p = t_cursor[a]
        while p < end:
            d = index.t_doc[p]
            if d >= stop:
                break
            i = d - start
            touch[i] |= 1
            cosine[i] += x * index.t_weight[p]
            p += 1
        t_cursor[a] = p
    for b in range(query.tags.shape[0]):
        end = index.g_ptr[query.tags[b] + 1]
        p = g_cursor[b]
        while p < end:
            d = index.g_doc[p]
            if d >= stop:
                break
            i = d - start
            touch[i] = (touch[i] | 1) + 2
            p += 1
        g_cursor[b] = p


@numba.njit(cache=True, inline="always")
def _touched_slots(touch, local):
    """The touched slots of a block, in order, by a branch-free compaction (touched slots are too
    dense and too random for a branch to be predicted); returns how many."""
    k = 0
    for i in range(touch.shape[0]):
        local[k] = i
        k += touch[i] != 0
    return k


@numba.njit(cache=True, inline="always")
def _emit_block(query, index, rules, full, start, k, scratch, out, cand, rows, passed):
    """Step 2 of a block: for each touched passage, in frame order, overlap and score
    (:func:`_overlap_and_score`), its row, and the query's mask; the work arrays are reset.
    Returns the new (rows, passed)."""
    cosine, touch, local = scratch
    for t in range(k):
        i = local[t]
        d = start + i
        c = cosine[i]
        m = touch[i] >> 1
        o, score = _overlap_and_score(c, m, index.sizes[d], query.n_tags, rules.cosine_in_score, rules.no_tags_overlap)
        out[0][rows] = d
        out[1][rows] = score
        if full:
            out[2][rows] = c
            out[3][rows] = o
            out[4][rows] = m
        rows += 1
        if c > rules.cosine and o > rules.overlap and score > rules.score:
            cand[0][passed] = d
            cand[1][passed] = c
            cand[2][passed] = o
            cand[3][passed] = score
            cand[4][passed] = m
            passed += 1
        cosine[i] = 0.0
        touch[i] = 0
    return rows, passed


@numba.njit(cache=True)
def _claim_kernel(query, index, n_passages, rules, full, scratch, out, cand):
    """One claim against every passage, touching only the passages that share a term or a tag.

    The passages are visited in blocks of ``len(scratch[0])`` (frame order); in each block the
    postings are added (:func:`_add_block_postings`), then each touched passage's row is written
    (:func:`_emit_block`). Posting lists are sorted by passage, so each list is read once, front
    to back, across the blocks.

    ``query`` is a :data:`QueryArrays`, ``index`` the :data:`Postings`, ``rules`` the
    :data:`Rules`; ``scratch`` = (cosine, touch, local), one block's work arrays, all zero.
    Every touched passage's position and score go to ``out[0]``/``out[1]`` (and, when ``full``,
    its cosine, overlap and shared count to ``out[2:]``); the rows passing the filter go to
    ``cand`` = (position, cosine, overlap, score, shared). Returns (rows, passed), both in frame
    order.
    """
    block = scratch[0].shape[0]
    t_cursor = np.empty(query.terms.shape[0], np.int64)
    g_cursor = np.empty(query.tags.shape[0], np.int64)
    for a in range(query.terms.shape[0]):
        t_cursor[a] = index.t_ptr[query.terms[a]]
    for b in range(query.tags.shape[0]):
        g_cursor[b] = index.g_ptr[query.tags[b]]
    rows = 0
    passed = 0
    while True:
        first = _next_block_start(query, index, t_cursor, g_cursor, n_passages)
        if first == n_passages:
            break
        start = first - first % block
        _add_block_postings(query, index, t_cursor, g_cursor, start, start + block, scratch[0], scratch[1])
        k = _touched_slots(scratch[1], scratch[2])
        rows, passed = _emit_block(query, index, rules, full, start, k, scratch, out, cand, rows, passed)
    return rows, passed


@numba.njit(cache=True)
def _point_kernel(positions, query, index, rules, out):
    """The columns (cosine, overlap, score, shared) of a few passages (the fallback's), found by
    binary search in the claim's posting lists, with the same additions in the same order as
    :func:`_claim_kernel`."""
    for r in range(positions.shape[0]):
        d = positions[r]
        c = 0.0
        for a in range(query.terms.shape[0]):
            lo = index.t_ptr[query.terms[a]]
            hi = index.t_ptr[query.terms[a] + 1]
            p = lo + np.searchsorted(index.t_doc[lo:hi], d)
            if p < hi and index.t_doc[p] == d:
                c += query.weights[a] * index.t_weight[p]
        m = 0
        for b in range(query.tags.shape[0]):
            lo = index.g_ptr[query.tags[b]]
            hi = index.g_ptr[query.tags[b] + 1]
            p = lo + np.searchsorted(index.g_doc[lo:hi], d)
            if p < hi and index.g_doc[p] == d:
                m += 1
        o, score = _overlap_and_score(c, m, index.sizes[d], query.n_tags, rules.cosine_in_score, rules.no_tags_overlap)
        out[0][r] = c
        out[1][r] = o
        out[2][r] = score
        out[3][r] = m


# --- the notebook's sorts -------------------------------------------------------------------------


def _pandas_descending(values: np.ndarray) -> np.ndarray:
    """``nargsort(values, kind='quicksort', ascending=False)`` of pandas 2.0.3 (no NaNs):
    numpy's quicksort of the reversed column, mapped back and reversed."""
    m = len(values)
    reversed_positions = np.arange(m - 1, -1, -1, dtype=np.int64)
    return reversed_positions[npsort.argsort(values[::-1])][::-1]


def notebook_order(cosine: np.ndarray, overlap: np.ndarray, score: np.ndarray, shared: np.ndarray) -> np.ndarray:
    """Rows (in frame order) that survive the filtered branch's two sorts and the ``max_match``
    cut, in the order ``head(6)`` reads them. The arrays are the passing rows in frame order.

    1. ``sort_values(by=["overlap_rate", "similaritie"], ascending=[False, False])``: pandas'
       ``lexsort_indexer``, a stable counting sort of the keys' category codes; equal values
       keep frame order, which ``np.lexsort`` (stable) of the negated keys reproduces.
    2. ``sort_values(by="combined_score", ascending=False)``: :func:`_pandas_descending`.
    3. ``relevant_evidence[relevant_evidence.max_match == max(...)]``: order kept.
    """
    if len(score) == 0:
        return np.empty(0, np.int64)
    by_overlap_cosine = np.lexsort((-cosine, -overlap)).astype(np.int64)
    by_score = by_overlap_cosine[_pandas_descending(score[by_overlap_cosine])]
    most = shared[by_score].max()
    return by_score[shared[by_score] == most]


#: Above this share of non-zero scores the fallback runs numpy's introsort on the dense column
#: (both ways are exact; the sparse simulation is faster on sparse rows).
FALLBACK_DENSE_SHARE = 0.05


def fallback_six(positions: np.ndarray, score: np.ndarray, n_passages: int, k: int = C.MAX_EVIDENCES) -> np.ndarray:
    """``evidence_df.sort_values(by="combined_score", ascending=False).head(k)`` over all
    ``n_passages``, where only ``positions`` (distinct, ascending) have non-zero ``score``.

    pandas sorts the reversed column with numpy's quicksort and reverses the result, so its first
    k rows are the last k of ``argsort(column[::-1])``, read backwards: numpy 1.24's introsort,
    pruned to the last k slots (:func:`npsort.top_k`), or simulated on the sparse reversed row
    (:func:`npsort.top_k_rows`) when few scores are non-zero.
    """
    positions = np.asarray(positions, np.int64)
    columns = (n_passages - 1 - positions)[::-1]  # ascending
    values = np.asarray(score, np.float64)[::-1]
    if len(positions) > FALLBACK_DENSE_SHARE * n_passages:
        reversed_column = np.zeros(n_passages)
        reversed_column[columns] = values
        top = npsort.top_k(reversed_column, k)
    else:
        reversed_row = sp.csr_matrix((values, columns, np.array([0, len(columns)], np.int64)), shape=(1, n_passages))
        top = npsort.top_k_rows(reversed_row, k)[0]
    return (n_passages - 1 - top).astype(np.int64)


# --- the retriever --------------------------------------------------------------------------------


def _tag_string(tags: str | Sequence[str]) -> str:
    return tags if isinstance(tags, str) else " ".join(tags)


class Scores(NamedTuple):
    """One claim's non-zero rows (:meth:`Retriever.scores`), positions ascending (frame order);
    ``passing`` the query's mask."""

    positions: np.ndarray
    cosine: np.ndarray
    overlap: np.ndarray
    score: np.ndarray
    shared: np.ndarray
    passing: np.ndarray


@dataclass
class Retrieval:
    """One claim's retrieval. Positions index :attr:`Retriever.ids`."""

    claim: str
    evidences: list[int]
    fallback: bool
    passed: int
    kept: list[int]
    cosine: np.ndarray
    overlap: np.ndarray
    score: np.ndarray
    shared: np.ndarray
    touched: int = 0


@dataclass
class _Scratch:
    """Work arrays of one claim's kernel pass: a block's cosine sums, touch counts and touched
    slots (all zero between blocks), and room for the claim's rows (one slot per passage).
    Made per call (``np.empty`` touches no memory until written), so that claims retrieved on
    several threads at once share nothing; a caller retrieving many claims in a row passes one
    to :meth:`Retriever.retrieve` to reuse it."""

    cosine: np.ndarray
    touch: np.ndarray
    local: np.ndarray
    position: np.ndarray
    score: np.ndarray

    @classmethod
    def of_size(cls, n: int, max_tags: int) -> _Scratch:
        block = min(BLOCK, n)
        touch = np.zeros(block, np.uint8 if max_tags < 127 else np.int64)
        return cls(
            np.zeros(block, np.float64),
            touch,
            np.empty(block, np.int64),
            np.empty(n, np.int64),
            np.empty(n, np.float64),
        )


@dataclass(frozen=True)
class Query:
    """One claim string as the retrieval model reads it, computed once and handed to every use
    (:meth:`Retriever.query`).

    ``text`` is the string retrieved with (the claim's tags, or raw text); ``restemmed`` its
    tokens stemmed again (the quirk "stems of stems": the tags are stems already, and the
    retrieval vectorizer preprocesses them once more); ``terms`` and ``weights`` the vector of
    those (scikit-learn's column order, descending; twice l2-normalised); ``tag_ids`` the raw tags
    the index knows (sorted); ``n_tags`` the number of distinct raw tags."""

    text: str
    restemmed: list[str]
    terms: np.ndarray
    weights: np.ndarray
    tag_ids: np.ndarray
    n_tags: int

    def arrays(self) -> QueryArrays:
        return QueryArrays(self.terms, self.weights, self.tag_ids, self.n_tags)


@dataclass
class _Rows:
    """One claim's non-zero rows: every touched passage's position and score (views into the
    scratch, valid until the next claim), and the rows that pass the filter; with ``full``, the
    other columns of every touched passage."""

    position: np.ndarray
    score: np.ndarray
    passing: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]
    full: tuple[np.ndarray, np.ndarray, np.ndarray] | None


def _raw_tag_index(tags: Sequence[str]) -> tuple[dict[str, int], np.ndarray, sp.csc_matrix]:
    """Raw tags, as sets, for the shared counts: tag -> id, each passage's set size, and the
    passage x tag matrix (CSC: each tag's passages, sorted)."""
    tag_ids: dict[str, int] = {}
    number = tag_ids.setdefault
    sizes_list: list[int] = []
    flat: list[int] = []
    for s in tags:
        # in order of first appearance, not set order: a set of strings iterates in an order
        # that changes with every process's hash seed, and the saved index must not
        unique = dict.fromkeys(s.split())
        sizes_list.append(len(unique))
        flat.extend([number(tag, len(tag_ids)) for tag in unique])
    sizes = np.array(sizes_list, np.int64)
    rows = np.repeat(np.arange(len(tags), dtype=np.int64), sizes)
    tag_matrix = sp.csr_matrix(
        (np.ones(len(flat), np.int8), (rows, np.asarray(flat, np.int64))), shape=(len(tags), max(len(tag_ids), 1))
    ).tocsc()
    tag_matrix.sort_indices()
    return tag_ids, sizes, tag_matrix


def _postings(t_ptr, t_doc, t_weight, g_ptr, g_doc, sizes) -> Postings:
    """The :data:`Postings` in the dtypes the kernels are compiled for (tag set sizes as bytes
    when they fit)."""
    sizes = np.asarray(sizes)
    return Postings(
        np.asarray(t_ptr, np.int64),
        np.asarray(t_doc, np.int64),
        np.asarray(t_weight, np.float64),
        np.asarray(g_ptr, np.int64),
        np.asarray(g_doc, np.int64),
        sizes.astype(np.uint8) if sizes.max() < 256 else sizes.astype(np.int64),
    )


class Retriever:
    """The retrieval model over one set of passage tags, as an estimator: fit it
    (:meth:`fit`) or load a fitted one (:meth:`load`), then query it one claim at a time
    (:meth:`query`, :meth:`retrieve`, :meth:`scores`, :meth:`point_columns`).

    What it holds: the fitted retrieval vectorizer; the retrievable passages' ids and tag
    strings (frame order); :attr:`excluded`, how many passages had no usable tag; and the
    :data:`Postings` the kernels read (terms' and raw tags' posting lists, tag set sizes).
    """

    def __init__(
        self,
        vectorizer: NotebookTfidf,
        ids: Sequence[str],
        tags: Sequence[str],
        excluded: int,
        tag_ids: dict[str, int],
        index: Postings,
        positions: StringIndex | None = None,
    ):
        self.vectorizer = vectorizer
        self.vocabulary = vectorizer.vocabulary_
        self.idf = vectorizer.idf_
        self.ids = ids
        self.tags = tags
        self.excluded = excluded
        self._tag_ids = tag_ids
        self._index = index
        self._positions = positions

    @classmethod
    def fit(
        cls,
        passage_ids: Sequence[str],
        passage_tags: Sequence[str | Sequence[str]],
        *,
        passage_tokenizer=None,
        vectorizer_params: Mapping | None = None,
    ) -> Retriever:
        """Fit the model on passage tags: ``passage_ids``, ``passage_tags`` aligned, in the
        canonical passage order; a tag entry is a space-separated string or a list of tags.
        Passages whose tag string is empty or a pandas NA string are left out."""
        ids = list(passage_ids)
        strings = [_tag_string(t) for t in passage_tags]
        if len(ids) != len(strings):
            raise ValueError(f"{len(ids)} passage ids but {len(strings)} tag entries")
        keep = [i for i, s in enumerate(strings) if s not in C.CSV_NA_TAGS and s.split()]
        kept_ids, kept_tags = [ids[i] for i in keep], [strings[i] for i in keep]
        if not kept_ids:
            raise ValueError("no passage has tags: nothing to retrieve from")
        # Tag strings are preprocessing output (alphabetic tokens), which restem tokenizes as
        # final_stems does, token by token (tests/test_tagging.py proves it); any other text
        # goes through final_stems whole. Claims always use final_stems.
        if passage_tokenizer is None:
            # every token alphabetic: each string without its whitespace is (no string is blank)
            clean = all("".join(s.lower().split()).isalpha() for s in kept_tags)
            passage_tokenizer = restem if clean else final_stems
        params = {**C.RETRIEVAL_VECTORIZER, **(vectorizer_params or {})}
        # A corpus too small for the notebook's settings (max_df=0.5 of the tagged passages below
        # min_df=3: fewer than six; or no term between them) made scikit-learn raise; here the
        # vocabulary is empty instead (``cannot_fit``): no claim term has a weight, so every
        # claim scores 0 against every passage and takes the fallback, as a claim without tags.
        vectorizer = NotebookTfidf(tokenizer=passage_tokenizer, empty_when_unfittable=True, **params)
        counts = vectorizer.fit_counts(kept_tags)  # fit and count, tokenising once
        weights = notebook_weights(counts, vectorizer.idf_).tocsc()
        del counts
        weights.sort_indices()
        tag_ids, sizes, tag_matrix = _raw_tag_index(kept_tags)
        index = _postings(weights.indptr, weights.indices, weights.data, tag_matrix.indptr, tag_matrix.indices, sizes)
        return cls(vectorizer, kept_ids, kept_tags, len(ids) - len(kept_ids), tag_ids, index)

    # -- persistence (the build saves the fitted model; readers load it instead of refitting) ---

    def save(self, vectorizer_path, index_path) -> None:
        """Write the fitted model: the vectorizer (:func:`claimtrace.pipeline.tfidf.save`) and the index
        (passage ids and tag strings, posting lists, tag ids), each atomically."""
        save_vectorizer(self.vectorizer, vectorizer_path)
        tokenizer = "restem" if self.vectorizer.tokenizer is restem else "final_stems"
        tags_by_id = sorted(self._tag_ids, key=self._tag_ids.__getitem__)
        # ids and tag strings packed (a reader maps two arrays instead of parsing 1.2M strings)
        ids_buffer, ids_offsets = PackedStrings.pack(self.ids)
        tags_buffer, tags_offsets = PackedStrings.pack(self.tags)
        index = StringIndex.of(self.ids)
        write_npz(  # aligned: the reader maps the posting lists instead of reading them
            index_path,
            t_ptr=self._index.t_ptr,
            t_doc=self._index.t_doc,
            t_weight=self._index.t_weight,
            sizes=self._index.sizes,
            g_ptr=self._index.g_ptr,
            g_doc=self._index.g_doc,
            ids_buffer=ids_buffer,
            ids_offsets=ids_offsets,
            ids_sorted=index.sorted_keys,
            ids_rank=index.rank,
            tags_buffer=tags_buffer,
            tags_offsets=tags_offsets,
            tag_ids=np.array(json.dumps(tags_by_id, ensure_ascii=False)),
            meta=np.array(json.dumps({"excluded": self.excluded, "tokenizer": tokenizer})),
        )

    @classmethod
    def load(cls, vectorizer_path, index_path) -> Retriever:
        """A model written by :meth:`save`, ready to query (nothing is refitted)."""
        with load_npz(index_path) as stored:  # the large arrays memory-mapped, not read
            if "ids_buffer" not in stored.files:
                raise DataError(f"{index_path}: written by an older claimtrace: run `claimtrace build` to rewrite it")
            meta = json.loads(str(stored["meta"]))
            tokenizer = restem if meta["tokenizer"] == "restem" else final_stems
            index = _postings(*(stored[name] for name in ("t_ptr", "t_doc", "t_weight", "g_ptr", "g_doc", "sizes")))
            return cls(
                load_vectorizer(vectorizer_path, tokenizer),
                PackedStrings(stored["ids_buffer"], stored["ids_offsets"]),
                PackedStrings(stored["tags_buffer"], stored["tags_offsets"]),
                int(meta["excluded"]),
                {tag: i for i, tag in enumerate(json.loads(str(stored["tag_ids"])))},
                index,
                StringIndex(stored["ids_sorted"], stored["ids_rank"]),
            )

    def position(self, passage_id: str) -> int | None:
        """Frame position of a retrievable passage (None for one without tags)."""
        if self._positions is None:
            self._positions = StringIndex.of(self.ids)
        return self._positions.position(passage_id)

    def __len__(self) -> int:
        return len(self.ids)

    # -- one claim -----------------------------------------------------------------------------

    def query(self, claim: str | Query, restemmed: list[str] | None = None) -> Query:
        """A claim string as this model reads it (:class:`Query`), once. ``restemmed``: its tokens
        stemmed again, when the caller has them (:func:`claimtrace.pipeline.tagging.restem_tags`)."""
        if isinstance(claim, Query):
            return claim
        if not isinstance(claim, str):
            raise TypeError(f"a claim is a string of tags (or text), got {type(claim).__name__}")
        if restemmed is None:
            # The quirk "stems of stems": the tag string is preprocessed again, whole, by the
            # retrieval vectorizer's tokenizer (the claim's tags are stems already).
            restemmed = final_stems(claim.lower())
        terms, weights = self._vector(restemmed)
        claim_tags = set(claim.split())
        tag_ids = np.array(sorted(self._tag_ids[t] for t in claim_tags if t in self._tag_ids), dtype=np.int64)
        return Query(claim, restemmed, terms, weights, tag_ids, len(claim_tags))

    def _vector(self, tokens: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """The terms in the order scikit-learn stores them (descending) and their twice-normalised
        weights: ``normalize(vectorizer.transform([claim]))`` of a claim of these tokens."""
        counts: dict[int, int] = {}
        for token in tokens:
            column = self.vocabulary.get(token)
            if column is not None:
                counts[column] = counts.get(column, 0) + 1
        columns = np.array(sorted(counts), dtype=np.int64)
        values = np.array([counts[c] for c in columns.tolist()], np.float64)
        out = np.empty_like(values)
        _notebook_weights_kernel(np.array([0, len(columns)], np.int64), columns, values, self.idf, out)
        return columns[::-1].copy(), out[::-1].copy()

    def claim_vector(self, claim: str | Query) -> tuple[np.ndarray, np.ndarray]:
        """The claim's terms in the order scikit-learn stores them (descending) and their
        twice-normalised weights: ``normalize(vectorizer.transform([claim]))``."""
        query = self.query(claim)
        return query.terms, query.weights

    def scratch(self) -> _Scratch:
        """Work arrays for one claim at a time (see :class:`_Scratch`)."""
        return _Scratch.of_size(len(self.ids), int(self._index.sizes.max()))

    def _rules(self, cosine_in_score: int) -> Rules:
        if cosine_in_score not in (1, 2):
            raise ValueError(f"cosine_in_score must be 1 or 2, got {cosine_in_score}")
        return Rules(cosine_in_score, C.NO_TAGS_OVERLAP, C.COSINE_THRESHOLD, C.OVERLAP_THRESHOLD, C.SCORE_THRESHOLD)

    def _rows(self, query: Query, cosine_in_score: int, full: bool = False, scratch: _Scratch | None = None) -> _Rows:
        rules = self._rules(cosine_in_score)
        s = scratch if scratch is not None else self.scratch()
        n = len(self.ids)
        m = n if full else 0
        out = (s.position, s.score, np.empty(m, np.float64), np.empty(m, np.float64), np.empty(m, np.int64))
        postings = sum(int(self._index.t_ptr[t + 1] - self._index.t_ptr[t]) for t in query.terms.tolist())
        postings += sum(int(self._index.g_ptr[t + 1] - self._index.g_ptr[t]) for t in query.tag_ids.tolist())
        c = min(postings, n)
        candidates = (
            np.empty(c, np.int64),
            np.empty(c, np.float64),
            np.empty(c, np.float64),
            np.empty(c, np.float64),
            np.empty(c, np.int64),
        )
        # A claim without tags: the notebook's ZeroDivisionError, here overlap NO_TAGS_OVERLAP.
        rows, passed = _claim_kernel(
            query.arrays(), self._index, n, rules, full, (s.cosine, s.touch, s.local), out, candidates
        )
        return _Rows(
            s.position[:rows],
            s.score[:rows],
            tuple(a[:passed] for a in candidates),
            tuple(a[:rows] for a in out[2:]) if full else None,
        )

    @staticmethod
    def _columns(rows: _Rows) -> Scores:
        cosine, overlap, shared = rows.full
        passing = np.isin(rows.position, rows.passing[0])
        return Scores(rows.position.copy(), cosine, overlap, rows.score.copy(), shared, passing)

    def scores(self, claim: str | Query, cosine_in_score: int = C.COSINE_WEIGHT_IN_SCORE) -> Scores:
        """The non-zero rows of the notebook's columns for one claim string (:class:`Scores`):
        positions ascending (frame order); every other passage has cosine 0, overlap 0, score 0,
        shared 0 (and does not pass)."""
        return self._columns(self._rows(self.query(claim), cosine_in_score, full=True))

    def point_columns(self, claim: str | Query, positions, cosine_in_score: int = C.COSINE_WEIGHT_IN_SCORE):
        """(cosine, overlap, score, shared) of the passages at ``positions`` for one claim."""
        query = self.query(claim)
        positions = np.asarray(positions, np.int64)
        out = (
            np.empty(len(positions)),
            np.empty(len(positions)),
            np.empty(len(positions)),
            np.empty(len(positions), np.int64),
        )
        _point_kernel(positions, query.arrays(), self._index, self._rules(cosine_in_score), out)
        return out

    def retrieve(
        self,
        claim: str | Query,
        cosine_in_score: int = C.COSINE_WEIGHT_IN_SCORE,
        k: int = C.MAX_EVIDENCES,
        scratch: _Scratch | None = None,
    ) -> Retrieval:
        """``find_top_evidence(claim, ...)`` for one claim string (its tags, or raw text)."""
        query = self.query(claim)
        return self._retrieval(query, self._rows(query, cosine_in_score, scratch=scratch), cosine_in_score, k)

    def retrieve_with_scores(
        self, claim: str | Query, cosine_in_score: int = C.COSINE_WEIGHT_IN_SCORE, k: int = C.MAX_EVIDENCES
    ) -> tuple[Retrieval, Scores]:
        """:meth:`retrieve` and :meth:`scores` of one claim from one kernel pass."""
        query = self.query(claim)
        rows = self._rows(query, cosine_in_score, full=True)
        return self._retrieval(query, rows, cosine_in_score, k), self._columns(rows)

    def _retrieval(self, query: Query, rows: _Rows, cosine_in_score: int, k: int) -> Retrieval:
        position, cosine, overlap, score, shared = rows.passing
        passed = len(position)
        if passed:
            order = notebook_order(cosine, overlap, score, shared)
            kept = position[order]
            columns = (cosine[order], overlap[order], score[order], shared[order])
            evidences = kept[:k]
            fallback = False
        else:
            evidences = fallback_six(rows.position, rows.score, len(self.ids), k)
            kept = evidences
            columns = self.point_columns(query, kept, cosine_in_score)
            fallback = True
        return Retrieval(
            claim=query.text,
            evidences=[int(p) for p in evidences],
            fallback=fallback,
            passed=passed,
            kept=[int(p) for p in kept],
            cosine=columns[0],
            overlap=columns[1],
            score=columns[2],
            shared=columns[3],
            touched=len(rows.position),
        )

    def as_record(self, claim_id: str, result: Retrieval, gold: Iterable[str] = ()) -> dict:
        """The JSON-serialisable record of :func:`retrieve_all`."""
        gold_set = set(gold)
        kept = []
        for i, p in enumerate(result.kept):
            kept.append(
                {
                    "id": self.ids[p],
                    "cosine": float(result.cosine[i]),
                    "overlap": float(result.overlap[i]),
                    "score": float(result.score[i]),
                    "shared": int(result.shared[i]),
                    "gold": self.ids[p] in gold_set,
                }
            )
        return {
            "claim_id": claim_id,
            "tags": result.claim,
            "evidences": [self.ids[p] for p in result.evidences],
            "fallback": result.fallback,
            "passed": result.passed,
            "kept": kept,
        }


# --- whole splits ---------------------------------------------------------------------------------


def retrieve_all(retriever: Retriever, claims: Mapping[str, Claim], variant: str | Variant = "notebook") -> list[dict]:
    """Retrieve evidence for every claim, in the claims' order, with a fitted retriever.

    retriever: fit on the passage tags the variant reads (the padded tags, or for
    ``unpadded-tags`` the tagging stage's ``nopad``; :func:`variant_f_table` picks).
    variant: a name of :data:`VARIANTS` or a :class:`Variant`.

    Returns per claim ``{"claim_id", "tags", "evidences", "fallback", "passed", "kept"}``, where
    ``tags`` is the string the claim was retrieved with, ``evidences`` at most six passage ids in
    order, ``passed`` how many passages passed the filter, and ``kept`` the rows that survived the
    filter and the shared-tags cut before ``head(6)`` (or the fallback six), each
    ``{"id", "cosine", "overlap", "score", "shared", "gold"}``.
    """
    v = _variant(variant)
    out = []
    scratch = retriever.scratch()  # one claim after another: the work arrays are reused
    for claim_id, claim in claims.items():
        result = retriever.retrieve(claim_input(claim.text, v), cosine_in_score=v.cosine_in_score, scratch=scratch)
        out.append(retriever.as_record(claim_id, result, claim.evidences))
    return out


def variant_f_table(
    retrievers: Mapping[str, Retriever],
    claims: Mapping[str, Claim],
    variants: Iterable[str] | None = None,
    records: Mapping[str, Sequence[dict]] | None = None,
) -> list[dict]:
    """Evidence F of each variant on labelled claims (dev): one row per variant
    (:func:`variant_f_row`).

    retrievers: fitted retrievers by the passage tags they were fit on, ``"padded"`` (the
    notebook's tags) and ``"unpadded"`` (the tagging stage's ``nopad``); a variant whose tags
    have no retriever is left out.
    records: each variant's :func:`retrieve_all` records of these claims where already made
    (the build keeps them): those variants are scored without retrieving again.
    """
    names = list(variants) if variants is not None else list(VARIANTS)
    rows = []
    for name in names:
        v = _variant(name)
        if v.passage_tags not in retrievers:
            continue
        if records is not None and v.name in records:
            records_of_v = records[v.name]
        else:
            records_of_v = retrieve_all(retrievers[v.passage_tags], claims, v)
        rows.append(variant_f_row(v, records_of_v, claims, len(retrievers[v.passage_tags])))
    return rows


def variant_f_row(variant: str | Variant, records: Sequence[dict], claims: Mapping[str, Claim], passages: int) -> dict:
    """One variant's row of the F table from its :func:`retrieve_all` records of labelled
    ``claims``: ``{"variant", "description", "F", "fallback_share", "claims", "passages"}``,
    ``passages`` being how many its retriever retrieves from."""
    v = _variant(variant)
    f_values = [evidence_f(r["evidences"], claims[r["claim_id"]].evidences) for r in records]
    return {
        "variant": v.name,
        "description": v.description,
        "F": float(np.mean(f_values)) if f_values else 0.0,
        "fallback_share": float(np.mean([r["fallback"] for r in records])) if records else 0.0,
        "claims": len(records),
        "passages": passages,
    }
