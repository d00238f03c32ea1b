"""The notebook's top k over the rows of a sparse matrix (:func:`top_k_rows`): each non-negative
row through the sparse simulation (:func:`claimtrace.lib.npsort.zero_pivot.sparse_row_top_k`),
any other row through the dense pruned introsort; both exact."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from numba import njit

from claimtrace.lib.npsort.introsort import STACK_SIZE, depth_limit, sort_range
from claimtrace.lib.npsort.segments import empty_segments
from claimtrace.lib.npsort.zero_pivot import HANDOFF_DENSE_ROW, RowWork, sparse_row_top_k

__all__ = ["top_k_rows"]


@njit(cache=True)
def _sorted_row(data, indices, start, stop, cols, vals):
    """The row's (feature, weight) pairs sorted by feature into ``cols``/``vals`` (insertion
    sort: rows are short and usually sorted already). Returns whether all weights are >= 0
    (no negative, no NaN)."""
    m = stop - start
    nonneg = True
    for t in range(m):
        c = indices[start + t]
        v = data[start + t]
        if not (v >= 0.0):
            nonneg = False
        j = t
        while j > 0 and cols[j - 1] > c:
            cols[j] = cols[j - 1]
            vals[j] = vals[j - 1]
            j -= 1
        cols[j] = c
        vals[j] = v
    return nonneg


@njit(cache=True)
def _dense_row_top_k(data, indices, start, stop, n, keep_from, depth, work):
    """The exact baseline: densify the row, then the pruned introsort over all n slots."""
    keys, idx = work.keys, work.idx
    keys[:] = 0.0
    for t in range(start, stop):
        keys[indices[t]] = data[t]
    for i in range(n):
        idx[i] = i
    sort_range(keys, idx, 0, n - 1, depth, True, keep_from, work.stack)


@njit(cache=True, inline="always")
def _row_work(n, max_nnz):
    """The :class:`RowWork` of rows of n slots and at most ``max_nnz`` stored weights. Inlined,
    so that the kernel allocates the buffers itself: compiled apart, the dense path ran slower
    (the compiler no longer knows the buffers are fresh; docs/benchmarks.md, "Per-passage
    tagging")."""
    capacity = 4 * max_nnz + 1024
    return RowWork(
        empty_segments(capacity),
        empty_segments(capacity),
        np.empty(n, np.float64),
        np.empty(n, np.int64),
        np.empty((3, STACK_SIZE), np.int64),
    )


@njit(cache=True)
def _top_k_rows_kernel(data, indices, indptr, n, k, sparse):
    """Top k of every row of a canonical CSR matrix (n columns); the work space and numpy's depth
    budget for n slots are shared by all rows."""
    n_rows = indptr.shape[0] - 1
    kk = min(k, n)
    keep_from = n - kk
    depth = depth_limit(n)
    out = np.empty((n_rows, kk), np.int64)
    stats = np.zeros((n_rows, 3), np.int64)
    max_nnz = 0
    for r in range(n_rows):
        max_nnz = max(max_nnz, indptr[r + 1] - indptr[r])
    work = _row_work(n, max_nnz)
    cols = np.empty(max_nnz, np.int64)
    vals = np.empty(max_nnz, np.float64)
    for r in range(n_rows):
        start = indptr[r]
        stop = indptr[r + 1]
        nonneg = _sorted_row(data, indices, start, stop, cols, vals)
        if sparse and nonneg:
            m = stop - start
            levels, reason, size = sparse_row_top_k(cols[:m], vals[:m], n, keep_from, depth, work)
            stats[r, 0] = levels
            stats[r, 1] = reason
            stats[r, 2] = size
        else:
            _dense_row_top_k(data, indices, start, stop, n, keep_from, depth, work)
            stats[r, 1] = HANDOFF_DENSE_ROW
            stats[r, 2] = n
        for t in range(kk):
            out[r, t] = work.idx[n - 1 - t]
    return out, stats


def top_k_rows(X, k: int = 10, *, method: str = "sparse", return_stats: bool = False):
    """Per row of a sparse matrix, numpy 1.24's ``np.argsort(X[i].toarray().ravel())[-k:][::-1]``.

    This is the notebook's passage tagging (notebook.md section 3) without building dense rows:
    rows whose weights are all >= 0 (TF-IDF rows) go through the sparse simulation, other rows
    (a negative or NaN weight) through the dense pruned introsort; both are exact.

    Parameters
    ----------
    X : scipy.sparse matrix or array of shape (n_rows, n_features)
        Converted to CSR float64 (never modified); duplicate entries are summed first, as
        ``toarray`` would.
    k : int, default=10
        At least 1; k > n_features gives all n_features columns.
    method : {"sparse", "dense"}, default="sparse"
        "dense" forces the dense pruned run for every row (the exact baseline).
    return_stats : bool, default=False
        Also return per-row statistics of the sparse path.

    Returns
    -------
    top : ndarray of shape (n_rows, min(k, n_features)), dtype int64
        Feature indices, largest weight first, ties as numpy 1.24 ordered them.
    stats : ndarray of shape (n_rows, 3), dtype int64
        Only when ``return_stats``: zero-pivot partitions simulated, why the rest went to the
        dense kernel (``HANDOFF_*``), and how many slots it sorted.
    """
    k = int(k)
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    if method not in ("sparse", "dense"):
        raise ValueError(f"method must be 'sparse' or 'dense', got {method!r}")
    X = sp.csr_matrix(X, dtype=np.float64)
    if not X.has_canonical_format:
        X = X.copy()
        X.sum_duplicates()
    n_rows, n = X.shape
    out, stats = _top_k_rows_kernel(
        np.ascontiguousarray(X.data, dtype=np.float64),
        np.ascontiguousarray(X.indices, dtype=np.int64),
        np.ascontiguousarray(X.indptr, dtype=np.int64),
        n,
        k,
        method == "sparse",
    )
    return (out, stats) if return_stats else out
