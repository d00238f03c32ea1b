"""What a trace computes once for its claim and hands to every section that shows it: the
claim's retrieval (one kernel pass) and each passage's stems (read from the build); and
:class:`Section`, what every section gives back."""

from __future__ import annotations

from dataclasses import dataclass, field

from claimtrace.constants import COSINE_THRESHOLD, OVERLAP_THRESHOLD
from claimtrace.data.files import Claim
from claimtrace.evaluation.sweep import RULES, Rule
from claimtrace.pipeline.preprocess import Preprocessed
from claimtrace.pipeline.retrieval import Query, Retriever, Scores, Thresholds
from claimtrace.workdir.reader import BuildReader

#: The notebook's own rule (:data:`claimtrace.evaluation.sweep.RULES`), which every course
#: claim's retrieval in a build follows.
NOTEBOOK_RULE = RULES[0]


def rule_named(name: str) -> Rule:
    """The rule of :data:`~claimtrace.evaluation.sweep.RULES` called ``name``; a ValueError
    naming the choices for any other."""
    for rule in RULES:
        if rule.name == name:
            return rule
    raise ValueError(f"unknown rule {name!r}: expected one of {', '.join(r.name for r in RULES)}")


def rule_thresholds(rule: Rule) -> Thresholds:
    """The query's three bounds under ``rule``: the notebook's cosine and overlap bounds, the
    rule's own score bound."""
    return Thresholds(COSINE_THRESHOLD, OVERLAP_THRESHOLD, rule.score_threshold)


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
    what each distinct tag became in that pass; ``scores``: every passage it touches, from the
    one kernel pass (:meth:`claimtrace.pipeline.retrieval.Retriever.retrieve_with_scores`);
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
    elif rule == NOTEBOOK_RULE:
        result, scores = retriever.retrieve_with_scores(query)  # one kernel pass
        record, source = retriever.as_record("typed claim", result, ()), "computed"
    else:
        result = retriever.retrieve(query, rule.cosine_in_score, thresholds=rule_thresholds(rule))
        record, source = retriever.as_record("typed claim", result, ()), "computed"
        scores = _rule_scores(retriever, query, rule, result.passed)
    return ClaimRetrieval(retriever, record, source, query, tag_terms, scores, rule)


def _rule_scores(retriever: Retriever, query: Query, rule: Rule, passed: int) -> Scores:
    """The columns under a rule other than the notebook's, with the filter's mask: the mask of
    :meth:`Retriever.scores` holds the notebook's score bound (1.5), which binds once the cosine is
    counted once, while at the notebook's cosine and overlap bounds each rule's own score bound
    is implied (0.55 + 0.5 > 1.0, the sweep's docstring), so the notebook's pass gives the mask
    of every rule; the retrieval's own count of passing rows checks it."""
    columns = retriever.scores(query, rule.cosine_in_score)
    passing = retriever.scores(query).passing
    if int(passing.sum()) != passed:
        raise AssertionError(f"the filter's mask counts {int(passing.sum())} rows, the retrieval {passed}")
    return columns._replace(passing=passing)


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
