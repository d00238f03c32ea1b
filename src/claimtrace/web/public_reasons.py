"""A trace, Explore or the methods page as a visitor may see them: a section that is not built
or is damaged names its files relative to the workdir, not where this machine keeps them
(:func:`public_reasons`); :func:`encode_public` gives the JSON bytes of the same."""

from __future__ import annotations

from claimtrace.web.encoding import encode
from claimtrace.web.views.status import public_paths

__all__ = ["public_reasons", "encode_public"]


#: Fields that hold why a piece is not shown (a file and what to run) outside a missing section.
_REASONS = frozenset({"verdicts_missing"})
#: The statuses of a section that is not shown, whose ``"reason"`` names files.
_NOT_SHOWN = ("missing", "damaged")
#: What the compact JSON of a value holds wherever :func:`public_reasons` has something to change:
#: a ``"status"`` key with a not-shown value, or a reason field holding a string. Inside a JSON
#: string a quote is escaped, so these bytes can only be a key and its value.
_REASON_MARKS = (
    *(f'"status":"{status}"'.encode() for status in _NOT_SHOWN),
    *(f'"{field}":"'.encode() for field in sorted(_REASONS)),
)


def public_reasons(value, root):
    """``value`` with every section that is not built or damaged (``{"status": "missing" |
    "damaged", "reason"}``) saying its files relative to the workdir, not where this machine
    keeps them; the rest (claim texts, passages) untouched."""
    if isinstance(value, dict):
        if value.get("status") in _NOT_SHOWN and isinstance(value.get("reason"), str):
            return {**value, "reason": public_paths(value["reason"], root)}
        return {
            key: public_paths(item, root)
            if key in _REASONS and isinstance(item, str)
            else public_reasons(item, root)
            if isinstance(item, _NESTED)
            else item
            for key, item in value.items()
        }
    if isinstance(value, list):
        # A trace holds long lists of numbers and words (ids, shares): only what nests is walked.
        return [public_reasons(item, root) if isinstance(item, _NESTED) else item for item in value]
    return value


_NESTED = (dict, list)


def encode_public(value, root) -> bytes:
    """``encode(public_reasons(value, root))``, walking ``value`` only when its JSON shows a
    section or a reason the walk would change (:data:`_REASON_MARKS`). A typed claim's trace over
    a whole build has none, and the walk through its few hundred dicts was an eighth of its
    trace (bench/bench_typed.py)."""
    body = encode(value)
    if any(mark in body for mark in _REASON_MARKS):
        return encode(public_reasons(value, root))
    return body
