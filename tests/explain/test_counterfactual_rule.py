"""A typed text's counterfactuals under a scoring rule other than the notebook's: the rule path is
one implementation (explain.retrieval), which the walkthrough and the counterfactuals' tracer both
run; every re-trace of a text's counterfactuals uses the rule asked for, and each word edit,
traced again by the live page's own trace under that rule, gives the verdict and the passages
shown; a course claim's stay the notebook's, and a rule that is none is refused."""

from __future__ import annotations

import numpy as np
import pytest

from claimtrace.errors import DataError
from claimtrace.explain.counterfactuals import trace as trace_module
from claimtrace.explain.counterfactuals.report import counterfactuals
from claimtrace.explain.counterfactuals.trace import Tracer
from claimtrace.explain.retrieval import NOTEBOOK_RULE, retrieval_and_scores_under, rule_named
from claimtrace.web.views import walkthrough
from claimtrace.web.views.walkthrough.claim import claim_retrieval
from tests.web.test_live_rule import DIFFERING

SUBMISSION = rule_named("submission")


def _evidences(build, text: str, rule) -> list[str]:
    """The passages the live page's trace retrieves for ``text`` under ``rule``."""
    return [e["id"] for e in walkthrough.assemble(build, text, rule=rule)["retrieval"]["evidences"]]


@pytest.fixture(scope="module")
def under_submission(demo_build) -> tuple[dict, set[str]]:
    """DIFFERING's counterfactuals under the submission's rule, and the rules every retrieval
    of the tracers (the search's and the fresh one's) ran under."""
    used: set[str] = set()
    original = trace_module.retrieval_under

    def spy(retriever, query, rule):
        used.add(rule.name)
        return original(retriever, query, rule)

    patch = pytest.MonkeyPatch()
    patch.setattr(trace_module, "retrieval_under", spy)
    try:
        return counterfactuals(demo_build, text=DIFFERING, rule="submission"), used
    finally:
        patch.undo()


def test_the_walkthrough_and_the_tracer_share_the_rule_path(demo_build):
    pre = demo_build.preprocessor.preprocess(DIFFERING)
    found = claim_retrieval(demo_build, pre, None, None, SUBMISSION)
    assert found.record == Tracer(demo_build, SUBMISSION).retrieval(pre.tags())
    assert found.record["evidences"] != Tracer(demo_build).retrieval(pre.tags())["evidences"]
    retriever = demo_build.retriever()
    # the one scoring pass's columns: the cosine counted once; its mask the rule's own filter,
    # which at the notebook's cosine and overlap bounds keeps what the notebook's pass keeps
    _, columns = retrieval_and_scores_under(retriever, found.query, SUBMISSION)
    np.testing.assert_array_equal(columns.score, columns.cosine + columns.overlap)
    np.testing.assert_array_equal(columns.passing, retriever.scores(found.query).passing)
    np.testing.assert_array_equal(found.scores.passing, columns.passing)
    assert int(columns.passing.sum()) == found.record["passed"]
    _, notebook = retrieval_and_scores_under(retriever, found.query, NOTEBOOK_RULE)
    np.testing.assert_array_equal(notebook.score, retriever.scores(found.query).score)


def test_every_retrace_of_a_texts_counterfactuals_uses_the_rule_asked(demo_build, under_submission):
    result, used = under_submission
    assert used == {"submission"}  # the search's tracer and the fresh tracer of every shown edit
    assert result["kind"] == "text" and result["rule"] == "submission"
    before = _evidences(demo_build, DIFFERING, SUBMISSION)
    assert before != _evidences(demo_build, DIFFERING, NOTEBOOK_RULE)
    assert [row["id"] for row in result["passages"]["passages"]] == before
    edits = result["words"]["edits"]
    assert edits, "the text has word edits that change its verdict under the submission's rule"
    for edit in edits:
        live = walkthrough.assemble(demo_build, edit["text"], rule=SUBMISSION)
        after = [e["id"] for e in live["retrieval"]["evidences"]]
        assert edit["verified_verdict"] == edit["verdict_after"] == live["classifier"]["alone"]["verdict"]
        assert edit["passages_left"] == [p for p in before if p not in after]
        assert edit["passages_came"] == [p for p in after if p not in before]
        assert edit["link"].endswith("&rule=submission")
    notebook = counterfactuals(demo_build, text=DIFFERING)
    assert notebook["rule"] == "notebook" and notebook["words"]["edits"] != edits
    assert all("rule=" not in edit["link"] for edit in notebook["words"]["edits"])


def test_a_course_claim_keeps_the_notebooks_rule(demo_build):
    with pytest.raises(DataError, match=r"^rule: claim-752's counterfactuals follow the build's retrieval"):
        counterfactuals(demo_build, claim_id="claim-752", rule="submission")


@pytest.mark.parametrize("given", [{"text": DIFFERING}, {"claim_id": "claim-752"}])
def test_a_rule_that_is_none_is_refused_naming_the_field_and_the_choices(demo_build, given):
    with pytest.raises(DataError, match=r"^rule: unknown rule 'bm25': expected one of notebook, submission"):
        counterfactuals(demo_build, rule="bm25", **given)
