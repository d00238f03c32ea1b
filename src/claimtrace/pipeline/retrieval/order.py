"""The notebook's sorts, copied from pandas 2.0.3 and numpy 1.24: the filtered branch's two
``sort_values`` and ``max_match`` cut (:func:`notebook_order`), and the fallback's
``sort_values("combined_score").head(6)`` over every passage (:func:`fallback_six`)."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from claimtrace.constants import MAX_EVIDENCES
from claimtrace.lib import npsort

__all__ = ["notebook_order", "fallback_six", "FALLBACK_DENSE_SHARE"]


def _pandas_descending(values: np.ndarray) -> np.ndarray:
    """``nargsort(values, kind='quicksort', ascending=False)`` of pandas 2.0.3 (no NaNs):
    numpy's quicksort of the reversed column, mapped back and reversed."""
    m = len(values)
    reversed_positions = np.arange(m - 1, -1, -1, dtype=np.int64)
    return reversed_positions[npsort.argsort(values[::-1])][::-1]


def notebook_order(cosine: np.ndarray, overlap: np.ndarray, score: np.ndarray, shared: np.ndarray) -> np.ndarray:
    """Rows (in frame order) that survive the filtered branch's two sorts and the ``max_match``
    cut, in the order ``head(6)`` reads them.

    1. ``sort_values(by=["overlap_rate", "similaritie"], ascending=[False, False])``: pandas'
       ``lexsort_indexer``, a stable counting sort of the keys' category codes; equal values
       keep frame order, which ``np.lexsort`` (stable) of the negated keys reproduces.
    2. ``sort_values(by="combined_score", ascending=False)``: :func:`_pandas_descending`.
    3. ``relevant_evidence[relevant_evidence.max_match == max(...)]``: order kept.

    Parameters
    ----------
    cosine, overlap, score : ndarray of shape (n_passing,), float64
        The passing rows' columns, in frame order.
    shared : ndarray of shape (n_passing,), int64
        Their ``max_match``.

    Returns
    -------
    order : ndarray of shape (n_kept,), int64
        Indices into the passing rows, n_kept <= n_passing.
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


def fallback_six(positions: np.ndarray, score: np.ndarray, n_passages: int, k: int = MAX_EVIDENCES) -> np.ndarray:
    """``evidence_df.sort_values(by="combined_score", ascending=False).head(k)`` over all
    ``n_passages``, where only ``positions`` have non-zero ``score``.

    pandas sorts the reversed column with numpy's quicksort and reverses the result, so its first
    k rows are the last k of ``argsort(column[::-1])``, read backwards: numpy 1.24's introsort,
    pruned to the last k slots (:func:`npsort.top_k`), or simulated on the sparse reversed row
    (:func:`npsort.top_k_rows`) when few scores are non-zero.

    Parameters
    ----------
    positions : ndarray of shape (n_touched,), int64
        Distinct, ascending frame positions.
    score : ndarray of shape (n_touched,), float64
        Their combined scores.
    n_passages : int
    k : int

    Returns
    -------
    top : ndarray of shape (min(k, n_passages),), int64
        Frame positions, in the order ``head(k)`` reads them.
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
