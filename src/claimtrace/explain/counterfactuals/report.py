"""One claim's counterfactuals, every kind, each shown edit re-run: :func:`counterfactuals`, what
``claimtrace counterfactual``, a claim page's section "What would change this verdict" and the
API's trace all give (a course claim's as the build holds it when ``claimtrace counterfactual
--all`` wrote it, else computed here). A typed text's may be retrieved under another scoring rule
than the notebook's (every re-trace then under that rule); a course claim's follow the build's
retrieval, the notebook's rule."""

from __future__ import annotations

import numpy as np

from claimtrace.constants import LABELS
from claimtrace.errors import DataError, Missing
from claimtrace.evaluation.sweep import Rule
from claimtrace.explain.counterfactuals.batches import BatchRuns, neighbour_edits
from claimtrace.explain.counterfactuals.passages import passage_edits
from claimtrace.explain.counterfactuals.tokens import model_input_edits
from claimtrace.explain.counterfactuals.trace import Tracer
from claimtrace.explain.counterfactuals.words import MAX_WORDS, word_edits
from claimtrace.explain.retrieval import NOTEBOOK_RULE, rule_named
from claimtrace.explain.verdict import located_claim

__all__ = ["counterfactuals", "compute_claim", "compute_text", "summary", "SPLITS"]

#: The splits whose claims the build's counterfactuals cover (``claimtrace counterfactual --all``).
SPLITS = ("dev", "test")
#: The evidence the counterfactuals are of: what the pipeline retrieved, what the site shows.
SOURCE = "retrieved"


def counterfactuals(
    build,
    *,
    claim_id: str | None = None,
    text: str | None = None,
    max_words: int = MAX_WORDS,
    rule: str = NOTEBOOK_RULE.name,
) -> dict:
    """A course claim's counterfactuals (``claim_id``) or any text's (``text``), every shown edit
    re-run through the pipeline.

    Parameters
    ----------
    build : claimtrace.workdir.reader.BuildReader
    claim_id : str, optional
        A dev, test or train claim; the build's record when it holds one of this bound.
    text : str, optional
        Any text, traced as a typed claim (no notebook batch).
    max_words : int
        The largest set of the claim's words tried (the bound the page says).
    rule : str
        The scoring rule a text's passages are retrieved under, at every re-trace
        (:data:`claimtrace.evaluation.sweep.RULES`); a course claim's are the notebook's, and
        another rule is refused (a DataError, as an unknown one is).
    """
    if (claim_id is None) == (text is None):
        raise ValueError("give a claim id or a text, not both")
    if max_words < 1:
        raise DataError(f"--max-words: {max_words} is not a positive number of words")
    chosen = _rule(rule)
    if text is not None:
        return compute_text(build, text, max_words, chosen)
    if chosen != NOTEBOOK_RULE:
        raise DataError(
            f"rule: {claim_id}'s counterfactuals follow the build's retrieval, under the notebook's rule; "
            f"the rule {chosen.name!r} is for a typed text"
        )
    stored = _stored(build, claim_id, max_words)
    return stored if stored is not None else compute_claim(build, claim_id, max_words)


def _rule(name) -> Rule:
    """The rule called ``name``, or a DataError naming the field and the choices."""
    try:
        return rule_named(name)
    except ValueError as err:
        raise DataError(f"rule: {err}") from None


def _stored(build, claim_id: str, max_words: int) -> dict | None:
    """The build's record of a claim (None: not written, or written with another bound)."""
    found = build.locate(claim_id)
    if found is None or found[0] not in SPLITS:
        return None
    try:
        record = build.counterfactuals(found[0]).get(claim_id)
    except Missing:
        return None
    return record if record is not None and record["words"]["max_words"] == max_words else None


def compute_claim(build, claim_id: str, max_words: int = MAX_WORDS, runs: BatchRuns | None = None) -> dict:
    """A course claim's counterfactuals: its stored model input and retrieval, its words re-traced
    as a typed claim's, its notebook batch re-run (``runs``: its split's batches run again, shared
    by the claims of a batch)."""
    split, claim = located_claim(build, claim_id, SOURCE)
    encoded = build.inputs(split, SOURCE)
    tracer = Tracer(build)
    record = build.retrieval(split)[claim_id]
    stored = build.verdicts(split)[claim_id][SOURCE]["alone"]["verdict"]
    result = {
        "kind": "claim",
        "claim_id": claim_id,
        "split": split,
        "text": claim.text,
        "rule": NOTEBOOK_RULE.name,
        "label": claim.label,
        "verdict": stored,
        "model_input": model_input_edits(build.classifier(), encoded.input_ids[encoded.claim_ids.index(claim_id)]),
        "words": word_edits(tracer, claim.text, max_words),
        "passages": passage_edits(tracer, build.preprocessor.preprocess(claim.text).text(), record),
        "batch": neighbour_edits(
            build, split, claim_id, SOURCE, runs if runs is not None and runs.split == split else None
        ),
    }
    return _finished(build, result, NOTEBOOK_RULE)


def compute_text(build, text: str, max_words: int = MAX_WORDS, rule: Rule = NOTEBOOK_RULE) -> dict:
    """Any text's counterfactuals, traced as a typed claim (no gold, no notebook batch), its
    passages retrieved under ``rule`` at every trace."""
    tracer = Tracer(build, rule)
    traced = tracer.trace(text)
    record = {"evidences": list(traced.evidences), "fallback": traced.fallback, "passed": traced.passed}
    result = {
        "kind": "text",
        "claim_id": None,
        "split": None,
        "text": text,
        "rule": rule.name,
        "label": None,
        "verdict": traced.verdict,
        "model_input": model_input_edits(build.classifier(), traced.input_ids),
        "words": word_edits(tracer, text, max_words),
        "passages": passage_edits(tracer, traced.stems, record),
        "batch": None,
    }
    return _finished(build, result, rule)


def _finished(build, result: dict, rule: Rule) -> dict:
    """Every shown word and passage edit re-run by a tracer that has seen nothing (no cache shared
    with the search) under the same ``rule``, its verdict beside the search's; and the claim's
    summary."""
    fresh = Tracer(build, rule)
    for edit in result["words"]["edits"]:
        edit["verified_verdict"] = fresh.trace(edit["text"]).verdict
    stems = fresh.trace(result["text"]).stems if result["kind"] == "text" else None
    if stems is None:
        stems = build.preprocessor.preprocess(result["text"]).text()
    evidences = [p["id"] for p in result["passages"]["passages"]]
    for row in result["passages"]["passages"]:
        _, logits = fresh.model_input(stems, [e for e in evidences if e != row["id"]])
        row["verified_verdict"] = _label(logits)
    result["summary"] = summary(result)
    return result


def _label(logits) -> str:
    return LABELS[int(np.argmax(logits))]


def summary(result: dict) -> dict:
    """Whether one edit of each kind changes the verdict, and the smallest edits' sizes."""
    targets = result["model_input"]["targets"]
    token_counts = [t[kind]["count"] for t in targets for kind in ("remove", "add") if t[kind]["possible"]]
    removals = [t["remove"]["count"] for t in targets if t["remove"]["possible"]]
    batch = result["batch"]
    return {
        "one_word": result["words"]["smallest"] == 1,
        "one_token": 1 in removals,
        "one_passage": bool(result["passages"]["changing"]),
        "one_neighbour": None if batch is None else bool(batch["changing"]),
        "smallest_words": result["words"]["smallest"],
        "smallest_tokens": min(token_counts) if token_counts else None,
    }
