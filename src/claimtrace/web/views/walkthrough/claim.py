"""What a trace computes once for its claim and hands to every section that shows it: the
claim's retrieval (a typed text's under the rule asked for,
:func:`claimtrace.explain.retrieval.retrieval_and_scores_under`) and each passage's stems (read from the build); and
:class:`Section`, what every section gives back."""

from __future__ import annotations

from dataclasses import dataclass, field

from claimtrace.data.files import Claim
from claimtrace.evaluation.sweep import Rule
from claimtrace.explain.retrieval import NOTEBOOK_RULE, retrieval_and_scores_under
from claimtrace.pipeline.preprocess import Preprocessed
from claimtrace.pipeline.retrieval import Query, Retriever, Scores
from claimtrace.workdir.reader import BuildReader


@dataclass(frozen=True)
class Section:
    """One section of the walkthrough: ``data``, what the page shows (JSON-serialisable, with its
    ``"status"``), and ``notes``, what the section adds to the notes at the top of the page."""

    data: dict
    notes: tuple[str, ...] = ()


@dataclass
class ClaimRetrieval:
    """A claim's retrieval, computed once per trace and handed to every section that shows it.

    ``record``: the build's retrieval record (a typed claim's is computed here, ``source``
    ``"computed"``); ``query``: its tag string as the retrieval model reads it, stemmed again
    once (the quirk "stems of stems", :meth:`claimtrace.pipeline.tagging.Restemmer.restem_tags`); ``tag_terms``:
    what each distinct tag became in that pass; ``scores``: every passage it touches, with the
    filter's mask under the record's rule;
    ``rule``: the scoring rule the record and the scores follow (a course claim's: the build's,
    the notebook's; a typed claim's: the one asked for)."""

    retriever: Retriever
    record: dict
    source: str
    query: Query
    tag_terms: dict[str, list[str]]
    scores: Scores
    rule: Rule = NOTEBOOK_RULE


def claim_retrieval(
    build: BuildReader, pre: Preprocessed, claim: Claim | None, split: str | None, rule: Rule = NOTEBOOK_RULE
) -> ClaimRetrieval:
    """The claim's :class:`ClaimRetrieval`: the build's record for a course claim (the notebook's
    rule, as the build ran it), the build's model run once under ``rule`` for any other text.
    Missing before the retrieval stage."""
    retriever = build.retriever()
    tags = build.retrieval(split)[claim.id]["tags"] if claim is not None else pre.tags()
    restemmed, tag_terms = retriever.restemmer.restem_tags(tags)
    query = retriever.query(tags, restemmed)
    if claim is not None:
        record, source, scores = build.retrieval(split)[claim.id], "build", retriever.scores(query)
    else:
        result, scores = retrieval_and_scores_under(retriever, query, rule)
        record, source = retriever.as_record("typed claim", result, ()), "computed"
    return ClaimRetrieval(retriever, record, source, query, tag_terms, scores, rule)


@dataclass
class PassageStems:
    """Each passage's stems (the final preprocessing), found once per trace: the tagging section
    and the model input both read them. A corpus passage's come from the build
    (:meth:`~claimtrace.workdir.reader.BuildReader.passage_stems`), never recomputed; only a passage the
    build did not preprocess (a gold passage outside the corpus, or a build made before
    ``tagging/stems.npz``) is preprocessed here."""

    build: BuildReader
    stems: dict[str, str] = field(default_factory=dict)

    def of_passage(self, passage_id: str, text: str) -> str:
        if passage_id not in self.stems:
            self.stems[passage_id] = passage_stems(self.build, passage_id, text)
        return self.stems[passage_id]


def passage_stems(build: BuildReader, passage_id: str, text: str) -> str:
    """One passage's stems, joined: the build's, else its text preprocessed (the same stems)."""
    stored = build.passage_stems(passage_id)
    return stored if stored is not None else build.preprocessor.preprocess(text).text()
