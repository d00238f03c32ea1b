"""How fragile the notebook's verdicts are over dev: the share of claims whose verdict one edit of
each kind changes (one claim word, one model-input token removed, one kept passage left out, one
batch-mate taken out), each with its Wilson interval, and how large the smallest edits are."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from claimtrace.evaluation.statistics import wilson

#: The edits counted, the summary's key of each, and what the page calls it.
KINDS = {
    "one_word": "removing one claim word",
    "one_token": "removing one model-input token",
    "one_passage": "leaving out one kept passage",
    "one_neighbour": "taking one neighbour out of its notebook batch",
}

__all__ = ["KINDS", "fragility", "token_bin"]


#: The bins of the smallest model-input edit's size: (largest count, name).
TOKEN_BINS = (
    (1, "1 token"),
    (2, "2 tokens"),
    (3, "3 tokens"),
    (5, "4–5 tokens"),
    (10, "6–10 tokens"),
    (20, "11–20 tokens"),
)
OVER = "over 20 tokens"


def token_bin(count: int) -> str:
    """A smallest model-input edit's size as the distribution bins it."""
    for top, name in TOKEN_BINS:
        if count <= top:
            return name
    return OVER


def fragility(records: Sequence[dict], max_words: int) -> dict:
    """The shares over ``records`` (one per dev claim, each with its ``summary``) with their
    intervals, and the distributions of the smallest edits' sizes."""
    shares = {}
    for kind, name in KINDS.items():
        values = [r["summary"][kind] for r in records if r["summary"][kind] is not None]
        interval = wilson(sum(values), len(values))
        shares[kind] = {"name": name, **interval.to_dict()}
    words = Counter(r["summary"]["smallest_words"] for r in records)
    word_bins = [f"{k} word{'s' if k > 1 else ''}" for k in range(1, max_words + 1)] + [
        f"no set of {max_words} or fewer"
    ]
    tokens = Counter(
        token_bin(r["summary"]["smallest_tokens"]) for r in records if r["summary"]["smallest_tokens"] is not None
    )
    token_bins = [name for _, name in TOKEN_BINS] + [OVER]
    return {
        "claims": len(records),
        "max_words": max_words,
        "shares": shares,
        "smallest_words": [
            {"size": b, "claims": words.get(k + 1 if k < max_words else None, 0)} for k, b in enumerate(word_bins)
        ],
        "smallest_tokens": [{"size": b, "claims": tokens.get(b, 0)} for b in token_bins],
    }
