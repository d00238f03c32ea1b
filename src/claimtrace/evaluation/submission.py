"""A predictions file as the course's ``eval.py`` reads it: what it scores, what it skips, and
which split the file is of.

The course's scorer walks the gold claims in sorted order and scores a claim when the file has
an entry for it holding both keys ``claim_label`` and ``evidences``; anything else of the file
is never read. So it scores files that a strict reader would refuse: a label ``null`` or
outside the four (it is simply wrong), evidences that are not a list (F 0), an id repeated in a
list (counted twice in the precision), claims of other splits (ignored), entries lacking a key
(skipped, which raises the averages over the claims kept). It fails (and scores nothing) on a
file that is not a JSON object and on the few entries its own code trips over: an entry of a
gold claim that is a number, ``true``/``false`` or ``null`` (``"claim_label" in 5`` raises), a
string or list naming both keys (then indexed by a key), and a non-empty evidence list holding
a list or an object (``set()`` of it raises).

:func:`read_submission` reads a file's JSON value that way, refusing only what the course's
scorer cannot score; :func:`find_split` says which split a file's claims belong to, matching
renumbered ids by their exact claim text when every entry's text names one claim; and
:func:`score_of_record` scores it, the course's number, with the strict score beside it
(every claim of the split counted, one the file left out as wrong with F 0).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field

from claimtrace.data.files import Claim
from claimtrace.errors import DataError
from claimtrace.evaluation.scorer import Evaluation, evaluate

#: The two keys the course's scorer needs in an entry before it scores the claim.
KEYS = ("claim_label", "evidences")
#: How an evidence id that is not a string is kept: it can never equal a gold id, and it still
#: counts in the precision's denominator, as in the course's scorer.
NOT_AN_ID = "(not an id: {})"


@dataclass
class Submission:
    """A predictions file's JSON object, read as the course's scorer reads it.

    ``entries`` holds every entry the scorer would score (both keys present), any claim id;
    ``skipped`` every other entry, by claim id, with the reason; ``fails`` the entries the
    scorer's own code fails on (refused only when their claim is scored); ``raw`` the object.
    """

    source: str
    raw: dict
    entries: dict[str, Claim] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)
    fails: dict[str, str] = field(default_factory=dict)


def _kind(value: object) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "true/false"}.get(
        type(value), "null" if value is None else "a number"
    )


def read_submission(value: object, source: str) -> Submission:
    """Read a predictions file's JSON ``value`` as the course's scorer does.

    Raises DataError naming ``source`` only when the value is not a JSON object, which the
    course's scorer cannot score at all.
    """
    if not isinstance(value, dict):
        raise DataError(
            f"{source}: the course's scorer cannot score it: expected a JSON object mapping claim ids "
            f"to predictions, got {_kind(value)}"
        )
    read = Submission(source, value)
    for claim_id, body in value.items():
        _read_entry(read, claim_id, body)
    return read


def _read_entry(read: Submission, claim_id: str, body: object) -> None:
    if isinstance(body, dict):
        lacking = [key for key in KEYS if key not in body]
        if lacking:
            read.skipped[claim_id] = f"lacking {' and '.join(lacking)}"
            return
        evidences, problem = _evidences(body["evidences"])
        if problem:
            read.fails[claim_id] = problem
        label = body["claim_label"] if isinstance(body["claim_label"], str) else None
        text = body.get("claim_text") if isinstance(body.get("claim_text"), str) else ""
        read.entries[claim_id] = Claim(claim_id, text, label, evidences)
    elif isinstance(body, (str, list)):
        if all(key in body for key in KEYS):  # the scorer then indexes it by a key, and fails
            read.fails[claim_id] = f"is {_kind(body)} naming {' and '.join(KEYS)}"
        else:
            read.skipped[claim_id] = f"{_kind(body)}, not an object"
    else:  # "claim_label" in 5: the scorer fails
        read.fails[claim_id] = f"is {_kind(body)}"


def _evidences(value: object) -> tuple[tuple[str, ...], str | None]:
    """An entry's evidences as the scorer counts them (a non-list counts as none), and what the
    scorer fails on in them (an unhashable id of a non-empty list), if anything."""
    if not isinstance(value, list):
        return (), None
    kept = []
    for position, evidence_id in enumerate(value):
        if isinstance(evidence_id, (list, dict)):
            return (), f"evidences[{position}] is {_kind(evidence_id)}"
        kept.append(evidence_id if isinstance(evidence_id, str) else NOT_AN_ID.format(json.dumps(evidence_id)))
    return tuple(kept), None


# --- the split a file is of ----------------------------------------------------------------------


@dataclass(frozen=True)
class Found:
    """Which split a file is of: ``split``, how many of the file's ids each split holds
    (``counts``), and ``renamed`` (file id -> course id) when its ids were matched by claim text."""

    split: str
    counts: dict[str, int]
    renamed: dict[str, str] | None = None


def find_split(read: Submission, splits: Mapping[str, Mapping[str, Claim]]) -> Found:
    """The split a file is of: the one in which every entry's ``claim_text`` is exactly one
    claim's text (its ids mapped by text when they are not that claim's); else the split holding
    most of the file's ids (the first of ``splits`` on a tie). DataError naming the first
    unknown id when neither places it.

    Text comes first because renumbered ids (``claim-0``, ``claim-1``, ...) are often real ids
    of another split."""
    counts = {name: sum(1 for cid in read.raw if cid in claims) for name, claims in splits.items()}
    for name, claims in splits.items():
        renamed = _by_text(read.raw, claims)
        if renamed is not None:
            same = all(file_id == course_id for file_id, course_id in renamed.items())
            return Found(name, counts, None if same else renamed)
    if not read.raw:
        raise DataError(f"{read.source}: the file holds no claims")
    best = max(splits, key=lambda name: counts[name])  # max keeps the first of equals
    if 2 * counts[best] >= len(read.raw):
        return Found(best, counts)
    first = next(cid for cid in read.raw if cid not in splits[best])
    raise DataError(
        f"{read.source}: claim {first!r} is not a claim of {best} (which holds {counts[best]} of the file's "
        f"{len(read.raw)} ids, the most of {', '.join(splits)}), and the claim texts do not name one split's claims"
    )


def _by_text(raw: dict, claims: Mapping[str, Claim]) -> dict[str, str] | None:
    """file id -> course id when every entry's claim_text equals exactly one claim's text."""
    by_text: dict[str, list[str]] = {}
    for claim in claims.values():
        by_text.setdefault(claim.text, []).append(claim.id)
    renamed = {}
    if not raw:
        return None
    for file_id, body in raw.items():
        text = body.get("claim_text") if isinstance(body, dict) else None
        matches = by_text.get(text, []) if isinstance(text, str) else []
        if len(matches) != 1:
            return None
        renamed[file_id] = matches[0]
    return renamed if len(set(renamed.values())) == len(renamed) else None


def renamed_submission(read: Submission, renamed: Mapping[str, str]) -> Submission:
    """The submission with its ids replaced by the course's (a file matched by claim text)."""

    def with_course_ids(mapping: Mapping[str, object]) -> dict:
        return {renamed[cid]: value for cid, value in mapping.items()}

    entries = {renamed[cid]: Claim(renamed[cid], c.text, c.label, c.evidences) for cid, c in read.entries.items()}
    return Submission(
        read.source, with_course_ids(read.raw), entries, with_course_ids(read.skipped), with_course_ids(read.fails)
    )


# --- the score of record -----------------------------------------------------------------------


@dataclass(frozen=True)
class Scored:
    """A file's score of record (the course's scorer's), and the strict score beside it."""

    course: Evaluation
    strict: Evaluation
    split: str

    def summary(self) -> dict:
        return {
            **self.course.summary(),
            "strict": {key: getattr(self.strict, key) for key in ("F", "A", "HM", "claims")},
            "strict_note": strict_note(self.course, self.strict),
        }


def score_of_record(read: Submission, gold: Mapping[str, Claim], split: str) -> Scored:
    """The course's F, A and HM of the file on ``gold`` (its skipping rules), and the strict
    score (every gold claim counted; one the scorer skipped as wrong with F 0).

    Raises DataError naming the file and claim when the course's scorer would fail on an entry
    it reads."""
    for claim_id in sorted(gold):
        if claim_id in read.fails:
            raise DataError(
                f"{read.source}: claim {claim_id!r} {read.fails[claim_id]}: the course's scorer fails on it, "
                "so this file has no score"
            )
    scored = {cid: claim for cid, claim in read.entries.items() if cid in gold}
    course_score = evaluate(scored, gold, source=read.source, skip_missing=True)
    course_score.extra = sorted(set(read.raw) - set(gold))
    return Scored(course_score, strict_score(scored, gold, read.source), split)


def strict_score(scored: Mapping[str, Claim], gold: Mapping[str, Claim], source: str = "predictions") -> Evaluation:
    """The strict score: every gold claim counted, one without a scored entry as wrong with F 0."""
    empty = {cid: Claim(cid, "", None, ()) for cid in gold if cid not in scored}
    return evaluate({**scored, **empty}, gold, source=source)


def strict_note(course_score: Evaluation, strict: Evaluation) -> str | None:
    """The skipping's effect in words ("skipping 12 claims raised A by 0.0310 and F by 0.0042"),
    None when nothing was skipped."""
    skipped = len(course_score.skipped)
    if not skipped:
        return None
    raised = [
        f"{key} by {getattr(course_score, key) - getattr(strict, key):.4f}"
        for key in ("A", "F", "HM")
        if getattr(course_score, key) != getattr(strict, key)
    ]
    what = f"raised {' and '.join(raised)}" if raised else "changed nothing"
    return (
        f"skipping {skipped} claim{'s' if skipped != 1 else ''} {what} (the strict score counts every "
        f"claim of the split, a skipped one as wrong with F 0)"
    )
