"""The LLM evaluation page's data: the protocol a visitor's own model is run under, and every
labelled claim of a split with what the browser needs to run it there (the claim's text and
gold label, the passages the build's notebook retrieval returned and the gold passages, each
with its id and text, and the notebook classifier's verdicts on both, to pair with).

Everything is read from the build (:class:`claimtrace.workdir.reader.BuildReader`): the retrieved ids
from the retrieval stage, their texts from the build's passages, the gold texts from the
reconstruction the build reads, the verdicts from the classifier stage (notebook protocol,
batches of 16: the verdicts the course's predictions file holds). Nothing is recomputed.
"""

from __future__ import annotations

from claimtrace.constants import LABELS
from claimtrace.evaluation import statistics as S
from claimtrace.evaluation.llm import protocol_constants
from claimtrace.evaluation.llm_score import interval_width

#: The split the page samples from (the protocol's default pool).
SPLIT = "dev"
#: The sample size the page starts with (the protocol's interval note is given at it).
DEFAULT_N = 20
DEFAULT_SEED = 2024
#: Calls the page makes at a time, at first and at most (a visitor's provider may limit the
#: requests a key makes at once; a few are enough to overlap one call's wait with another's).
DEFAULT_CONCURRENCY = 2
MAX_CONCURRENCY = 8

#: Shown with the protocol: the bootstrap the page's figures use (the evaluation layer's).
BOOTSTRAP = {"resamples": S.RESAMPLES, "seed": S.SEED}


def page_protocol() -> dict:
    """The protocol's constants (:func:`claimtrace.evaluation.llm.protocol_constants`, typed
    once) with what the page adds: the labels' order of the stratified sample's ties and the
    bootstrap of its intervals."""
    return {**protocol_constants(), "stratify_order": list(LABELS), "bootstrap": BOOTSTRAP}


#: The audit log page's twin and its page's data: where the browser keeps the log, what a record
#: holds (in this order: the CSV export's columns), the names of the features a call comes from
#: (a record's ``where``), the labels a decision may choose (the log itself never leaves the
#: browser). A typed claim's call has no ``claim_id`` (None): its ``claim_text`` and ``rule`` (the
#: scoring rule its passages were retrieved under; None for a course claim's) say what was asked.
AI_LOG_DATA = {
    "storage": "localStorage claimtrace.llm.audit",
    "kept": 500,
    "where": {
        "evaluation": "evaluation run",
        "claim": "claim page second opinion",
        "typed claim": "typed claim second opinion",
    },
    "labels": list(LABELS),
    "fields": [
        "id",
        "time",
        "where",
        "claim_id",
        "claim_text",
        "rule",
        "condition",
        "provider",
        "base_url",
        "model",
        "prompt_version",
        "system",
        "user",
        "output",
        "status",
        "label",
        "cited_ids",
        "rationale",
        "error",
        "latency_ms",
        "tokens_in",
        "tokens_out",
        "attempts",
        "decision",
        "decided_label",
    ],
    "key": "never stored here: the key has its own slot (claimtrace.llm.key) and every record is scrubbed of it",
}


def half_width(n: int) -> float:
    """About how far a Wilson 95% interval reaches either side of 0.5 at ``n`` claims."""
    return interval_width(n)


def evaluation_data(build, version: str, split: str = SPLIT) -> dict:
    """The evaluation page's data (its JSON twin): the protocol and the split's labelled claims,
    each with its passages' ids; their texts are :func:`passage_texts` (the page holds them; the
    twin leaves them out, so that a static export holds them once).

    Returns
    -------
    dict
        ``{"split", "protocol", "defaults": {"n", "seed", "concurrency", "concurrency_max"},
        "half_width": {n: width},
        "label_counts", "claims": [{"id", "text", "label", "gold", "retrieved",
        "notebook": {"retrieved", "gold"}}], "tool"}``: ``gold`` and ``retrieved`` passage ids,
        ``notebook`` the classifier's verdicts (batches of 16) on each.
    """
    claims = build.claims(split)
    retrieval = build.retrieval(split)
    retrieved_verdicts = build.verdict_table(split, "retrieved")
    gold_verdicts = build.verdict_table(split, "gold")
    rows = []
    counts = dict.fromkeys(LABELS, 0)
    for claim_id, claim in claims.items():
        if claim.label is None:
            continue
        counts[claim.label] += 1
        rows.append(
            {
                "id": claim_id,
                "text": claim.text,
                "label": claim.label,
                "gold": list(claim.evidences),
                "retrieved": list(retrieval[claim_id]["evidences"]),
                "notebook": {
                    "retrieved": retrieved_verdicts[claim_id]["notebook"],
                    "gold": gold_verdicts[claim_id]["notebook"],
                },
            }
        )
    return {
        "split": split,
        "protocol": page_protocol(),
        "defaults": {
            "n": DEFAULT_N,
            "seed": DEFAULT_SEED,
            "concurrency": DEFAULT_CONCURRENCY,
            "concurrency_max": MAX_CONCURRENCY,
        },
        "half_width": {str(n): round(half_width(n), 2) for n in (10, 20, 50, 100, len(rows))},
        "label_counts": counts,
        "claims": rows,
        "tool": f"claimtrace {version}",
    }


def passage_texts(build, data: dict) -> dict[str, str]:
    """Every passage the evaluation page's claims show, id -> text, each once: the retrieved ones
    from the build's passages, the gold ones from the gold reconstruction the build reads."""
    gold_texts = build.gold_texts()
    texts: dict[str, str] = {}
    for claim in data["claims"]:
        for passage_id in claim["retrieved"]:
            if passage_id not in texts:
                texts[passage_id] = build.passage_text(passage_id) or ""
        for passage_id in claim["gold"]:
            texts.setdefault(passage_id, gold_texts.get(passage_id, ""))
    return texts


def second_opinion_data(trace: dict) -> dict | None:
    """What a second opinion needs beyond what the page shows, read off the trace: a course
    claim's (its page) or a typed claim's (the live page); None before the retrieval and
    classifier stages. The passages (their ids, order, texts and which are gold) are those
    section 5 shows, which the browser reads from the page rather than from a second copy (a
    static export is mostly claim pages: every byte here is 1,535 bytes there).

    Returns
    -------
    dict or None
        A course claim: ``{"id", "text", "label", "gold", "notebook": {"retrieved", "gold"}}``,
        its gold passage ids (in the claim's order) and the notebook's verdicts (batches of 16)
        on its retrieved and gold passages. A typed claim: the same with ``id`` and ``label``
        None, no gold passages, ``notebook`` its verdict on the claim alone (a typed claim has
        no batch; the verdict the live page shows), and ``typed`` True with ``rule``, the
        scoring rule its passages were retrieved under.
    """
    head, retrieval, classifier = trace["claim"], trace.get("retrieval", {}), trace.get("classifier", {})
    if retrieval.get("status") != "ok" or classifier.get("status") != "ok":
        return None
    if head.get("kind") == "text":
        return {
            "id": None,
            "text": head["text"],
            "label": None,
            "gold": [],
            "notebook": {"retrieved": classifier["alone"]["verdict"], "gold": None},
            "typed": True,
            "rule": (retrieval.get("rule") or {}).get("name", "notebook"),
        }
    if head.get("kind") != "claim":
        return None
    on_gold = classifier.get("gold_evidence") or {}
    return {
        "id": head["id"],
        "text": head["text"],
        "label": head["label"],
        "gold": list(head.get("gold") or ()),
        "notebook": {"retrieved": classifier["notebook"]["verdict"], "gold": on_gold.get("notebook")},
    }
