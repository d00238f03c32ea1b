"""The top k of a non-negative sparse row without building it: numpy 1.24's introsort simulated on
a segment list (:mod:`claimtrace.lib.npsort.segments`) while its pivots are zero
(:func:`sparse_row_top_k`), then finished by the exact dense kernel.

A tagging row is 20,000 weights, 5 to 50 of them positive and the rest 0.0. While a range is
large, its median of three is almost always 0, and a partition around a zero pivot moves
elements in a pattern that depends only on where the positives are:

* nothing is less than 0, so the left scan stops at every slot: at iteration t it stands on
  lo + t;
* the right scan skips positives and stops on zeros: at iteration t it stands on z_t, the t-th
  zero of the interior lo + 1 .. hi - 2 counted from the right, as long as z_t > lo + t;
* so the loop swaps lo + t <-> z_t for t = 1 .. T - 1 and stops at the first t = T with
  z_T <= lo + T (or no zero left); numpy then swaps the pivot (at hi - 1) with slot lo + T.

In other words, slots lo + 1 .. lo + T - 1 receive the zeros z_1, z_2, ... (the interior's top
zeros read downwards), and those zero slots receive the old left block, read upwards from the
lowest zero slot, while every positive right of lo + T stays where it is. Reading a run of
consecutive feature indices backwards gives another such run, so a range is kept as a list of
segments: runs of zero-weight features ``first, first + step, ...`` (step +1 or -1), and single
positive features. One partition is then a walk over O(segments) items instead of O(n) slots,
and the number of segments stays about twice the number of positives.

The simulation follows one chain of ranges: the one ending at slot n - 1, from which the left
side is always dropped by pruning (it lies before the last k slots). Slot hi = n - 1 only ever
changes through the median of three, so it is held apart from the list. The chain hands its
range to the exact dense kernel, materialising only that range, as soon as the range is small
(a dense partition is then as cheap as a simulated one), the median of three is positive, the
pivot lands inside the last k slots (both sides would be kept), or the depth budget would
trigger a heapsort. The dense kernel finishes from exactly the state numpy would be in, so the
result is exact whichever way the work is split.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from claimtrace.lib.npsort.introsort import less, sort_range
from claimtrace.lib.npsort.segments import Segments, emit, initial_segments, locate, materialise, set_slot

__all__ = [
    "SPARSE_MIN_SIZE",
    "SLOTS_PER_SEGMENT",
    "HANDOFF_SMALL",
    "HANDOFF_POSITIVE_PIVOT",
    "HANDOFF_BOTH_SIDES",
    "HANDOFF_DEPTH",
    "HANDOFF_CAPACITY",
    "HANDOFF_DENSE_ROW",
    "RowWork",
    "sparse_row_top_k",
]

#: The chain's range goes to the dense kernel once it has at most this many slots, or at most
#: SLOTS_PER_SEGMENT slots per segment of its list.
SPARSE_MIN_SIZE = 64
SLOTS_PER_SEGMENT = 4

# Why the simulation handed over (recorded per row for the tests and the benchmark).
HANDOFF_SMALL = 0  # range small enough
HANDOFF_POSITIVE_PIVOT = 1  # median of three positive: a partition the closed form does not cover
HANDOFF_BOTH_SIDES = 2  # the pivot landed inside the last k slots: both sides would be kept
HANDOFF_DEPTH = 3  # depth budget exhausted: numpy heapsorts this range (unreachable, see below)
HANDOFF_CAPACITY = 4  # segment list full (unreachable with the capacity allocated)
HANDOFF_DENSE_ROW = 5  # the row has a negative or NaN weight: sorted densely from the start

#: :func:`_handoff_before` when the sparse simulation goes on.
_GO_ON = -1


class RowWork(NamedTuple):
    """The work space of one row's top k, shared by all rows of a matrix: two segment lists (the
    range before and after a partition) and the dense kernel's buffers (n keys, n indices, and
    its stack of shape (3, STACK_SIZE))."""

    a: Segments
    b: Segments
    keys: np.ndarray
    idx: np.ndarray
    stack: np.ndarray


class Median(NamedTuple):
    """The median of three of a range held as a list: its slot ``mid`` (segment ``segment``,
    offset ``offset`` in the list as it was before), the median's element and key, and the
    largest's, which slot hi holds next."""

    mid: int
    segment: int
    offset: int
    element: int
    key: float
    hi_element: int
    hi_key: float


class Pivot(NamedTuple):
    """Where a zero pivot lands: its final slot p = lo + T, the segment and offset of slot p,
    whether z_T exists and is slot p (``keep_zero``: never swapped), and whether both sides of
    the partition reach the last k slots (then the list shows the range before it)."""

    slot: int
    segment: int
    offset: int
    keep_zero: bool
    both_sides: bool


@njit(cache=True)
def _zero_pivot_split(lo, hi, segs, n_seg):
    """T of a zero-pivot partition of list A (slots lo .. hi - 1): the pivot ends at slot lo + T.

    Walks the interior lo + 1 .. hi - 2 from the right, counting zeros. The t-th zero z_t is
    swapped with slot lo + t while z_t > lo + t; T is the first t where that fails. In a zero run
    ending at slot e with c zeros above it, the j-th zero is z = e - j + 1, and it fails once
    2j >= e + 1 - lo - c. Returns (T, whether z_T exists and is slot lo + T, a segment at or
    before slot lo + T, the first slot of that segment).
    """
    c = 0
    end = hi - 1  # last slot of the segment being looked at
    for s in range(n_seg - 1, -1, -1):
        length = segs.length[s]
        start = end - length + 1
        if segs.key[s] == 0.0:
            top = end if s < n_seg - 1 else end - 1  # slot hi - 1 holds the pivot
            bottom = start if s > 0 else start + 1  # slot lo is the left sentinel
            count = top - bottom + 1
            if count > 0:
                need = top + 1 - lo - c
                j = (need + 1) // 2 if need > 1 else 1
                if j <= count:
                    t = c + j
                    return t, (top - j + 1) == lo + t, s, start
                c += count
        end = start - 1
    return c + 1, False, 0, lo


@njit(cache=True)
def _zero_pivot_partition(pivot, a, n_a, b):
    """Write to list B the right side, slots lo + T + 1 .. hi - 1, of a zero-pivot partition.

    List A holds slots lo .. hi - 1; slot lo + T is offset ``pivot.offset`` of its segment
    ``pivot.segment``. Slots lo + T .. hi - 2 keep their positives; their zero slots, taken
    upwards, receive the old left block lo + 1 .. lo + T - 1 read downwards (the "stream"), except
    a zero at lo + T that is z_T (``pivot.keep_zero``: never swapped). Whatever ends at lo + T goes
    to hi - 1 (numpy's final swap with the pivot). Returns B's segment count.
    """
    a_first, a_step, a_length, a_key = a  # as locals: see the segments module
    w_seg, w_off = pivot.segment, pivot.offset
    # The stream starts at slot lo + T - 1 and reads leftwards; st_avail slots of st_seg remain.
    if w_off > 0:
        st_seg, st_avail = w_seg, w_off
    else:
        st_seg, st_avail = w_seg - 1, a_length[w_seg - 1]

    # X, the element at slot lo + T once the loop is over.
    if a_key[w_seg] != 0.0 or pivot.keep_zero:
        x_el = a_first[w_seg] + a_step[w_seg] * w_off
        x_key = a_key[w_seg]
    else:
        x_el = a_first[st_seg] + a_step[st_seg] * (st_avail - 1)
        x_key = a_key[st_seg]
        st_avail -= 1

    n_b = 0
    off = w_off + 1
    for s in range(w_seg, n_a):
        length = a_length[s] if s < n_a - 1 else a_length[s] - 1  # slot hi - 1 is not part of it
        if off < length:
            if a_key[s] != 0.0:  # a positive stays in its slot
                n_b = emit(a_first[s] + a_step[s] * off, a_step[s], length - off, a_key[s], b, n_b)
            else:  # zero slots are filled from the stream
                need = length - off
                while need > 0:
                    if st_avail == 0:
                        st_seg -= 1
                        st_avail = a_length[st_seg]
                    take = need if need < st_avail else st_avail
                    step = a_step[st_seg]
                    n_b = emit(a_first[st_seg] + step * (st_avail - 1), -step, take, a_key[st_seg], b, n_b)
                    st_avail -= take
                    need -= take
        off = 0
    return emit(x_el, 1, 1, x_key, b, n_b)


@njit(cache=True, inline="always")
def _handoff_before(lo, hi, n_seg, check_depth, depth, capacity):
    """Why the range lo .. hi goes to the dense kernel before this level, or _GO_ON."""
    if hi - lo + 1 <= max(SPARSE_MIN_SIZE, SLOTS_PER_SEGMENT * n_seg):
        return HANDOFF_SMALL
    # The next two cannot happen (kept for safety, the dense kernel would be exact anyway):
    # zeros at least halve at every level, so the chain is shorter than log2(n) levels, far
    # from the depth budget of 2 * log2(n); and a level adds at most a handful of segments.
    if check_depth and depth < 0:
        return HANDOFF_DEPTH
    if n_seg + 16 > capacity:
        return HANDOFF_CAPACITY
    return _GO_ON


@njit(cache=True, inline="always")
def _segment_median_of_three(lo, hi, segs, hi_el, hi_key):
    """Median of three on slots lo, mid and hi (numpy's swaps, strict less: ties stay put), read
    from the list (slot lo is its first segment's first) and slot hi, held apart (a :class:`Median`)."""
    first, step, _, key = segs  # as locals: see the segments module
    mid = lo + ((hi - lo) >> 1)
    e_lo, k_lo = first[0], key[0]
    s_mid, off_mid = locate(mid - lo, segs, 0)
    e_mid, k_mid = first[s_mid] + step[s_mid] * off_mid, key[s_mid]
    e_hi, k_hi = hi_el, hi_key
    if less(k_mid, k_lo):
        e_lo, k_lo, e_mid, k_mid = e_mid, k_mid, e_lo, k_lo
    if less(k_hi, k_mid):
        e_mid, k_mid, e_hi, k_hi = e_hi, k_hi, e_mid, k_mid
    if less(k_mid, k_lo):
        e_lo, k_lo, e_mid, k_mid = e_mid, k_mid, e_lo, k_lo
    return Median(mid, s_mid, off_mid, e_mid, k_mid, e_hi, k_hi)


@njit(cache=True, inline="always")
def _place_zero_pivot(lo, hi, median, keep_from, segs, n_seg):
    """The zero pivot moves to hi - 1 and the element there to mid; slot lo now holds a zero
    that only the dropped left side will see. Finds the pivot's final slot p = lo + T.

    Returns (segments, :class:`Pivot`): with both sides kept (p - 1 reaches the last k slots)
    the list again shows the range before this partition, for the dense kernel."""
    first, step, length, key = segs  # as locals: see the segments module
    last = n_seg - 1
    e_hm1 = first[last] + step[last] * (length[last] - 1)
    k_hm1 = key[last]
    s_mid, off_mid = median.segment, median.offset
    old_mid_el = first[s_mid] + step[s_mid] * off_mid
    old_mid_key = key[s_mid]
    # The list still shows slot mid as it was before the median of three. Which slots are zero
    # decides T; if the slot was and stays a zero it need not be written yet, since a zero
    # above lo + T is overwritten by the stream anyway.
    mid_written = not (k_hm1 == 0.0 and old_mid_key == 0.0)
    if mid_written:
        n_seg, s_mid = set_slot(s_mid, off_mid, e_hm1, k_hm1, segs, n_seg)
    split, keep_zero, s_w, start_w = _zero_pivot_split(lo, hi, segs, n_seg)
    p = lo + split
    if p - 1 >= keep_from:  # both sides reach the last k slots: let the dense kernel do it
        if mid_written:  # undo, so the list again shows the range before this partition
            first[s_mid] = old_mid_el
            key[s_mid] = old_mid_key
        return n_seg, Pivot(p, s_w, 0, keep_zero, True)
    # Slot p = lo + T: find its segment, walking from one at or before it.
    if not mid_written and median.mid <= p:  # mid's identity matters: it is in the stream, or X
        n_seg, s_mid = set_slot(s_mid, off_mid, e_hm1, k_hm1, segs, n_seg)
        s_w, w_off = locate(p - lo, segs, 0)  # segments have moved
    else:
        s_w, w_off = locate(p - start_w, segs, s_w)
    return n_seg, Pivot(p, s_w, w_off, keep_zero, False)


@njit(cache=True)
def sparse_row_top_k(cols, vals, n, keep_from, depth, work):
    """Bring slots keep_from .. n - 1 of the row's argsort into ``work.idx`` (n slots).

    ``cols`` are the row's stored feature indices (sorted, distinct) and ``vals`` their weights,
    all >= 0; every other feature weighs 0. ``depth`` is numpy's depth budget for n slots, and
    ``work`` a :class:`RowWork`. Only the range handed over is ever materialised densely.
    Returns (zero-pivot partitions simulated, handoff reason, size of the range handed over).
    """
    if n == 0:
        return 0, HANDOFF_SMALL, 0
    a, b, keys, idx, stack = work  # as locals: see the segments module
    capacity = a.key.shape[0]
    lo = 0
    hi = n - 1
    n_a, hi_key = initial_segments(cols, vals, hi, a)
    hi_el = hi
    check_depth = True
    levels = 0
    while True:
        reason = _handoff_before(lo, hi, n_a, check_depth, depth, capacity)
        if reason != _GO_ON:
            break
        median = _segment_median_of_three(lo, hi, a, hi_el, hi_key)
        if median.key != 0.0:
            reason = HANDOFF_POSITIVE_PIVOT
            break
        n_a, pivot = _place_zero_pivot(lo, hi, median, keep_from, a, n_a)
        if pivot.both_sides:
            reason = HANDOFF_BOTH_SIDES
            break
        p = pivot.slot
        if p >= keep_from:  # the pivot's slot is final and among the last k
            idx[p] = median.element
            keys[p] = 0.0
        n_a = _zero_pivot_partition(pivot, a, n_a, b)
        a, b = b, a
        hi_el, hi_key = median.hi_element, median.hi_key
        levels += 1
        depth -= 1
        # The left side is dropped. If it was the smaller side numpy would go on with it and pop
        # the right side from its stack later, testing its depth; otherwise it goes straight on.
        check_depth = p - lo < hi - p
        lo = p + 1
    pos = materialise(lo, a, n_a, keys, idx)
    idx[pos] = hi_el
    keys[pos] = hi_key
    sort_range(keys, idx, lo, hi, depth, check_depth, keep_from, stack)
    return levels, reason, hi - lo + 1
