"""The walkthrough: one claim (or any text) through every stage, as the data of its page.

:func:`assemble` gives the page's whole data; each stage's section is a plain function of the
build and what the section is about, in the module of its stage group (``words``: preprocessing
and tagging; ``vectors``: the tag vectors; ``retrieval``: the filter, the sorts and the fallback;
``classifier``: the model input and each token's share; ``lstm``: the notebook's other model's
verdicts; ``fixes``: BM25 and the intended model;
``record``: how often the verdict's pipeline is right over dev, for the summary card).
Each returns a :class:`~claimtrace.web.views.walkthrough.claim.Section`: its JSON-serialisable
data, which the HTML page and the JSON twin both render, and the notes it adds to the top of the
page. Every section carries ``"status"``: ``"ok"``, or ``"missing"`` with a ``"reason"`` naming
what is not built yet (the page says so instead of failing). Nothing here re-implements a stage:
sections read the build and call the stage functions (preprocess, the tagging vectorizer, the
retrieval model, :mod:`claimtrace.explain`) for the one claim they show, and what the claim needs
from them is computed once per trace (``claim``).
"""

from __future__ import annotations

from typing import NamedTuple

from claimtrace.data.files import Claim
from claimtrace.errors import Missing
from claimtrace.evaluation.sweep import Rule
from claimtrace.explain.retrieval import NOTEBOOK_RULE
from claimtrace.web.views.attribution import claim_attribution
from claimtrace.web.views.counterfactuals import claim_section, typed_section
from claimtrace.web.views.status import brief_build_info, missing
from claimtrace.web.views.walkthrough.claim import ClaimRetrieval, PassageStems, claim_retrieval
from claimtrace.web.views.walkthrough.classifier import classifier_section
from claimtrace.web.views.walkthrough.fixes import fixes_section
from claimtrace.web.views.walkthrough.lstm import lstm_section
from claimtrace.web.views.walkthrough.record import record_section
from claimtrace.web.views.walkthrough.retrieval import retrieval_section
from claimtrace.web.views.walkthrough.variants import variants_section
from claimtrace.web.views.walkthrough.vectors import vectorisation_section
from claimtrace.web.views.walkthrough.words import preprocess_section, tagging_section
from claimtrace.workdir.reader import BuildReader

__all__ = ["assemble"]


def assemble(
    build: BuildReader,
    text: str,
    claim: Claim | None = None,
    split: str | None = None,
    position: int | None = None,
    rule: Rule = NOTEBOOK_RULE,
) -> dict:
    """One claim (or any text) through every stage: the page's whole data. A typed text's passages
    are retrieved under ``rule``; a course claim's are the build's (the notebook's rule)."""
    pre = build.preprocessor.preprocess(text)
    gold = list(claim.evidences) if claim is not None and claim.label is not None else []
    try:
        found: ClaimRetrieval | dict = claim_retrieval(build, pre, claim, split, rule)
    except Missing as err:
        found = missing(err.stage, err.reason)
    stems = PassageStems(build)
    retrieval = retrieval_section(build, found, claim, split, gold)
    retrieved = retrieval.data.get("evidences") or []
    tagged = _tagged_passage(gold, retrieved)
    vectors = _vectors_passage(gold, retrieved)
    sections = {  # in the page's order, which is also the order of their notes
        "preprocess": preprocess_section(pre, build.preprocessor.stopwords),
        "retrieval": retrieval,
        "tagging": tagging_section(build, tagged.passage_id, tagged.role, stems),
        "vectorisation": vectorisation_section(build, found, vectors.passage_id, vectors.role),
        "classifier": classifier_section(build, pre, claim, split, retrieval.data, stems),
        "lstm": lstm_section(build, claim, split),
        "fixes": fixes_section(build, claim, split),
        "record": record_section(build, typed=claim is None),
    }
    return {
        "claim": _head(text, claim, split, position, gold),
        "build": brief_build_info(build),
        **{name: section.data for name, section in sections.items()},
        # every retrieval the build ran, scored on this claim's gold passages (dev claims)
        "retrieval_variants": variants_section(build, claim, split),
        # each attribution method's top words beside the exact shares' (dev claims, when computed)
        "attribution": claim_attribution(build, claim.id if claim is not None and split == "dev" else None),
        # what would change the verdict: a course claim's from the build, a typed one's on its own page
        "counterfactuals": typed_section(text, rule) if claim is None else claim_section(build, claim.id, split),
        "notes": [note for section in sections.values() for note in section.notes],
    }


def _head(text: str, claim: Claim | None, split: str | None, position: int | None, gold: list[str]) -> dict:
    """What the page is about: a course claim (its split, position, label and gold passages), or
    a typed text."""
    if claim is None:
        return {"kind": "text", "id": None, "split": None, "position": None, "text": text, "label": None, "gold": []}
    return {
        "kind": "claim",
        "id": claim.id,
        "split": split,
        "position": position,
        "text": claim.text,
        "label": claim.label,
        "gold": gold,
    }


class ShownPassage(NamedTuple):
    """The passage a section shows beside the claim (None: none to show), and why that one."""

    passage_id: str | None
    role: str


def _tagged_passage(gold: list[str], retrieved: list[dict]) -> ShownPassage:
    """The passage whose tags are shown: the first gold one, else the first retrieved one."""
    if gold:
        return ShownPassage(gold[0], "gold")
    return ShownPassage(retrieved[0]["id"] if retrieved else None, "retrieved")


def _vectors_passage(gold: list[str], retrieved: list[dict]) -> ShownPassage:
    """The passage whose vector is shown, the one that tells most: the first retrieved gold
    passage, else the first retrieved one, else the first gold one."""
    for evidence in retrieved:
        if evidence["gold"]:
            return ShownPassage(evidence["id"], "retrieved gold")
    if retrieved:
        return ShownPassage(retrieved[0]["id"], "retrieved")
    return _tagged_passage(gold, retrieved)
