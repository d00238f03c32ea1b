"""numpy 1.24's generic introsort on a (keys, idx) pair of arrays, move for move
(:func:`sort_range`), and the two public sorts made of it: :func:`argsort` and :func:`top_k`.

* partitions of more than 16 elements (``hi - lo > 15``, numpy's ``SMALL_QUICKSORT``) are split
  around a median-of-3 pivot (``_median_of_three``); the pivot is parked at ``hi - 1`` and two
  scans meet in the middle, swapping elements equal to the pivot too (``_partition``);
* the larger side is pushed on a stack, the smaller side is partitioned next without any depth
  check; a range popped from the stack is heapsorted (``_heapsort``, 1-based heap) when its depth
  budget, ``2 * floor(log2(n))`` minus one per partition above it (:func:`depth_limit`), has gone
  negative;
* ranges of at most 16 elements are insertion-sorted (``_insertion_sort``);
* floats compare with numpy's NaN-aware ``a < b or (b != b and a == a)`` (:func:`less`), which
  sends NaNs last.
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["argsort", "top_k", "depth_limit", "less", "sort_range", "STACK_SIZE"]

#: numpy's SMALL_QUICKSORT: a range [lo, hi] with ``hi - lo > 15`` is partitioned, a smaller one
#: is insertion-sorted.
SMALL_QUICKSORT = 15
#: numpy's PYA_QS_STACK (2 * bits of npy_intp): room for 64 pushed ranges. Pushing the larger side
#: keeps the stack at most log2(n) deep, so this never overflows.
STACK_SIZE = 128

_SUPPORTED = (np.dtype(np.float64), np.dtype(np.int64))


@njit(cache=True)
def depth_limit(n):
    """numpy's initial depth budget ``npy_get_msb(n) * 2``: twice the index of n's top bit.

    Parameters
    ----------
    n : int
        The number of elements sorted.

    Returns
    -------
    depth : int
        0 for n <= 1.
    """
    depth = 0
    m = n
    while m > 1:
        m >>= 1
        depth += 2
    return depth


@njit(cache=True)
def less(a, b):
    """numpy's ``DOUBLE_LT``/``LONGLONG_LT``: NaN-aware less-than (a NaN is greater than any number).

    For integers ``b != b`` is never true, so this is plain ``a < b``.
    """
    return a < b or (b != b and a == a)


@njit(cache=True)
def _swap(keys, idx, i, j):
    keys[i], keys[j] = keys[j], keys[i]
    idx[i], idx[j] = idx[j], idx[i]


@njit(cache=True)
def _median_of_three(keys, idx, lo, mid, hi):
    """Order positions lo, mid, hi with numpy's three conditional swaps (strict less: ties never swap)."""
    if less(keys[mid], keys[lo]):
        _swap(keys, idx, mid, lo)
    if less(keys[hi], keys[mid]):
        _swap(keys, idx, hi, mid)
    if less(keys[mid], keys[lo]):
        _swap(keys, idx, mid, lo)


@njit(cache=True)
def _partition(keys, idx, lo, hi):
    """One quicksort partition of [lo, hi] (hi - lo > 15) exactly as numpy's ``aquicksort_``.

    The median of three goes to ``hi - 1``; ``keys[lo] <= pivot`` and ``keys[hi - 1] == pivot`` are
    the sentinels that stop the two unguarded scans. Both scans stop on keys equal to the pivot,
    so runs of ties are swapped pairwise and split down the middle. Returns the pivot's final slot.
    """
    mid = lo + ((hi - lo) >> 1)
    _median_of_three(keys, idx, lo, mid, hi)
    pivot = keys[mid]
    _swap(keys, idx, mid, hi - 1)
    i = lo
    j = hi - 1
    while True:
        i += 1
        while less(keys[i], pivot):
            i += 1
        j -= 1
        while less(pivot, keys[j]):
            j -= 1
        if i >= j:
            break
        _swap(keys, idx, i, j)
    _swap(keys, idx, i, hi - 1)
    return i


@njit(cache=True)
def _insertion_sort(keys, idx, lo, hi):
    """numpy's insertion sort of a small range: stable, shifts while strictly greater."""
    for i in range(lo + 1, hi + 1):
        key = keys[i]
        ind = idx[i]
        j = i
        while j > lo and less(key, keys[j - 1]):
            keys[j] = keys[j - 1]
            idx[j] = idx[j - 1]
            j -= 1
        keys[j] = key
        idx[j] = ind


@njit(cache=True)
def _sift_down(keys, idx, base, key, ind, start, n):
    """Sift (key, ind) down from 1-based slot ``start`` of the heap ``keys[base + 1 .. base + n]``.

    numpy's ``aheapsort_``: take the larger child (the right one only if strictly larger), move it
    up while the held key is strictly smaller, then drop the held key into the hole.
    """
    i = start
    j = start << 1
    while j <= n:
        if j < n and less(keys[base + j], keys[base + j + 1]):
            j += 1
        if less(key, keys[base + j]):
            keys[base + i] = keys[base + j]
            idx[base + i] = idx[base + j]
            i = j
            j += j
        else:
            break
    keys[base + i] = key
    idx[base + i] = ind


@njit(cache=True)
def _heapsort(keys, idx, lo, hi):
    """numpy's ``aheapsort_`` of [lo, hi]: the introsort fallback once the depth budget is spent.

    numpy indexes its heap from 1 (``a = tosort - 1``); here slot s of the heap is ``base + s``.
    """
    n = hi - lo + 1
    base = lo - 1
    for start in range(n >> 1, 0, -1):  # heapify, last parent first
        _sift_down(keys, idx, base, keys[base + start], idx[base + start], start, n)
    while n > 1:  # move the max to the end, re-sift what was last
        key = keys[base + n]
        ind = idx[base + n]
        keys[base + n] = keys[base + 1]
        idx[base + n] = idx[base + 1]
        n -= 1
        _sift_down(keys, idx, base, key, ind, 1, n)


@njit(cache=True)
def sort_range(keys, idx, lo, hi, depth, check_depth, keep_from, stack):
    """numpy 1.24's ``aquicksort_`` on [lo, hi], skipping ranges that end before ``keep_from``.

    ``depth`` is the range's depth budget; ``check_depth`` says whether numpy would test it before
    partitioning this range (numpy tests only ranges popped from its stack, plus the initial one).
    With ``keep_from = lo`` this is the full sort. With ``keep_from > lo`` it is the same sort
    pruned: every move stays inside the range being processed, ranges never overlap, so a range
    lying wholly below ``keep_from`` cannot change any slot from ``keep_from`` on, nor the budget or
    contents of any other range, and is simply not processed. ``stack`` is scratch space of
    shape (3, STACK_SIZE). Returns how many ranges were heapsorted (a probe for the tests).
    """
    stack_lo, stack_hi, stack_depth = stack[0], stack[1], stack[2]
    top = 0
    heapsorts = 0
    while True:
        if check_depth and depth < 0:
            if hi >= keep_from:
                _heapsort(keys, idx, lo, hi)
                heapsorts += 1
        else:
            while hi - lo > SMALL_QUICKSORT and hi >= keep_from:
                p = _partition(keys, idx, lo, hi)
                depth -= 1
                # numpy pushes the larger side (with the decremented budget) and goes on with
                # the smaller one; on a tie of sizes the left side is the one pushed.
                if p - lo < hi - p:
                    push_lo, push_hi = p + 1, hi
                    hi = p - 1
                else:
                    push_lo, push_hi = lo, p - 1
                    lo = p + 1
                if push_hi >= keep_from:
                    stack_lo[top] = push_lo
                    stack_hi[top] = push_hi
                    stack_depth[top] = depth
                    top += 1
            if hi >= keep_from:
                _insertion_sort(keys, idx, lo, hi)
        if top == 0:
            return heapsorts
        top -= 1
        lo = stack_lo[top]
        hi = stack_hi[top]
        depth = stack_depth[top]
        check_depth = True


@njit(cache=True)
def _argsort_kernel(keys, keep_from):
    """Full (keep_from = 0) or pruned argsort of ``keys`` (sorted in place). Returns (idx, heapsorts)."""
    n = keys.shape[0]
    idx = np.arange(n, dtype=np.int64)
    stack = np.empty((3, STACK_SIZE), np.int64)
    heapsorts = sort_range(keys, idx, 0, n - 1, depth_limit(n), True, keep_from, stack)
    return idx, heapsorts


def _as_keys(a) -> np.ndarray:
    """A fresh, native-order, contiguous 1-D float64/int64 copy of ``a`` (the kernels sort it in place)."""
    arr = np.asarray(a)
    if arr.ndim != 1:
        raise ValueError(f"expected a 1-D array, got shape {arr.shape}")
    dtype = arr.dtype.newbyteorder("=")  # numpy sorts a byte-swapped array through a native copy
    if dtype not in _SUPPORTED:
        raise TypeError(
            f"npsort reproduces numpy 1.24's argsort for float64 and int64 only, got {arr.dtype}; "
            "convert explicitly (other dtypes ran other comparison functions, or SIMD sorts)"
        )
    return np.array(arr, dtype=dtype, order="C", copy=True)


def argsort(a) -> np.ndarray:
    """numpy 1.24's ``np.argsort(a)`` (kind='quicksort'), index for index, ties and NaNs included.

    Parameters
    ----------
    a : array-like of shape (n_samples,)
        float64 or int64 (any byte order, any strides). n_samples may be 0.

    Returns
    -------
    order : ndarray of shape (n_samples,), dtype int64
        The permutation numpy 1.24's generic introsort produces.

    Raises
    ------
    TypeError
        For any other dtype (no silent conversion: it could change the order of ties).
    ValueError
        For arrays that are not 1-D.
    """
    keys = _as_keys(a)
    idx, _ = _argsort_kernel(keys, 0)
    return idx


def top_k(a, k: int) -> np.ndarray:
    """``argsort(a)[-k:][::-1]``: the notebook's top k, largest first, from a pruned introsort.

    Runs the same moves as :func:`argsort` but skips every range that lies wholly before the last
    k slots (see :func:`sort_range`), so the last k slots end exactly as in the full sort.

    Parameters
    ----------
    a : array-like of shape (n_samples,)
        float64 or int64.
    k : int
        At least 1. When k >= n_samples the whole reversed argsort is returned. (k = 0 is
        refused: the literal ``[-0:]`` would return everything, which is never what is meant.)

    Returns
    -------
    top : ndarray of shape (min(k, n_samples),), dtype int64
    """
    k = int(k)
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    keys = _as_keys(a)
    n = keys.shape[0]
    keep_from = max(n - k, 0)
    idx, _ = _argsort_kernel(keys, keep_from)
    return idx[keep_from:][::-1].copy()
