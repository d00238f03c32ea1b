"""claimtrace.models.attribution: the forward callable is the protocol "alone", the exact shares
add up to what they explain, and each method on one short input (the notebook's Transformer)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from claimtrace.constants import MAX_LEN, PAD
from claimtrace.models import attribution as A

TEXT = "global temperatur rise co2 emiss ice sheet melt sea level"


@pytest.fixture(scope="module")
def claim(classifier):
    ids = classifier.vocab.encode(TEXT)
    model = classifier.model
    return ids, A.transformer_alone(model), model.embedding.weight, classifier.vocab.index[PAD]


def test_the_forward_callable_is_the_claims_own_forward_call(classifier, claim):
    ids, forward, embedding, _ = claim
    with torch.no_grad():
        logits = forward(embedding[torch.tensor([ids])]).double().numpy()[0]
    np.testing.assert_array_equal(logits, classifier.forward_alone(ids))


def test_distinct_rows_share_the_gradient_of_their_copies():
    x = torch.randn(4, 3, dtype=torch.float64)[torch.tensor([0, 1, 0, 2, 3, 3, 0])].requires_grad_(True)
    rows, where = A._distinct(x, A.row_projection(3))
    assert len(rows) == 4 and torch.equal(rows[where], x)
    (rows[where] ** 3).sum().backward()
    torch.testing.assert_close(x.grad, 3 * x.detach() ** 2)


def test_the_row_projection_is_the_same_on_every_call():
    """Each forward callable makes its own (nothing kept between them), and every one keys rows alike."""
    assert torch.equal(A.row_projection(256), A.row_projection(256)) and A.row_projection(256).dtype == torch.float64


def test_exact_shares_add_up_to_the_lead_over_the_all_pad_input(classifier, claim):
    ids, _, _, pad = claim
    table = classifier.table
    logits, empty = table.logits(np.asarray(ids)), table.logits(np.full(MAX_LEN, pad))
    win, second = A.target_classes(logits)
    shares = A.exact_shares(table.g, ids, pad, win, second)
    assert np.all(shares[np.asarray(ids) == pad] == 0)
    lead = (logits[win] - logits[second]) - (empty[win] - empty[second])
    assert abs(shares.sum() - lead) < 1e-12


def test_every_method_on_a_short_input_against_the_exact_shares(classifier, claim):
    ids, forward, embedding, pad = claim
    found = A.attribute(forward, embedding, ids, pad)
    exact = A.exact_shares(classifier.table.g, ids, pad, found.verdict, found.runner_up)
    difference = found.margin - found.baseline_margin
    assert abs(exact.sum() - difference) < 1e-5  # float32 forward calls against the float64 table
    real = np.asarray(ids) != pad
    for name in A.METHODS:
        assert np.all(found.values[name][~real] == 0), name
        assert found.seconds[name] > 0 and found.cpu_seconds[name] > 0
    # occlusion of an additive function is exact; KernelSHAP's fit recovers it; IG within its steps
    np.testing.assert_allclose(found.values["occlusion"], exact, atol=1e-5)
    np.testing.assert_allclose(found.values["kernel_shap"], exact, atol=1e-4)
    assert abs(found.values["integrated_gradients"].sum() - difference) < 0.01 * abs(difference)


def test_the_sampling_methods_repeat_with_their_seed(claim):
    ids, forward, embedding, pad = claim
    first = A.attribute(forward, embedding, ids, pad, methods=("kernel_shap", "lime"))
    again = A.attribute(forward, embedding, ids, pad, methods=("kernel_shap", "lime"))
    for name in ("kernel_shap", "lime"):
        np.testing.assert_array_equal(first.values[name], again.values[name])


def test_the_intended_model_has_no_per_position_form():
    from claimtrace.models.transformer import build_model

    with pytest.raises(ValueError, match="intended"):
        A.transformer_alone(build_model(vocab_size=10, fixed=True))
