"""The fewest model-input edits (explain.counterfactuals.tokens) against brute force: every subset
of a short input's tokens removed, every multiset of a small vocabulary's tokens added."""

from __future__ import annotations

import itertools

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from claimtrace.explain.counterfactuals.tokens import fewest_additions, fewest_removals

FIXED = settings(derandomize=True, max_examples=40, deadline=None)


def _wins(logits: np.ndarray, label: int) -> bool:
    return int(np.argmax(logits)) == label


def _brute_removals(logits, gains, label) -> int | None:
    for size in range(len(gains) + 1):
        for chosen in itertools.combinations(range(len(gains)), size):
            if _wins(logits + gains[list(chosen)].sum(axis=0), label):
                return size
    return None


def _brute_additions(logits, gains, label, room) -> int | None:
    for size in range(room + 1):
        for chosen in itertools.combinations_with_replacement(range(len(gains)), size):
            if _wins(logits + gains[list(chosen)].sum(axis=0), label):
                return size
    return None


def _case(seed: int, rows: int):
    rng = np.random.default_rng(seed)
    logits = rng.normal(0, 1, 4)
    gains = rng.normal(0, 0.6, (rows, 4))
    return logits, gains


@FIXED
@given(st.integers(0, 2**32 - 1), st.integers(1, 9), st.integers(0, 3))
def test_fewest_removals_is_the_brute_force_minimum(seed, rows, label):
    logits, gains = _case(seed, rows)
    if _wins(logits, label):
        return
    found = fewest_removals(logits, gains, label)
    expected = _brute_removals(logits, gains, label)
    if expected is None:
        assert found is None
        return
    assert found is not None and found.proof in ("sort", "brute force")
    assert len(found.rows) == expected and len(set(found.rows)) == expected
    assert found.lower_bound <= expected
    assert _wins(logits + gains[list(found.rows)].sum(axis=0), label)


@FIXED
@given(st.integers(0, 2**32 - 1), st.integers(1, 6), st.integers(0, 3), st.integers(1, 5))
def test_fewest_additions_is_within_its_bounds_and_exact_when_sorted(seed, rows, label, room):
    logits, gains = _case(seed, rows)
    if _wins(logits, label):
        return
    found = fewest_additions(logits, gains, label, room)
    expected = _brute_additions(logits, gains, label, room)
    if found is None:  # some rival out of reach within room
        assert expected is None
        return
    if found.proof == "undecided":
        assert expected is None or expected >= found.lower_bound
        return
    assert expected is not None and found.lower_bound <= expected <= len(found.rows)
    if found.proof == "sort":
        assert len(found.rows) == expected
    assert _wins(logits + gains[list(found.rows)].sum(axis=0), label)
