"""numpy 1.24's generic introsort argsort, re-implemented exactly (and a fast top-k for TF-IDF rows).

The notebook tagged every passage with ``np.argsort(row)[-10:][::-1]`` on a dense row of 20,000
TF-IDF weights (notebook.md section 3). numpy <= 1.24 ran ``argsort(kind='quicksort')`` for
float64 and int64 through its generic, type-templated introsort (``aquicksort_`` in
``numpy/core/src/npysort/quicksort.cpp``); later versions dispatch, on CPUs with AVX-512 (1.25+)
or AVX2 (2.x), to SIMD sorts that order equal keys differently. Most of a tagging row is zeros,
so *which* zero-weight features fill the top ten depends on exactly how that introsort moves
ties. This package reproduces it move for move (:mod:`~claimtrace.lib.npsort.introsort` lists
the moves).

numpy permutes an index array and reads keys through it (``v[tosort[i]]``); the kernels here carry
each key next to its index instead (``keys[i]``, ``idx[i]`` move together). Every comparison sees
the same two values in the same order, so the moves, and the resulting permutation, are identical.

Public API: :func:`argsort`, :func:`top_k` (the same moves, pruned to what can reach the top k)
and :func:`top_k_rows` (the notebook's top-k over the rows of a non-negative CSR matrix, with a
closed-form simulation of the partitions of long runs of zeros).

The modules: ``introsort`` (the sort itself, :func:`argsort` and :func:`top_k`), ``segments`` (a
range of a sparse row as runs of features), ``zero_pivot`` (the partitions around a zero pivot
simulated on those runs), ``rows`` (:func:`top_k_rows`).
"""

from claimtrace.lib.npsort.introsort import argsort, depth_limit, top_k
from claimtrace.lib.npsort.rows import top_k_rows
from claimtrace.lib.npsort.zero_pivot import (
    HANDOFF_BOTH_SIDES,
    HANDOFF_CAPACITY,
    HANDOFF_DENSE_ROW,
    HANDOFF_DEPTH,
    HANDOFF_POSITIVE_PIVOT,
    HANDOFF_SMALL,
)

__all__ = [
    "argsort",
    "top_k",
    "top_k_rows",
    "depth_limit",
    "HANDOFF_SMALL",
    "HANDOFF_POSITIVE_PIVOT",
    "HANDOFF_BOTH_SIDES",
    "HANDOFF_DEPTH",
    "HANDOFF_CAPACITY",
    "HANDOFF_DENSE_ROW",
]
