"""What is odd about a predictions file: one finding per oddity, each with its count, the first
claim ids and a line of words, said beside the file's score (the CLI, the JSON, the compare
page).

The course's scorer scores many files a reader would question (:mod:`.submission`): this names
what it did with each, and what it cost where that can be measured (an id repeated in a list
against the list without repeats; more than six evidences against the same list cut to six).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from claimtrace.constants import EVIDENCE_PASSAGES, LABELS, MAX_EVIDENCES, SPLITS
from claimtrace.data import files as data_layer
from claimtrace.data.files import Claim
from claimtrace.evaluation import llm as L
from claimtrace.evaluation.llm_score import width_note
from claimtrace.evaluation.scorer import evidence_f, predictions_bytes
from claimtrace.evaluation.submission import (
    Found,
    Scored,
    Submission,
    find_split,
    read_submission,
    renamed_submission,
    score_of_record,
)

#: How many claim ids a finding names.
SHOWN = 5
#: A course passage id: ``evidence-<n>``, n below the corpus's size.
COURSE_ID = re.compile(r"evidence-(0|[1-9][0-9]*)")
#: The keys of an entry in the course's shape.
SHAPE_KEYS = ("claim_text", "claim_label", "evidences")


@dataclass(frozen=True)
class Finding:
    """One oddity of a file: ``code`` (stable, for tests and filters), ``count`` (claims or ids),
    ``claims`` (the first claim ids), ``text`` (the line said)."""

    code: str
    count: int
    claims: tuple[str, ...]
    text: str

    def to_dict(self) -> dict:
        return {"code": self.code, "count": self.count, "claims": list(self.claims), "text": self.text}


def _ids(ids) -> tuple[str, ...]:
    return tuple(list(ids)[:SHOWN])


def _named(ids) -> str:
    ids = list(ids)
    shown = ", ".join(ids[:SHOWN])
    return shown + (f" and {len(ids) - SHOWN} more" if len(ids) > SHOWN else "")


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _finding(code: str, ids, text: str, count: int | None = None) -> Finding:
    ids = list(ids)
    return Finding(code, len(ids) if count is None else count, _ids(ids), f"{text} ({_named(ids)})" if ids else text)


@dataclass(frozen=True)
class Context:
    """What a file is audited against: the split it was found to be of and every split's claims,
    the course baseline file's evidences (dev) and the stopwords (for claim texts)."""

    found: Found
    splits: Mapping[str, Mapping[str, Claim]]
    baseline: Mapping[str, tuple[str, ...]] | None = None
    stopwords: frozenset[str] | None = None

    @property
    def gold(self) -> Mapping[str, Claim]:
        return self.splits[self.found.split]


def audit(read: Submission, context: Context) -> list[Finding]:
    """Every finding about the file, in the order a reader needs them: what was scored against
    what, what was left out, what the lists hold, what the labels and texts are."""
    checks: list[Callable[[Submission, Context], list[Finding]]] = [
        _llm_findings,
        _split_findings,
        _coverage_findings,
        _key_findings,
        _list_findings,
        _id_findings,
        _label_findings,
        _text_findings,
        _copy_findings,
    ]
    return [finding for check in checks for finding in check(read, context)]


def _split_findings(read: Submission, context: Context) -> list[Finding]:
    found, out = context.found, []
    if found.renamed is not None:
        changed = [cid for cid, course_id in found.renamed.items() if cid != course_id]
        out.append(
            _finding(
                "matched_by_text",
                changed,
                f"ids are not the {found.split} claims' ids, but every claim_text is exactly one {found.split} "
                "claim's text: matched by text (the course's scorer, which matches ids, would score none of them)",
            )
        )
    stem = Path(read.source).stem.lower()
    named = [s for s in SPLITS if re.search(rf"(^|[^a-z]){s}([^a-z]|$)", stem)]
    if named and found.split not in named:
        out.append(
            Finding(
                "named_otherwise",
                found.counts[found.split],
                (),
                f"the file is named {named[0]!r} but holds {found.split} claims: scored against {found.split}",
            )
        )
    for split, count in found.counts.items():
        if split != found.split and count:
            ids = [cid for cid in read.raw if cid in context.splits[split]]
            out.append(_finding("other_split", ids, f"{count} claims of {split}: ignored by the course's scorer"))
    unknown = [
        cid for cid in read.raw if cid != L.RUN_KEY and not any(cid in claims for claims in context.splits.values())
    ]
    if unknown and found.renamed is None:
        out.append(_finding("unknown_ids", unknown, f"{_count(len(unknown), 'id')} of no course claim: ignored"))
    return out


def _llm_findings(read: Submission, context: Context) -> list[Finding]:
    """An LLM run (the reserved key, docs/llm.md) named: its model, prompt, condition and sample,
    and what scoring a sample means for the course's score and the strict one."""
    meta = L.run_metadata(read.raw)
    if meta is None:
        return []
    sample = meta.get("sample") or {}
    sampled = list(sample.get("claim_ids") or [])
    failed = len(meta.get("failed") or {})
    scored = sum(1 for cid in sampled if cid in read.raw)
    rest = len(context.gold) - len(sampled)
    out = [
        Finding("llm_run", scored, (), L.describe_run(meta)),
        Finding(
            "llm_sample",
            scored,
            (),
            f"scored on the {scored} sampled claims answered only: the course's scorer skips the other {rest} "
            f"claims of {context.found.split}"
            + (f" and the {failed} whose call failed (excluded)" if failed else "")
            + ", so its F, A and HM are the sample's; the strict score counts every skipped claim wrong. "
            + width_note(scored),
        ),
    ]
    if meta.get("condition") == "gold":
        out.append(
            Finding("llm_gold", scored, (), "the model was shown the gold passages: an upper bound, not a pipeline")
        )
    return out


def _coverage_findings(read: Submission, context: Context) -> list[Finding]:
    gold, out = context.gold, []
    absent = [cid for cid in gold if cid not in read.raw]
    if absent and L.run_metadata(read.raw) is None:
        out.append(
            _finding(
                "missing",
                absent,
                f"{len(absent)} of the {len(gold)} {context.found.split} claims are missing: the course's scorer "
                "skips them",
            )
        )
    skipped = [cid for cid in gold if cid in read.skipped]
    if skipped:
        reasons = Counter(read.skipped[cid] for cid in skipped)
        said = "; ".join(f"{reason} ({n})" for reason, n in reasons.most_common())
        out.append(_finding("skipped", skipped, f"{len(skipped)} entries skipped by the course's scorer: {said}"))
    return out


def _key_findings(read: Submission, context: Context) -> list[Finding]:
    """Keys outside the course's shape (``evidence``, ``label``), counted by key."""
    by_key: dict[str, list[str]] = {}
    own = SHAPE_KEYS + (("llm",) if L.run_metadata(read.raw) is not None else ())
    for cid, body in read.raw.items():
        if cid in context.gold and isinstance(body, dict):
            for key in body:
                if key not in own:
                    by_key.setdefault(key, []).append(cid)
    return [
        _finding("other_key", ids, f"key {key!r} where the course's shape has {', '.join(SHAPE_KEYS)}: never read")
        for key, ids in sorted(by_key.items())
    ]


def _scored(read: Submission, context: Context) -> dict[str, Claim]:
    return {cid: claim for cid, claim in read.entries.items() if cid in context.gold}


def _list_findings(read: Submission, context: Context) -> list[Finding]:
    scored, gold, out = _scored(read, context), context.gold, []
    labelled = all(claim.label is not None for claim in gold.values())
    not_lists = [cid for cid in scored if not isinstance(read.raw[cid]["evidences"], list)]
    if not_lists:
        out.append(_finding("not_a_list", not_lists, "evidences that are not a list: F 0"))
    empty = [cid for cid, claim in scored.items() if not claim.evidences and cid not in not_lists]
    if empty:
        out.append(_finding("empty", empty, "empty evidence lists: F 0"))
    repeated = [cid for cid, claim in scored.items() if len(set(claim.evidences)) < len(claim.evidences)]
    if repeated:
        cost = _f_cost(scored, gold, lambda ids: tuple(dict.fromkeys(ids))) if labelled else None
        said = "" if cost is None else f"; they cost {cost:.4f} of the file's F (the same lists without repeats)"
        out.append(_finding("repeated_ids", repeated, f"ids repeated in a list, each counted in the precision{said}"))
    long = [cid for cid, claim in scored.items() if len(claim.evidences) > MAX_EVIDENCES]
    if long:
        most = max(len(scored[cid].evidences) for cid in long)
        cost = _f_cost(scored, gold, lambda ids: ids[:MAX_EVIDENCES]) if labelled else None
        said = "" if cost is None else f"; cut to the first {MAX_EVIDENCES}, the file's F would change by {cost:+.4f}"
        out.append(
            _finding(
                "over_six",
                long,
                f"more than {MAX_EVIDENCES} evidences (up to {most}; the course's scorer caps nothing){said}",
            )
        )
    return out


def _f_cost(scored: Mapping[str, Claim], gold: Mapping[str, Claim], change) -> float:
    """How the mean F over the scored claims moves when each list is ``change``d."""
    now = [evidence_f(list(c.evidences), list(gold[cid].evidences)) for cid, c in scored.items()]
    then = [evidence_f(list(change(c.evidences)), list(gold[cid].evidences)) for cid, c in scored.items()]
    return float(np.mean(then) - np.mean(now))


def _id_findings(read: Submission, context: Context) -> list[Finding]:
    scored = _scored(read, context)
    outside: list[str] = []
    claims = []
    for cid, claim in scored.items():
        bad = [e for e in claim.evidences if not _course_id(e)]
        if bad:
            claims.append(cid)
            outside += bad
    if not outside:
        return []
    example = ", ".join(repr(e) for e in dict.fromkeys(outside)) if len(set(outside)) <= 3 else repr(outside[0])
    return [
        _finding(
            "not_course_ids",
            claims,
            f"{len(outside)} evidence ids are not course passage ids (such as {example}): never gold",
            count=len(claims),
        )
    ]


def _course_id(evidence_id: str) -> bool:
    match = COURSE_ID.fullmatch(evidence_id)
    return match is not None and int(match.group(1)) < EVIDENCE_PASSAGES


def _label_findings(read: Submission, context: Context) -> list[Finding]:
    scored, gold, out = _scored(read, context), context.gold, []
    odd = [cid for cid in scored if read.raw[cid]["claim_label"] not in LABELS]
    if odd and L.run_metadata(read.raw) is not None:
        out.append(_finding("llm_unusable", odd, f"{len(odd)} unusable answers (label null): scored wrong"))
    elif odd:
        kinds = Counter(_label_shown(read.raw[cid]["claim_label"]) for cid in odd)
        said = ", ".join(f"{label} ({n})" for label, n in kinds.most_common(3))
        out.append(
            _finding(
                "odd_labels", odd, f"labels outside the four: {said}; F scored, A counts them wrong (no label claimed)"
            )
        )
    labels = Counter(_label_shown(read.raw[cid]["claim_label"]) for cid in scored)
    if len(scored) > 1 and len(labels) == 1:
        (label,) = labels
        label = label.strip("'")
        right = sum(1 for cid, claim in scored.items() if claim.label == gold[cid].label) if _labelled(gold) else None
        a = "" if right is None else f": A = {right / len(scored):.4f}"
        out.append(
            Finding("one_label", len(scored), (), f"one label for every claim: this is the always-{label} baseline{a}")
        )
    if _labelled(gold) and scored and all(claim.label == gold[cid].label for cid, claim in scored.items()):
        out.append(Finding("gold_labels", len(scored), (), "the labels are the gold labels: not a prediction"))
    if _labelled(gold) and scored and all(claim.evidences == gold[cid].evidences for cid, claim in scored.items()):
        out.append(Finding("gold_evidences", len(scored), (), "the evidences are the gold lists: not a prediction"))
    return out


def _label_shown(label: object) -> str:
    return "null" if label is None else repr(label)


def _labelled(gold: Mapping[str, Claim]) -> bool:
    return all(claim.label is not None for claim in gold.values())


def _text_findings(read: Submission, context: Context) -> list[Finding]:
    """claim_text that is not the claim's: by case only, without stopwords, a list, or other."""
    kinds: dict[str, list[str]] = {}
    for cid, body in read.raw.items():
        if cid not in context.gold or not isinstance(body, dict) or "claim_text" not in body:
            continue
        kind = _text_kind(body["claim_text"], context.gold[cid].text, context.stopwords)
        if kind:
            kinds.setdefault(kind, []).append(cid)
    return [
        _finding("claim_text", ids, f"claim_text {kind} (the course's scorer never reads it)")
        for kind, ids in kinds.items()
    ]


def _text_kind(text: object, claim: str, stopwords: frozenset[str] | None) -> str | None:
    if text == claim:
        return None
    if isinstance(text, list):
        return "stored as a list"
    if not isinstance(text, str):
        return f"is {type(text).__name__}, not text"
    if text.lower() == claim.lower():
        return "differs from the claim's by case only"
    if stopwords is not None:
        words = [w for w in re.findall(r"\w+", claim.lower()) if w not in stopwords]
        if re.findall(r"\w+", text.lower()) == words:
            return "is the claim without its stopwords"
    if text.strip() == claim.strip():
        return "differs from the claim's by surrounding spaces"
    return "differs from the claim's"


def _copy_findings(read: Submission, context: Context) -> list[Finding]:
    """Evidences equal to the course baseline file's, by share of claims."""
    if not context.baseline:
        return []
    scored = _scored(read, context)
    copied = [
        cid for cid, claim in scored.items() if cid in context.baseline and claim.evidences == context.baseline[cid]
    ]
    if not copied:
        return []
    share = len(copied) / len(scored)
    return [
        _finding(
            "baseline_evidences", copied, f"evidences equal to the course baseline file's on {share:.0%} of claims"
        )
    ]


# --- a file, scored and audited ------------------------------------------------------------------


@dataclass(frozen=True)
class FileReport:
    """A predictions file read, placed, scored (a labelled split) and audited."""

    read: Submission
    found: Found
    scored: Scored | None
    findings: list[Finding]

    def to_dict(self) -> dict:
        out: dict = {"split": self.found.split, "claims_by_split": self.found.counts}
        if self.found.renamed is not None:
            out["matched_by_text"] = self.found.renamed
        if self.scored is not None:
            out.update(self.scored.summary())
        out["audit"] = [finding.to_dict() for finding in self.findings]
        return out


def report_file(
    value: object,
    source: str,
    splits: Mapping[str, Mapping[str, Claim]],
    split: str | None = None,
    baseline: Mapping[str, tuple[str, ...]] | None = None,
    stopwords: frozenset[str] | None = None,
) -> FileReport:
    """Read a file's JSON ``value`` as the course's scorer does, find its split (or take
    ``split``), score it when the split is labelled, and audit it.

    Raises DataError naming ``source`` only for what the course's scorer cannot score."""
    read = read_submission(value, source)
    found = find_split(read, splits if split is None else {split: splits[split]})
    if split is not None:
        found = Found(
            split, {name: sum(1 for cid in read.raw if cid in claims) for name, claims in splits.items()}, found.renamed
        )
    if found.renamed is not None:
        read = renamed_submission(read, found.renamed)
    gold = splits[found.split]
    scored = score_of_record(read, gold, found.split) if _labelled(gold) else None
    findings = audit(read, Context(found, splits, baseline, stopwords))
    return FileReport(read, found, scored, findings)


def audit_context(data_dir) -> dict:
    """What an audit reads of the data folder beyond the claims: the course baseline file's
    evidences (None without the file) and the stopwords (``report_file``'s keyword arguments)."""
    baseline_path = data_layer.course_file(Path(data_dir), "baseline")
    baseline = None
    if baseline_path.is_file():
        raw = data_layer.json_from_bytes(baseline_path.read_bytes(), str(baseline_path))
        baseline = {cid: tuple(entry.get("evidences") or ()) for cid, entry in raw.items() if isinstance(entry, dict)}
    return {"baseline": baseline, "stopwords": data_layer.load_stopwords(data_dir)}


def course_context(data_dir) -> dict:
    """What a file is read against, from the data folder: every split's claims and
    :func:`audit_context`."""
    splits = {split: data_layer.load_claims(split, data_dir) for split in ("dev", "test", "train")}
    return {"splits": splits, **audit_context(data_dir)}


def report_path(path, data_dir, split: str | None = None) -> FileReport:
    """:func:`report_file` of a predictions file on disk (refused, naming it, when missing, over
    the size cap or not JSON)."""
    value = data_layer.json_from_bytes(predictions_bytes(path), str(path))
    return report_file(value, str(path), split=split, **course_context(data_dir))
