"""The bounds of many bootstrap intervals at once, read from each row's tails: the same bits as
``numpy.quantile(rows, [tail, 1 - tail], axis=-1)``.

A class of 300 files has 44,850 pairs of runs, and each pair's A and HM differences are 10,000
resampled values whose 2.5% and 97.5% quantiles bound its interval. numpy partitions the whole
row around the 0th, 250th, 251st, 9,750th, 9,751st and last of the 10,000 values, most of a
class's statistics' time (docs/benchmarks.md, "A class: `claimtrace compare --class`"). Only the
two order statistics next to each bound matter, and they can be found among a few hundred values:

* the row's values are split into groups of :data:`GROUP`; each group's minimum is a value of the
  row, so if ``t`` is the (k+1)-th smallest of the minima, at least k+1 values are ``<= t``, and
  the k+1 smallest values of the row are the k+1 smallest of the values ``<= t`` (a few
  hundredths of the row; the maxima bound the other tail likewise);
* those few are sorted, and numpy's linear interpolation is applied to the same two order
  statistics, operation for operation (:func:`_lerp_as_numpy`).

Fewer than :data:`FEW_ROWS` rows go to ``numpy.quantile`` itself: the kernel's first compile on
a machine (then cached) costs more than it saves on them, and a build's own comparisons are a few
dozen rows (docs/benchmarks.md, "First contact: from `git clone` to the first page").

Order statistics are values, whatever order a selection leaves equal values in, so they are
numpy's bits; except a negative zero, which equals zero and has other bits: a row holding one
(or a NaN, which numpy sorts last) goes to ``numpy.quantile`` itself.
"""

from __future__ import annotations

import math

import numba
import numpy as np

#: How many of a row's values share a minimum (and a maximum) in the first pass.
GROUP = 10

#: Below this many rows, ``numpy.quantile`` answers: numpy's time on them is under the kernel's
#: first compile on a machine (docs/benchmarks.md, "First contact: from `git clone` to the first page").
FEW_ROWS = 1_000


def tail_quantiles(values: np.ndarray, level: float, few: int = FEW_ROWS) -> np.ndarray:
    """Each row's ``numpy.quantile(row, [tail, 1 - tail])``, ``tail = (1 - level) / 2``, the
    same bits.

    Parameters
    ----------
    values : ndarray of float64, shape (rows, n)
    level : float
        The intervals' confidence level.
    few : int
        Fewer rows than this are given to ``numpy.quantile`` itself (:data:`FEW_ROWS`).

    Returns
    -------
    ndarray of float64, shape (rows, 2): each row's lower and upper bound.
    """
    values = np.ascontiguousarray(values, dtype=np.float64)
    rows, n = values.shape
    q = np.asarray([(1 - level) / 2, 1 - (1 - level) / 2], dtype=np.float64)
    virtual = (n - 1) * q  # numpy's virtual indices and weights, as numpy computes them
    below = np.floor(virtual)
    gamma = virtual - below
    low, high = int(below[0]), int(below[1])
    # the order statistics needed: low and low + 1 from the bottom, high and high + 1 from the top
    deepest = max(low + 2, n - high)
    if rows < max(few, 1) or high + 1 >= n or n // GROUP < 2 * deepest:
        return np.quantile(values, q, axis=-1).T
    order = np.empty((rows, 4))
    odd = np.zeros(rows, dtype=np.bool_)
    _order_statistics(values, low, high, GROUP, order, odd)
    out = np.stack(
        [_lerp_as_numpy(order[:, 0], order[:, 1], gamma[0]), _lerp_as_numpy(order[:, 2], order[:, 3], gamma[1])],
        axis=1,
    )
    if odd.any():
        out[odd] = np.quantile(values[odd], q, axis=-1).T
    return out


def _lerp_as_numpy(previous: np.ndarray, following: np.ndarray, gamma: float) -> np.ndarray:
    """numpy.quantile's linear interpolation between two order statistics, operation for
    operation (``numpy.lib._function_base_impl._lerp``), so the same bits."""
    gamma = np.float64(gamma)
    difference = following - previous
    out = previous + difference * gamma
    np.subtract(following, difference * (1 - gamma), out=out, where=gamma >= 0.5)
    return out


@numba.njit(cache=True, nogil=True)
def _order_statistics(values, low, high, group, out, odd):  # pragma: no cover - compiled
    """Each row's sorted values at ``low``, ``low + 1``, ``high`` and ``high + 1`` into ``out``;
    ``odd[r]`` set for a row holding a NaN or a negative zero (left to numpy)."""
    rows, n = values.shape
    groups = n // group
    smallest, largest = low + 2, n - high
    minima, maxima = np.empty(groups), np.empty(groups)
    kept = np.empty(n)
    for r in range(rows):
        row = values[r]
        for g in range(groups):
            least = most = row[g * group]
            for i in range(g * group + 1, (g + 1) * group):
                least = min(least, row[i])
                most = max(most, row[i])
            minima[g], maxima[g] = least, most
        below = np.partition(minima, smallest - 1)[smallest - 1]
        above = -np.partition(-maxima, largest - 1)[largest - 1]
        count = 0
        for i in range(n):
            v = row[i]
            if v != v or (v == 0.0 and math.copysign(1.0, v) < 0.0):
                odd[r] = True
            if v <= below:
                kept[count] = v
                count += 1
        if odd[r]:
            continue
        bottom = np.sort(kept[:count])
        out[r, 0], out[r, 1] = bottom[low], bottom[low + 1]
        count = 0
        for i in range(n):
            if row[i] >= above:
                kept[count] = row[i]
                count += 1
        top = np.sort(kept[:count])  # the row's ``count`` largest values, ascending
        out[r, 2], out[r, 3] = top[count - n + high], top[count - n + high + 1]
