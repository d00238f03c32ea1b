"""Each passage the classifier read, left out: the model input made again from the claim's stems
and the other passages (so the later passages' words move up into the 128-token window, counted),
and its verdict alone; and what chose the passages, the filter or the fallback."""

from __future__ import annotations

import numpy as np

from claimtrace import constants
from claimtrace.explain.counterfactuals.trace import Tracer

__all__ = ["passage_edits"]


def _window_words(tracer: Tracer, ids) -> int:
    """Real tokens in a model input ([CLS] and [SEP] included)."""
    pad = tracer.build.classifier().vocab.index[constants.PAD]
    return sum(1 for i in ids if i != pad)


def passage_edits(tracer: Tracer, claim_stems: str, record: dict) -> dict:
    """Every returned passage left out in turn, its verdict re-run.

    Parameters
    ----------
    tracer : Tracer
    claim_stems : str
        The claim's stems joined (the model input's start).
    record : dict
        The claim's retrieval record (``evidences``, ``fallback``, ``passed``).
    """
    evidences = list(record["evidences"])
    ids, logits = tracer.model_input(claim_stems, evidences)
    verdict = constants.LABELS[int(np.argmax(logits))]
    before_tokens = _window_words(tracer, ids)
    rows = []
    for k, passage_id in enumerate(evidences):
        rest = evidences[:k] + evidences[k + 1 :]
        after_ids, after_logits = tracer.model_input(claim_stems, rest)
        after = constants.LABELS[int(np.argmax(after_logits))]
        own = tracer.stems_of(passage_id)
        rows.append(
            {
                "id": passage_id,
                "rank": k + 1,
                "words": 0 if own is None else len(own.split()),
                "tokens_after": _window_words(tracer, after_ids),
                # words of the later passages that were past the window and now are read
                "moved_in": max(
                    0, _window_words(tracer, after_ids) - before_tokens + _read_of(tracer, claim_stems, evidences, k)
                ),
                "logits_after": list(after_logits),
                "verdict_after": after,
                "changes": after != verdict,
            }
        )
    return {
        "verdict": verdict,
        "decided_by": "fallback" if record["fallback"] else "filter",
        "passed": record.get("passed"),
        "tokens": before_tokens,
        "passages": rows,
        "changing": [r["id"] for r in rows if r["changes"]],
    }


def _read_of(tracer: Tracer, claim_stems: str, evidences: list[str], k: int) -> int:
    """How many of passage ``k``'s words the model read (in the 128-token window) with all six."""
    upto, before = tracer.model_input(claim_stems, evidences[: k + 1]), tracer.model_input(claim_stems, evidences[:k])
    return _window_words(tracer, upto[0]) - _window_words(tracer, before[0])
