"""The walkthrough's "with the fixes" box: what the notebook's pipeline gives once its bugs are
fixed, for a course claim. BM25's passages beside the notebook retrieval's, and the intended
model's verdicts (read from the build; nothing is run for a page)."""

from __future__ import annotations

from claimtrace.data.files import Claim
from claimtrace.errors import Missing
from claimtrace.evaluation.scorer import evidence_f
from claimtrace.web.views.status import missing
from claimtrace.web.views.walkthrough.claim import Section
from claimtrace.workdir.reader import BuildReader, protocol_verdicts

#: Why the fixes box has no per-word decomposition for the intended model.
NO_TABLE_FOR_INTENDED = (
    "The exact per-word decomposition above is for the notebook's model only: its bugs make each "
    "word's share a fixed table entry. The intended model has real attention between the words, "
    "so it has no such table; only its verdicts are shown."
)
#: Why a typed claim has no fixes box.
COURSE_CLAIMS_ONLY = "The build holds BM25's passages and the intended model's verdicts for the course's claims only."


def fixes_section(build: BuildReader, claim: Claim | None, split: str | None) -> Section:
    """With the fixes: BM25's passages for a course claim (gold marked) and their F beside the
    notebook retrieval's, and the intended model's verdicts on the notebook's evidence, on
    BM25's and (labelled claims) on the gold evidence; the notebook's model on BM25's too.

    Returns ``{"status", "bm25": {"evidences": [{"id", "score", "gold", "text"}], "F"},
    "notebook_F", "verdicts": {model: {source: {protocol: verdict} or None}} or None,
    "verdicts_missing", "note"}``; F is None for an unlabelled claim, a verdict set None where
    the build has none (the intended model on train claims), ``verdicts`` None (and
    ``verdicts_missing`` the reason) before the classifier stage. A typed text has no stored
    BM25 retrieval: ``"status": "none"``.
    """
    if claim is None or split is None:
        return Section({"status": "none", "reason": COURSE_CLAIMS_ONLY})
    labelled = claim.label is not None
    try:
        record = build.bm25_retrieval(split)[claim.id]
        notebook_ids = build.retrieval(split)[claim.id]["evidences"]
    except Missing as err:
        return Section(missing(err.stage, err.reason))
    gold = set(claim.evidences) if labelled else set()
    evidences = [
        {"id": pid, "score": float(score), "gold": pid in gold, "text": build.passage_text(pid)}
        for pid, score in zip(record["evidences"], record["scores"], strict=True)
    ]
    verdicts, verdicts_missing = None, None
    try:  # BM25's passages are worth showing before the classifier stage has run
        verdicts = _fixes_verdicts(build, claim, split)
    except Missing as err:
        verdicts_missing = err.reason
    data = {
        "status": "ok",
        "verdicts_missing": verdicts_missing,
        "bm25": {
            "evidences": evidences,
            "F": evidence_f(record["evidences"], claim.evidences) if labelled else None,
            "gold_retrieved": sum(e["gold"] for e in evidences),
            "gold_total": len(claim.evidences) if labelled else None,
        },
        "notebook_F": evidence_f(notebook_ids, claim.evidences) if labelled else None,
        "verdicts": verdicts,
        "note": NO_TABLE_FOR_INTENDED,
    }
    return Section(data)


def _fixes_verdicts(build: BuildReader, claim: Claim, split: str) -> dict:
    """{model: {source: {protocol: verdict} or None}} of the fixes box (None: not in the build)."""
    sources = (["gold"] if claim.label is not None else []) + ["retrieved", "bm25"]
    more = build.more_verdicts(split)[claim.id]
    stored = {
        "intended": more["intended"],
        "notebook": {**build.verdicts(split)[claim.id], **more["notebook"]},
    }
    # None where the build has no verdict: the intended model is not run on train claims
    return {
        model: {src: protocol_verdicts(by_source[src]) if src in by_source else None for src in sources}
        for model, by_source in stored.items()
    }
