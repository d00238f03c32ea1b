"""The retrieval's numba kernels: the exact TF-IDF weights (:func:`notebook_weights`), one claim
against every passage it shares a term or a tag with (:func:`claim_kernel`), and a few passages'
columns by binary search (:func:`point_kernel`); with the records they read and fill.

What the kernels reproduce bit for bit is told in :mod:`claimtrace.pipeline.retrieval`: the
normalisations sum squares in the column order scikit-learn stores (descending), and the product
adds the claim's terms in that order, one posting list at a time, as scipy's ``csr_matmat`` does.
"""

from __future__ import annotations

from collections import namedtuple
from typing import NamedTuple

import numba
import numpy as np
import scipy.sparse as sp

__all__ = [
    "BLOCK",
    "Postings",
    "QueryArrays",
    "Rules",
    "Columns",
    "Block",
    "Found",
    "weights_kernel",
    "notebook_weights",
    "claim_kernel",
    "point_kernel",
]


# --- exact TF-IDF weights ------------------------------------------------------------------------


@numba.njit(cache=True)
def weights_kernel(indptr, indices, counts, idf, out):
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

    Parameters
    ----------
    counts : sparse matrix of shape (n_docs, n_features)
        Raw term counts.
    idf : ndarray of shape (n_features,)
        The fitted vectorizer's ``idf_``.

    Returns
    -------
    weights : csr_matrix of shape (n_docs, n_features)
        Ascending indices, whose values equal scikit-learn's (which stores them in descending
        column order).
    """
    counts = sp.csr_matrix(counts, dtype=np.float64, copy=True)
    counts.sum_duplicates()
    counts.sort_indices()
    out = np.empty_like(counts.data)
    weights_kernel(
        counts.indptr.astype(np.int64),
        counts.indices.astype(np.int64),
        counts.data,
        np.asarray(idf, dtype=np.float64),
        out,
    )
    return sp.csr_matrix((out, counts.indices, counts.indptr), shape=counts.shape)


# --- what the kernels read and fill --------------------------------------------------------------


#: Passages per block of the per-claim kernel: its work arrays (8 + 1 bytes a passage) stay in
#: the CPU's L2 cache while the claim's posting lists stream through.
BLOCK = 1 << 15

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


def postings_of(t_ptr, t_doc, t_weight, g_ptr, g_doc, sizes) -> Postings:
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


class Columns(NamedTuple):
    """The notebook's columns of some passages, aligned: frame positions (int64), cosine,
    overlap_rate, combined_score (float64) and max_match, the shared raw tags (int64)."""

    position: np.ndarray
    cosine: np.ndarray
    overlap: np.ndarray
    score: np.ndarray
    shared: np.ndarray

    @classmethod
    def empty(cls, n: int) -> Columns:
        """Room for ``n`` rows (``np.empty``: nothing is touched until written)."""
        return cls(np.empty(n, np.int64), np.empty(n), np.empty(n), np.empty(n), np.empty(n, np.int64))

    def head(self, n: int) -> Columns:
        """The first ``n`` rows, as views."""
        return Columns(*(column[:n] for column in self))

    def take(self, rows: np.ndarray) -> Columns:
        """The rows at ``rows`` (indices), in that order."""
        return Columns(*(column[rows] for column in self))


class Block(NamedTuple):
    """One block's work arrays, all zero between blocks: each passage's cosine sum, its touch code
    (0 for an untouched passage, else 1 + 2 x its shared raw-tag count) and the touched slots."""

    cosine: np.ndarray
    touch: np.ndarray
    local: np.ndarray


class Found(NamedTuple):
    """What one claim's pass of :func:`claim_kernel` fills: every touched passage's position and
    score in ``touched`` (its cosine, overlap and shared count too when ``full``; otherwise those
    three columns are empty), the rows passing the query in ``passing``, both in frame order, and
    how many rows of each it wrote in ``counts`` = [touched, passing]."""

    touched: Columns
    passing: Columns
    full: bool
    counts: np.ndarray


# --- the per-claim kernel ------------------------------------------------------------------------


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
def _emit_block(query, index, rules, block, start, k, found):
    """Step 2 of a block starting at passage ``start``: for each of its ``k`` touched passages,
    in frame order, overlap and score (:func:`_overlap_and_score`), its row in ``found.touched``,
    and the query's mask (a passing row goes to ``found.passing`` too); the block's work arrays
    are reset and ``found.counts`` advanced."""
    touched, passing = found.touched, found.passing
    rows = found.counts[0]
    passed = found.counts[1]
    for t in range(k):
        i = block.local[t]
        d = start + i
        c = block.cosine[i]
        m = block.touch[i] >> 1
        o, score = _overlap_and_score(c, m, index.sizes[d], query.n_tags, rules.cosine_in_score, rules.no_tags_overlap)
        touched.position[rows] = d
        touched.score[rows] = score
        if found.full:
            touched.cosine[rows] = c
            touched.overlap[rows] = o
            touched.shared[rows] = m
        rows += 1
        if c > rules.cosine and o > rules.overlap and score > rules.score:
            passing.position[passed] = d
            passing.cosine[passed] = c
            passing.overlap[passed] = o
            passing.score[passed] = score
            passing.shared[passed] = m
            passed += 1
        block.cosine[i] = 0.0
        block.touch[i] = 0
    found.counts[0] = rows
    found.counts[1] = passed


@numba.njit(cache=True)
def claim_kernel(query, index, n_passages, rules, block, found):
    """One claim against every passage, touching only the passages that share a term or a tag.

    The passages are visited in blocks of ``len(block.cosine)`` (frame order); in each block the
    postings are added (:func:`_add_block_postings`), then each touched passage's row is written
    (:func:`_emit_block`). Posting lists are sorted by passage, so each list is read once, front
    to back, across the blocks.

    ``query`` is a :data:`QueryArrays`, ``index`` the :data:`Postings`, ``rules`` the
    :data:`Rules`, ``block`` a :class:`Block` (all zero), and ``found`` the :class:`Found` it
    fills (its counts zero).
    """
    size = block.cosine.shape[0]
    t_cursor = np.empty(query.terms.shape[0], np.int64)
    g_cursor = np.empty(query.tags.shape[0], np.int64)
    for a in range(query.terms.shape[0]):
        t_cursor[a] = index.t_ptr[query.terms[a]]
    for b in range(query.tags.shape[0]):
        g_cursor[b] = index.g_ptr[query.tags[b]]
    while True:
        first = _next_block_start(query, index, t_cursor, g_cursor, n_passages)
        if first == n_passages:
            break
        start = first - first % size
        _add_block_postings(query, index, t_cursor, g_cursor, start, start + size, block.cosine, block.touch)
        k = _touched_slots(block.touch, block.local)
        _emit_block(query, index, rules, block, start, k, found)


@numba.njit(cache=True)
def point_kernel(query, index, rules, out):
    """The columns of a few passages (the fallback's), those at ``out.position``, into ``out`` (a
    :class:`Columns`), found by binary search in the claim's posting lists, with the same
    additions in the same order as :func:`claim_kernel`."""
    for r in range(out.position.shape[0]):
        d = out.position[r]
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
        out.cosine[r] = c
        out.overlap[r] = o
        out.score[r] = score
        out.shared[r] = m
