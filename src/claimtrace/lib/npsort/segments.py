"""A range of a sparse row's argsort as a list of segments (:class:`Segments`): runs of
zero-weight features ``first, first + step, ...`` (step +1 or -1) and single positive features,
so that a partition of the range is a walk over O(segments) items instead of O(n) slots.

Reading a run of consecutive feature indices backwards gives another such run, which is why the
zero-pivot partitions of :mod:`claimtrace.lib.npsort.zero_pivot` keep a range in this form.

A kernel that reads a record's arrays in more than one branch takes them into locals first
(``first, step, length, key = segs``): numba counts a reference for each array read from a
record, and the counts it cannot prune across branches slow a sparse row (docs/benchmarks.md,
"Per-passage tagging").
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

__all__ = ["Segments", "empty_segments", "emit", "locate", "set_slot", "initial_segments", "materialise"]


class Segments(NamedTuple):
    """Room for ``len(first)`` segments, each a run of ``length`` features ``first, first + step,
    ...`` sharing the key ``key`` (0.0 for a run of zeros; a positive feature is a segment of its
    own). How many are in use is counted apart (the functions here take and return it)."""

    first: np.ndarray  # int64
    step: np.ndarray  # int64, +1 or -1
    length: np.ndarray  # int64
    key: np.ndarray  # float64


@njit(cache=True, inline="always")
def empty_segments(capacity):
    """A :class:`Segments` with room for ``capacity`` segments, none in use."""
    return Segments(
        np.empty(capacity, np.int64), np.empty(capacity, np.int64), np.empty(capacity, np.int64), np.empty(capacity)
    )


@njit(cache=True)
def emit(first, step, count, key, segs, n_seg):
    """Append a run of ``count`` features ``first, first + step, ...`` all with key ``key``.

    Positive features are always single-slot segments. A zero run that continues the previous zero
    run (same direction, next feature index) is merged into it, which keeps lists short.
    Returns the new segment count.
    """
    if count <= 0:
        return n_seg
    if n_seg > 0 and key == 0.0 and segs.key[n_seg - 1] == 0.0:
        p = n_seg - 1
        if segs.length[p] >= 2:
            s = segs.step[p]
        elif count >= 2:
            s = step
        else:
            s = first - segs.first[p]
        if (s == 1 or s == -1) and segs.first[p] + s * segs.length[p] == first and (count == 1 or step == s):
            segs.step[p] = s
            segs.length[p] += count
            return n_seg
    segs.first[n_seg] = first
    segs.step[n_seg] = step if count >= 2 else 1
    segs.length[n_seg] = count
    segs.key[n_seg] = key
    return n_seg + 1


@njit(cache=True)
def locate(offset, segs, start_seg):
    """(segment, offset inside it) of the slot ``offset`` slots after the start of ``start_seg``."""
    s = start_seg
    while offset >= segs.length[s]:
        offset -= segs.length[s]
        s += 1
    return s, offset


@njit(cache=True)
def set_slot(s, off, el, key, segs, n_seg):
    """Make slot ``off`` of segment ``s`` hold feature ``el`` (key ``key``), as its own segment.

    Splits segment s in place (later segments shift right). Returns (new count, its segment).
    """
    length = segs.length[s]
    if length == 1:
        segs.first[s] = el
        segs.key[s] = key
        return n_seg, s
    extra = 2 if 0 < off < length - 1 else 1
    for t in range(n_seg - 1, s, -1):
        segs.first[t + extra] = segs.first[t]
        segs.step[t + extra] = segs.step[t]
        segs.length[t + extra] = segs.length[t]
        segs.key[t + extra] = segs.key[t]
    first, step, old_key = segs.first[s], segs.step[s], segs.key[s]
    if off > 0:  # the part before the slot stays in segment s
        segs.length[s] = off
        s += 1
    segs.first[s] = el
    segs.step[s] = 1
    segs.length[s] = 1
    segs.key[s] = key
    if off < length - 1:  # the part after it
        segs.first[s + 1] = first + step * (off + 1)
        segs.step[s + 1] = step
        segs.length[s + 1] = length - off - 1
        segs.key[s + 1] = old_key
    return n_seg + extra, s


@njit(cache=True, inline="always")
def initial_segments(cols, vals, hi, segs):
    """The initial index array 0 .. n - 1 as segments: zero runs between the positive features.
    Slot hi is held apart; the list covers slots 0 .. hi - 1. Returns (segments, key of slot hi)."""
    n_seg = 0
    prev = 0
    hi_key = 0.0
    for t in range(cols.shape[0]):
        c = cols[t]
        if c == hi:
            hi_key = vals[t]
            break
        n_seg = emit(prev, 1, c - prev, 0.0, segs, n_seg)
        n_seg = emit(c, 1, 1, vals[t], segs, n_seg)  # a stored 0 is a zero
        prev = c + 1
    return emit(prev, 1, hi - prev, 0.0, segs, n_seg), hi_key


@njit(cache=True)
def materialise(lo, segs, n_seg, keys, idx):
    """Write a segment list into the dense buffers from slot ``lo`` on; return the next slot."""
    pos = lo
    for s in range(n_seg):
        first, step, key = segs.first[s], segs.step[s], segs.key[s]
        for t in range(segs.length[s]):
            idx[pos] = first + step * t
            keys[pos] = key
            pos += 1
    return pos
