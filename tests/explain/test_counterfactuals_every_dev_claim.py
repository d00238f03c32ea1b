"""Every dev claim's counterfactuals on the demo build (words up to one, the fragility shares'
bound): each shown edit, re-run by a path other than the search's, gives the verdict shown; where
the model input is short enough, no smaller edit exists (every subset tried); the dev shares
count these records.

The searches run once for the module, the notebook batches' re-runs shared by their claims
(``BatchRuns``), as ``claimtrace counterfactual --all`` runs them."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from claimtrace import constants
from claimtrace.explain.counterfactuals.batches import BatchRuns
from claimtrace.explain.counterfactuals.fragility import fragility
from claimtrace.explain.counterfactuals.report import SOURCE, compute_claim
from claimtrace.explain.counterfactuals.trace import Tracer
from claimtrace.web.views import walkthrough

#: The largest set of claim words tried: one, the bound of the shares "removing one claim word".
MAX_WORDS = 1
#: Real tokens up to which every subset of a claim's own tokens is tried (2**12 sets at most).
BRUTE_FORCE_TOKENS = 12


@pytest.fixture(scope="module")
def every_dev_claim(demo_build) -> list[dict]:
    runs = BatchRuns(demo_build, "dev", SOURCE)
    claim_ids = demo_build.inputs("dev", SOURCE).claim_ids
    return [compute_claim(demo_build, claim_id, MAX_WORDS, runs) for claim_id in claim_ids]


def test_the_search_covers_every_dev_claim(demo_build, every_dev_claim):
    assert [r["claim_id"] for r in every_dev_claim] == list(demo_build.claims("dev"))
    stored = demo_build.verdicts("dev")
    for result in every_dev_claim:
        assert result["verdict"] == stored[result["claim_id"]][SOURCE]["alone"]["verdict"]


def test_every_word_edit_retraced_by_the_live_page_gives_the_shown_verdict(demo_build, every_dev_claim):
    """The live page's own trace (the walkthrough), not the search's tracer."""
    checked = 0
    for result in every_dev_claim:
        words = result["words"]
        assert words["smallest"] in (None, 1) and len(words["edits"]) <= words["count"]
        for edit in words["edits"]:
            shown = walkthrough.assemble(demo_build, edit["text"])["classifier"]["alone"]["verdict"]
            assert edit["verified_verdict"] == edit["verdict_after"] == shown != result["verdict"], result["claim_id"]
            checked += 1
    assert checked > 0


def _apply(classifier, ids: np.ndarray, edit: dict) -> np.ndarray:
    """A model-input edit made from what the page shows (tokens and times), not the search's rows."""
    pad = classifier.vocab.index[constants.PAD]
    edited = ids.copy()
    for shown in edit["tokens"]:
        token = classifier.vocab.index[shown["token"]]
        if edit["kind"] == "remove":
            where = np.flatnonzero(edited == token)[: shown["times"]]
            edited[where] = pad
        else:
            where = np.flatnonzero(edited == pad)[: shown["times"]]
            edited[where] = token
        assert len(where) == shown["times"]
    return edited


def test_every_model_input_edit_rerun_through_the_network_gives_its_label(demo_build, every_dev_claim):
    """Each edit made from its shown tokens and run through the network, the claim alone
    (``forward_calls_alone``: the real forward calls' bits): the label the page says, the logits it
    shows (the table's float64 sums, to float32's precision)."""
    classifier = demo_build.classifier()
    encoded = demo_build.inputs("dev", SOURCE)
    inputs, expected = [], []
    for result in every_dev_claim:
        ids = np.asarray(encoded.input_ids[encoded.claim_ids.index(result["claim_id"])], dtype=np.int64)
        inputs.append(ids)
        expected.append((result["claim_id"], result["model_input"]["verdict"], None))
        for target in result["model_input"]["targets"]:
            for kind in ("remove", "add"):
                edit = target[kind]
                if edit["possible"]:
                    assert sum(t["times"] for t in edit["tokens"]) == edit["count"] >= edit["lower_bound"]
                    inputs.append(_apply(classifier, ids, edit))
                    expected.append((result["claim_id"], target["label"], edit["logits_after"]))
    logits = classifier.forward_calls_alone(np.stack(inputs))
    for row, (claim_id, label, shown) in zip(logits, expected, strict=True):
        assert constants.LABELS[int(np.argmax(row))] == label, claim_id
        if shown is not None:
            np.testing.assert_allclose(row, shown, atol=1e-5)
    # every dev claim has an edit of its model input that gives it another verdict
    assert len(inputs) >= 2 * len(every_dev_claim)


def _fewest_by_every_subset(table, ids: np.ndarray, pad: int, label: int) -> int | None:
    """Every subset of the real tokens made into [PAD]s, smallest first, each edited input scored
    whole by the table (one (sets, 128) call per size)."""
    real = np.flatnonzero(ids != pad)
    for size in range(len(real) + 1):
        sets = list(itertools.combinations(real, size))
        chosen = np.array(sets, dtype=np.int64).reshape(len(sets), size)
        edited = np.repeat(ids[None, :], len(chosen), axis=0)
        edited[np.arange(len(chosen))[:, None], chosen] = pad
        if (np.argmax(table.logits(edited), axis=1) == label).any():
            return size
    return None


def test_on_every_short_dev_claim_no_smaller_removal_exists(demo_build):
    """A dev claim's stems alone (no passage) where they are at most a dozen real tokens: every
    subset of them tried, smallest first, against the search's count."""
    from claimtrace.explain.counterfactuals.tokens import model_input_edits

    classifier = demo_build.classifier()
    pad = classifier.vocab.index[constants.PAD]
    checked = set()
    for claim in demo_build.claims("dev").values():
        ids = np.asarray(classifier.vocab.encode(demo_build.preprocessor.preprocess(claim.text).text()))
        if np.count_nonzero(ids != pad) > BRUTE_FORCE_TOKENS:
            continue
        for target in model_input_edits(classifier, ids)["targets"]:
            label = constants.LABELS.index(target["label"])
            removal = target["remove"]
            expected = _fewest_by_every_subset(classifier.table, ids, pad, label)
            assert (removal["count"] if removal["possible"] else None) == expected, (claim.id, target["label"])
            checked.add(claim.id)
    assert len(checked) >= 40


def test_every_passage_left_out_rerun_gives_the_shown_verdict(demo_build, every_dev_claim):
    """The input with every kept passage is the build's own; each passage left out, a tracer that
    has seen nothing makes the input again and the network is run on it."""
    encoded = demo_build.inputs("dev", SOURCE)
    retrieval = demo_build.retrieval("dev")
    tracer = Tracer(demo_build)
    inputs, rows = [], []
    for result in every_dev_claim:
        claim_id, passages = result["claim_id"], result["passages"]
        evidences = list(retrieval[claim_id]["evidences"])
        assert [p["id"] for p in passages["passages"]] == evidences
        assert passages["decided_by"] == ("fallback" if retrieval[claim_id]["fallback"] else "filter")
        stems = demo_build.preprocessor.preprocess(result["text"]).text()
        ids, _ = tracer.model_input(stems, evidences)
        assert list(ids) == list(encoded.input_ids[encoded.claim_ids.index(claim_id)])
        for row in passages["passages"]:
            inputs.append(tracer.model_input(stems, [e for e in evidences if e != row["id"]])[0])
            rows.append((result, row))
    logits = demo_build.classifier().forward_calls_alone(np.stack(inputs))
    for out, (result, row) in zip(logits, rows, strict=True):
        after = constants.LABELS[int(np.argmax(out))]
        assert row["verified_verdict"] == row["verdict_after"] == after, (result["claim_id"], row["id"])
        assert row["changes"] == (after != result["verdict"])
    assert len(rows) > len(every_dev_claim)


def test_every_batch_rerun_gives_the_builds_notebook_verdict(demo_build, every_dev_claim):
    stored = demo_build.verdicts("dev")
    for result in every_dev_claim:
        batch = result["batch"]
        assert batch["verdict"] == batch["stored_verdict"] == stored[result["claim_id"]][SOURCE]["notebook"]["verdict"]
        assert len(batch["neighbours"]) == batch["batch_size"] - 1
        assert batch["changing"] == [n["id"] for n in batch["neighbours"] if n["verdict_after"] != batch["verdict"]]


def test_the_dev_shares_count_these_records(every_dev_claim):
    shares = fragility(every_dev_claim, MAX_WORDS)["shares"]
    for key, share in shares.items():
        assert share["n"] == len(every_dev_claim)
        assert share["successes"] == sum(bool(r["summary"][key]) for r in every_dev_claim)
        assert 0 <= share["lower"] <= share["estimate"] <= share["upper"] <= 1
