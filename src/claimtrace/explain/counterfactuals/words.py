"""The smallest sets of a claim's words whose removal changes its verdict, through the whole
pipeline (:class:`~claimtrace.explain.counterfactuals.trace.Tracer`): every set of one word, then
of two, up to the bound, stopping at the first size where some set changes the verdict.

A word whose removal alone leaves the claim's stems as they were (a stopword, a number,
punctuation) changes nothing wherever it goes, since preprocessing reads each word on its own;
sets of two or more words are drawn from the other words, and the page says how many were set
aside so.
"""

from __future__ import annotations

import itertools
from collections import Counter
from urllib.parse import quote

from claimtrace.evaluation.sweep import Rule
from claimtrace.explain.counterfactuals.trace import Traced, Tracer
from claimtrace.explain.retrieval import NOTEBOOK_RULE

#: The largest set of words tried by default.
MAX_WORDS = 3
#: Edits of one size listed in full (the count says how many there were).
SHOWN = 10

__all__ = ["word_edits", "changes", "live_link", "MAX_WORDS", "SHOWN"]


def live_link(text: str, rule: Rule = NOTEBOOK_RULE) -> str:
    """The live page tracing ``text`` under ``rule``, relative to the site's root (the notebook's
    rule is the page's own, named by no field)."""
    named = "" if rule == NOTEBOOK_RULE else "&rule=" + quote(rule.name, safe="")
    return "live.html?text=" + quote(text, safe="") + named


def changes(before: Traced, after: Traced) -> dict:
    """What an edit changed on the way: stems (tags) gone, passages gone and come, the fallback."""
    lost = Counter(before.tags.split()) - Counter(after.tags.split())
    gained = Counter(after.tags.split()) - Counter(before.tags.split())
    return {
        "tags_removed": sorted(lost.elements()),
        "tags_added": sorted(gained.elements()),
        "passages_left": [p for p in before.evidences if p not in after.evidences],
        "passages_came": [p for p in after.evidences if p not in before.evidences],
        "fallback_before": before.fallback,
        "fallback_after": after.fallback,
        "logits_after": list(after.logits),
        "verdict_after": after.verdict,
    }


def _without(words: list[str], positions: tuple[int, ...]) -> str:
    dropped = set(positions)
    return " ".join(w for k, w in enumerate(words) if k not in dropped)


def word_edits(tracer: Tracer, text: str, max_words: int = MAX_WORDS, shown: int = SHOWN) -> dict:
    """Every set of the claim's words up to ``max_words`` removed, smallest first; the sets of the
    smallest size that change the verdict, each re-traced and with what changed."""
    words = text.split()
    before = tracer.trace(text)
    singles = {(k,): tracer.trace(_without(words, (k,))) for k in range(len(words))}
    inert = [k for (k,), traced in singles.items() if traced.stems == before.stems]
    active = [k for k in range(len(words)) if k not in inert]
    tried, found, size_found = len(singles), [], None
    for size in range(1, max(0, min(max_words, len(words))) + 1):
        pool = range(len(words)) if size == 1 else active
        for positions in itertools.combinations(pool, size):
            traced = singles[positions] if size == 1 else tracer.trace(_without(words, positions))
            tried += size > 1
            if traced.verdict != before.verdict:
                found.append((positions, traced))
        if found:
            size_found = size
            break
    return {
        "verdict": before.verdict,
        "max_words": max_words,
        "words": words,
        "inert_words": len(inert),
        "sets_tried": tried,
        "smallest": size_found,
        "count": len(found),
        "edits": [_edit(words, positions, before, traced, tracer.rule) for positions, traced in found[:shown]],
    }


def _edit(words: list[str], positions: tuple[int, ...], before: Traced, after: Traced, rule: Rule) -> dict:
    edited = _without(words, positions)
    return {
        "removed": [words[k] for k in positions],
        "positions": list(positions),
        "text": edited,
        **changes(before, after),
        "link": live_link(edited, rule),
    }
