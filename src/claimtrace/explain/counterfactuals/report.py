"""One claim's counterfactuals, every kind, each shown edit re-run: :func:`counterfactuals`, what
``claimtrace counterfactual``, a claim page's section "What would change this verdict" and the
API's trace all give (a course claim's as the build holds it when ``claimtrace counterfactual
--all`` wrote it, else computed here)."""

from __future__ import annotations

import numpy as np

from claimtrace.constants import LABELS
from claimtrace.errors import DataError, Missing
from claimtrace.explain.counterfactuals.batches import BatchRuns, neighbour_edits
from claimtrace.explain.counterfactuals.passages import passage_edits
from claimtrace.explain.counterfactuals.tokens import model_input_edits
from claimtrace.explain.counterfactuals.trace import Tracer
from claimtrace.explain.counterfactuals.words import MAX_WORDS, word_edits
from claimtrace.explain.verdict import located_claim

__all__ = ["counterfactuals", "compute_claim", "compute_text", "summary", "SPLITS"]

#: The splits whose claims the build's counterfactuals cover (``claimtrace counterfactual --all``).
SPLITS = ("dev", "test")
#: The evidence the counterfactuals are of: what the pipeline retrieved, what the site shows.
SOURCE = "retrieved"


def counterfactuals(build, *, claim_id: str | None = None, text: str | None = None, max_words: int = MAX_WORDS) -> dict:
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
    """
    if (claim_id is None) == (text is None):
        raise ValueError("give a claim id or a text, not both")
    if max_words < 1:
        raise DataError(f"--max-words: {max_words} is not a positive number of words")
    if text is not None:
        return compute_text(build, text, max_words)
    stored = _stored(build, claim_id, max_words)
    return stored if stored is not None else compute_claim(build, claim_id, max_words)


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
        "label": claim.label,
        "verdict": stored,
        "model_input": model_input_edits(build.classifier(), encoded.input_ids[encoded.claim_ids.index(claim_id)]),
        "words": word_edits(tracer, claim.text, max_words),
        "passages": passage_edits(tracer, build.preprocessor.preprocess(claim.text).text(), record),
        "batch": neighbour_edits(
            build, split, claim_id, SOURCE, runs if runs is not None and runs.split == split else None
        ),
    }
    return _finished(build, result)


def compute_text(build, text: str, max_words: int = MAX_WORDS) -> dict:
    """Any text's counterfactuals, traced as a typed claim (no gold, no notebook batch)."""
    tracer = Tracer(build)
    traced = tracer.trace(text)
    record = {"evidences": list(traced.evidences), "fallback": traced.fallback, "passed": traced.passed}
    result = {
        "kind": "text",
        "claim_id": None,
        "split": None,
        "text": text,
        "label": None,
        "verdict": traced.verdict,
        "model_input": model_input_edits(build.classifier(), traced.input_ids),
        "words": word_edits(tracer, text, max_words),
        "passages": passage_edits(tracer, traced.stems, record),
        "batch": None,
    }
    return _finished(build, result)


def _finished(build, result: dict) -> dict:
    """Every shown word and passage edit re-run by a tracer that has seen nothing (no cache shared
    with the search), its verdict beside the search's; and the claim's summary."""
    fresh = Tracer(build)
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
