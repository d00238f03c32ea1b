"""Any text through the whole pipeline to its verdict alone, as a typed claim is traced
(preprocessing, tags, the retrieval model, the passages' stems, the model input, the table), with
each stage's result kept by what that stage reads: a counterfactual search traces hundreds of
texts that differ by a word, and most share their tags or their model input.

The stages are the build's own functions, called as the walkthrough calls them for a typed claim
(:mod:`claimtrace.web.views.walkthrough`), the passages retrieved under one scoring rule (the
notebook's unless another is given; :func:`claimtrace.explain.retrieval.retrieval_under`, the
walkthrough's own); a test holds the verdicts equal.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from claimtrace import constants
from claimtrace.evaluation.sweep import Rule
from claimtrace.explain.retrieval import NOTEBOOK_RULE, retrieval_under
from claimtrace.lib.lru import LRU
from claimtrace.models.inputs import join_row

__all__ = ["Traced", "Tracer", "passage_stems"]


def passage_stems(build, passage_id: str, text: str) -> str:
    """One passage's stems, joined: the build's, else its text preprocessed (the same stems)."""
    stored = build.passage_stems(passage_id)
    return stored if stored is not None else build.preprocessor.preprocess(text).text()


@dataclass(frozen=True)
class Traced:
    """A text's way through the pipeline: its stems, tags, the passages retrieved (and whether by
    the fallback), the model input and the verdict alone."""

    text: str
    stems: str
    tags: str
    evidences: tuple[str, ...]
    fallback: bool
    passed: int
    input_ids: tuple[int, ...]
    logits: tuple[float, ...]

    @property
    def verdict(self) -> str:
        return constants.LABELS[int(np.argmax(self.logits))]


class Tracer:
    """Texts through one build's pipeline, their passages retrieved under ``rule``; the retrieval
    of each tag string and the verdict of each model input kept (at most :data:`KEPT` of each)."""

    #: Tag strings and model inputs kept: a claim's every set of up to three words, several times over.
    KEPT = 4096

    def __init__(self, build, rule: Rule = NOTEBOOK_RULE):
        self.build = build
        self.rule = rule
        self._retrieved: LRU[str, dict] = LRU(self.KEPT)
        self._verdicts: LRU[str, tuple] = LRU(self.KEPT)
        self._stems: LRU[str, tuple[str | None]] = LRU(self.KEPT)  # (None,): a passage without text

    def retrieval(self, tags: str) -> dict:
        """A tag string's retrieval record (the build's model, run as for a typed claim, under the
        tracer's rule)."""
        record = self._retrieved.get(tags)
        if record is None:
            retriever = self.build.retriever()
            restemmed, _ = retriever.restemmer.restem_tags(tags)
            result = retrieval_under(retriever, retriever.query(tags, restemmed), self.rule)
            record = retriever.as_record("typed claim", result, ())
            self._retrieved.put(tags, record)
        return record

    def stems_of(self, passage_id: str) -> str | None:
        """A passage's stems (None: a passage the build has no text of)."""
        kept = self._stems.get(passage_id)
        if kept is None:
            text = self.build.passage_text(passage_id)
            kept = (None if text is None else passage_stems(self.build, passage_id, text),)
            self._stems.put(passage_id, kept)
        return kept[0]

    def model_input(self, claim_stems: str, evidences) -> tuple[tuple[int, ...], tuple[float, ...]]:
        """The 128 ids of a claim's stems joined with its passages', and their logits alone."""
        passages = [s for s in (self.stems_of(pid) for pid in evidences) if s is not None]
        text = join_row(claim_stems, passages)
        found = self._verdicts.get(text)
        if found is None:
            classifier = self.build.classifier()
            ids = classifier.vocab.encode(text)
            found = (tuple(ids), tuple(float(x) for x in classifier.table.logits(np.asarray(ids))))
            self._verdicts.put(text, found)
        return found

    def trace(self, text: str) -> Traced:
        """``text`` as a typed claim, through every stage to its verdict alone."""
        pre = self.build.preprocessor.preprocess(text)
        tags = pre.tags()
        record = self.retrieval(tags)
        ids, logits = self.model_input(pre.text(), record["evidences"])
        return Traced(
            text, pre.text(), tags, tuple(record["evidences"]), record["fallback"], record["passed"], ids, logits
        )
