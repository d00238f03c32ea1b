"""The fewest model-input edits that make another label the verdict, exactly (the table protocol).

A claim alone is scored ``logits = bias + (1/128) * sum_t g[token_t]`` (:mod:`claimtrace.models.table`),
every position on its own, so taking a token out (a ``[PAD]`` in its place) moves the logits by
``(g[PAD] - g[token]) / 128`` and putting one in (in place of a ``[PAD]``) by ``(g[token] - g[PAD]) / 128``,
whatever else the input holds. Label ``c`` wins over label ``j`` once the edits' gains in
``logit_c - logit_j`` exceed the gap ``logit_j - logit_c``; for one rival alone the fewest edits
are the largest gains, in order (a sort). Every rival must be beaten at once, so the fewest edits
are at least the largest of the rivals' counts (the lower bound); a set of that size that beats
them all is proved the smallest by the sort. When none does, larger sets are tried until one
does, and the smallest is then found by trying every set (``brute force``) where the input is
short enough, else said as bounds.
"""

from __future__ import annotations

import itertools
from collections import Counter
from dataclasses import dataclass

import numpy as np

from claimtrace import constants

#: Real tokens up to which a gap between the sort's bound and a found set is closed by trying every set.
BRUTE_FORCE_TOKENS = 16

__all__ = ["Found", "fewest_removals", "fewest_additions", "model_input_edits", "BRUTE_FORCE_TOKENS"]


@dataclass(frozen=True)
class Found:
    """A smallest edit found: the rows used (with repeats for additions), the sort's lower bound
    and how minimality is known (``"sort"``, ``"brute force"``, or ``"bounds"``: at least the
    bound, at most this set; ``"undecided"``: no set found, none smaller than the bound)."""

    rows: tuple[int, ...]
    lower_bound: int
    proof: str


def _beats(label: int, rival: int) -> bool:
    """argmax takes the first of equal logits: ``label`` beats a later rival by a tie too."""
    return label < rival


def _wins(margins: np.ndarray, rivals: list[int], label: int) -> np.ndarray:
    """Whether margins (logit_label - logit_rival, rivals in the last axis) make ``label`` the verdict."""
    ok = np.ones(margins.shape[:-1], dtype=bool)
    for k, rival in enumerate(rivals):
        m = margins[..., k]
        ok &= (m >= 0) if _beats(label, rival) else (m > 0)
    return ok


def _setup(logits: np.ndarray, gains: np.ndarray, label: int) -> tuple[list[int], np.ndarray, np.ndarray]:
    """The rivals, the margins now (label minus rival) and each row's gain in every margin."""
    rivals = [j for j in range(len(logits)) if j != label]
    margins = np.array([logits[label] - logits[j] for j in rivals])
    row_gains = np.stack([gains[:, label] - gains[:, j] for j in rivals], axis=1)
    return rivals, margins, row_gains


def _rival_count(margin: float, gains_sorted: np.ndarray, strict: bool) -> int | None:
    """The fewest of the largest gains (sorted, descending) lifting one margin to a win; None: never."""
    totals = margin + np.concatenate([[0.0], np.cumsum(gains_sorted)])
    ok = totals > 0 if strict else totals >= 0
    hits = np.flatnonzero(ok)
    return int(hits[0]) if len(hits) else None


def fewest_removals(logits: np.ndarray, gains: np.ndarray, label: int) -> Found | None:
    """The fewest rows of ``gains`` (each used once) whose sum added to ``logits`` makes ``label``
    the argmax; None when no set does (some rival is out of reach of all its gains together).
    ``gains``: (n, 4), one row per removable token."""
    rivals, margins, row_gains = _setup(logits, gains, label)
    orders = [np.argsort(-row_gains[:, k], kind="stable") for k in range(len(rivals))]
    counts = [
        _rival_count(margins[k], row_gains[orders[k], k], not _beats(label, rivals[k])) for k in range(len(rivals))
    ]
    if any(c is None for c in counts):
        return None
    lower = max(counts)
    orders.append(np.array(_greedy(margins, row_gains, len(gains), repeat=False), dtype=np.int64))
    for size in range(lower, len(gains) + 1):
        for order in orders:
            chosen = tuple(int(r) for r in order[:size])
            if len(chosen) == size and _wins(margins + row_gains[list(chosen)].sum(axis=0), rivals, label):
                if size == lower:
                    return Found(chosen, lower, "sort")
                return _closed(margins, row_gains, rivals, label, lower, chosen)
    return _closed(margins, row_gains, rivals, label, lower, None)


def _closed(margins, row_gains, rivals, label, lower: int, found: tuple[int, ...] | None) -> Found | None:
    """A found set larger than the bound, or none found: every smaller set tried where the input is
    short enough (None: no set at all), else bounds (``undecided``: no set found, at least ``lower``)."""
    if len(row_gains) > BRUTE_FORCE_TOKENS:
        return Found(found, lower, "bounds") if found is not None else Found((), lower, "undecided")
    for size in range(lower, len(row_gains) + 1 if found is None else len(found)):
        for chosen in itertools.combinations(range(len(row_gains)), size):
            if _wins(margins + row_gains[list(chosen)].sum(axis=0), rivals, label):
                return Found(chosen, lower, "brute force")
    return None if found is None else Found(found, lower, "brute force")


def fewest_additions(logits: np.ndarray, gains: np.ndarray, label: int, room: int) -> Found | None:
    """The fewest rows of ``gains`` (each as often as wanted, at most ``room`` in all) whose sum
    added to ``logits`` makes ``label`` the argmax; None when none within ``room`` does."""
    rivals, margins, row_gains = _setup(logits, gains, label)
    counts = []
    for k in range(len(rivals)):
        best = float(row_gains[:, k].max())
        # one rival alone: its best row, repeated, lifts the margin fastest (a sort's first)
        needed = _rival_count(margins[k], np.full(room, best), not _beats(label, rivals[k]))
        if needed is None:
            return None
        counts.append(needed)
    lower = max(counts)
    for size in range(lower, room + 1):
        # one row repeated `size` times, every row at once
        ok = _wins(margins[None, :] + size * row_gains, rivals, label)
        if ok.any():
            row = int(np.flatnonzero(ok)[0])
            return Found((row,) * size, lower, "sort" if size == lower else "bounds")
        mixed = tuple(_greedy(margins, row_gains, size, repeat=True))
        if _wins(margins + row_gains[list(mixed)].sum(axis=0), rivals, label):
            return Found(mixed, lower, "sort" if size == lower else "bounds")
    return Found((), lower, "undecided")


def _greedy(margins, row_gains, size: int, repeat: bool) -> list[int]:
    """``size`` rows chosen one at a time, each lifting the worst margin most (each row once,
    unless ``repeat``): a mix of tokens that may win where no one rival's order does."""
    current = margins.astype(np.float64).copy()
    chosen: list[int] = []
    free = np.ones(len(row_gains), dtype=bool)
    for _ in range(min(size, len(row_gains)) if not repeat else size):
        worst = (current[None, :] + row_gains).min(axis=1)
        row = int(np.argmax(np.where(free, worst, -np.inf)))
        chosen.append(row)
        current = current + row_gains[row]
        free[row] = repeat
    return chosen


def _tokens(vocab, token_ids: list[int]) -> list[dict]:
    """Edited tokens, each once with how many times (most first, then by id)."""
    counted = Counter(token_ids)
    return [
        {"token": vocab.tokens[t], "id": int(t), "times": n}
        for t, n in sorted(counted.items(), key=lambda x: (-x[1], x[0]))
    ]


def _edit(classifier, ids: np.ndarray, kind: str, found: Found | None, edited_ids, label: str) -> dict:
    """One edit as the page shows it, the edited input re-run through the table."""
    if found is None:
        return {"kind": kind, "label": label, "possible": False}
    if found.proof == "undecided":  # possible or not: at least this many, if any
        return {"kind": kind, "label": label, "possible": None, "lower_bound": found.lower_bound}
    after = classifier.table.logits(np.asarray(edited_ids))
    return {
        "kind": kind,
        "label": label,
        "possible": True,
        "count": len(found.rows),
        "lower_bound": found.lower_bound,
        "proof": found.proof,
        "tokens": _tokens(
            classifier.vocab, [int(t) for t in (ids[list(found.rows)] if kind == "remove" else found.rows)]
        ),
        "logits_after": [float(x) for x in after],
        "verdict_after": constants.LABELS[int(np.argmax(after))],
    }


def model_input_edits(classifier, input_ids) -> dict:
    """For each label but the verdict, the fewest tokens to remove and the fewest to add that make
    it the verdict (the table protocol), each edited input re-run through the table."""
    ids = np.asarray(input_ids, dtype=np.int64)
    table, pad = classifier.table, classifier.vocab.index[constants.PAD]
    logits = table.logits(ids)
    verdict = int(np.argmax(logits))
    real = np.flatnonzero(ids != pad)
    removal_gains = (table.g[pad][None, :] - table.g[ids[real]]) / len(ids)
    vocabulary = np.array([v for v in range(len(table.g)) if v != pad])
    addition_gains = (table.g[vocabulary] - table.g[pad][None, :]) / len(ids)
    room = len(ids) - len(real)
    pads = np.flatnonzero(ids == pad)
    targets = []
    for label in range(len(constants.LABELS)):
        if label == verdict:
            continue
        removed = fewest_removals(logits, removal_gains, label)
        added = fewest_additions(logits, addition_gains, label, room)
        edited_removed = ids.copy()
        if removed is not None:
            edited_removed[real[list(removed.rows)]] = pad
            removed = Found(tuple(int(real[r]) for r in removed.rows), removed.lower_bound, removed.proof)
        edited_added = ids.copy()
        if added is not None:
            edited_added[pads[: len(added.rows)]] = vocabulary[list(added.rows)]
            added = Found(tuple(int(vocabulary[r]) for r in added.rows), added.lower_bound, added.proof)
        name = constants.LABELS[label]
        targets.append(
            {
                "label": name,
                "remove": _edit(classifier, ids, "remove", removed, edited_removed, name),
                "add": _edit(classifier, ids, "add", added, edited_added, name),
            }
        )
    return {
        "verdict": constants.LABELS[verdict],
        "logits": [float(x) for x in logits],
        "real_tokens": int(len(real)),
        "pad_tokens": int(room),
        "proof": (
            "For one rival label alone, the fewest edits are the largest gains in its gap, sorted; every rival must "
            "be beaten at once, so no edit smaller than the largest of these counts exists."
        ),
        "targets": targets,
    }
