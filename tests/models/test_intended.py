"""The intended classifier: the notebook's model with its two bugs fixed and nothing else
(``TransformerConfig(fixed=True)``) and its shipped float16 checkpoint (its training: test_train.py).

Every forward-pass test runs in eval mode (dropout off) under no_grad, and compares the two
variants on the same weights: the fix shows as a contrast with the notebook's model."""

from __future__ import annotations

import os

# Before torch is imported: threads sleep at barriers rather than spin (constants.OMP_WAIT_POLICY).
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import json
import math

import pytest
import torch

from claimtrace import constants
from claimtrace.assets import ASSETS_DIR
from claimtrace.models.config import TransformerConfig
from claimtrace.models.intended import (
    INTENDED_CHECKPOINT,
    INTENDED_PROVENANCE,
    checkpoint_metadata,
    load_intended_model,
)
from claimtrace.models.table import sha256_file
from claimtrace.models.transformer import (
    TransformerClassifier,
    build_model,
    notebook_logits,
    sinusoidal_table,
)

#: "Unchanged" for outputs that should not depend on a change: bit-exact is expected, 1e-6 allowed.
SAME = dict(atol=1e-6, rtol=0)


def twin_models(seed: int = 3) -> tuple[TransformerClassifier, TransformerClassifier]:
    """The notebook's model and the intended one on the same random weights, eval mode."""
    torch.manual_seed(seed)
    notebook = build_model().eval()
    intended = build_model(fixed=True).eval()
    intended.load_state_dict(notebook.state_dict(), strict=True)
    return notebook, intended


def random_batch(seed: int = 4, batch: int = 4) -> torch.Tensor:
    """Ids (batch, 128) of real tokens (no specials), so that every position is a distinct word."""
    generator = torch.Generator().manual_seed(seed)
    return torch.randint(4, constants.VOCAB_SIZE, (batch, constants.MAX_LEN), generator=generator)


@torch.no_grad()
def hidden(model: TransformerClassifier, ids: torch.Tensor) -> torch.Tensor:
    return model.encoder_output(ids)  # (batch, 128, 256)


# --- What fixed=True fixes, and what it keeps -----------------------------------------------------


def test_intended_encoder_is_batch_first_and_otherwise_the_notebooks():
    notebook, intended = twin_models()
    for ours, theirs in zip(intended.transformer_encoder.layers, notebook.transformer_encoder.layers):
        assert ours.self_attn.batch_first is True and theirs.self_attn.batch_first is False
        assert ours.norm_first is theirs.norm_first is False
        assert ours.activation is theirs.activation is torch.nn.functional.relu
        assert ours.linear1.out_features == theirs.linear1.out_features == constants.FF_DIM
        assert ours.dropout.p == ours.dropout1.p == ours.dropout2.p == ours.self_attn.dropout == constants.DROPOUT
    assert intended.dropout.p == constants.DROPOUT


def test_intended_keeps_the_sqrt_128_scale_and_adds_pe_by_word():
    """The encoder's input is embedding * sqrt(src.size(1)) = sqrt(128) (the notebook's quirk,
    kept) plus pe row t at position t for every claim of the batch."""
    _, intended = twin_models()
    ids = random_batch()
    seen = []
    handle = intended.transformer_encoder.register_forward_pre_hook(lambda module, args: seen.append(args[0]))
    with torch.no_grad():
        intended(ids)
    handle.remove()
    expected = intended.embedding(ids) * math.sqrt(128) + sinusoidal_table(TransformerConfig())[:128, 0].unsqueeze(0)
    torch.testing.assert_close(seen[0], expected, atol=0, rtol=0)


def test_same_seed_same_initial_weights_in_both_variants():
    torch.manual_seed(11)
    notebook = build_model().state_dict()
    torch.manual_seed(11)
    intended = build_model(fixed=True).state_dict()
    assert all(torch.equal(notebook[name], intended[name]) for name in notebook)


# --- Attention: within a claim, not across the batch ----------------------------------------------


def test_intended_attention_mixes_the_words_of_a_claim():
    """One word of claim 0 changed: claim 0's other positions move (they attend to it)."""
    _, intended = twin_models()
    ids = random_batch()
    changed = ids.clone()
    changed[0, 5] = (ids[0, 5] + 1 - 4) % (constants.VOCAB_SIZE - 4) + 4
    before, after = hidden(intended, ids), hidden(intended, changed)
    others = [t for t in range(constants.MAX_LEN) if t != 5]
    moved = (after[0, others] - before[0, others]).abs().amax(dim=1)  # one figure per position
    assert (moved > 1e-4).all()
    torch.testing.assert_close(after[1:], before[1:], **SAME)  # and the other claims do not


def test_intended_claim_does_not_see_its_batch_mates():
    """Claim 1 replaced by another claim: nothing of claim 0 moves."""
    _, intended = twin_models()
    ids = random_batch()
    changed = ids.clone()
    changed[1] = random_batch(seed=5, batch=1)[0]
    torch.testing.assert_close(hidden(intended, changed)[0], hidden(intended, ids)[0], **SAME)
    with torch.no_grad():
        torch.testing.assert_close(intended(changed)[0], intended(ids)[0], **SAME)
        # and a claim in a batch of 16 is the claim alone
        torch.testing.assert_close(intended(random_batch(batch=16))[:4], intended(ids), **SAME)


def test_notebook_attention_mixes_the_batch_instead():
    """The contrast, on the same weights: in the notebook's model changing claim 1 moves claim 0,
    and changing one word of claim 0 moves no other position of claim 0."""
    notebook, _ = twin_models()
    ids = random_batch()
    neighbour = ids.clone()
    neighbour[1] = random_batch(seed=5, batch=1)[0]
    assert (hidden(notebook, neighbour)[0] - hidden(notebook, ids)[0]).abs().amax(dim=1).min() > 1e-4
    word = ids.clone()
    word[0, 5] = (ids[0, 5] + 1 - 4) % (constants.VOCAB_SIZE - 4) + 4
    before, after = hidden(notebook, ids), hidden(notebook, word)
    others = [t for t in range(constants.MAX_LEN) if t != 5]
    torch.testing.assert_close(after[:, others], before[:, others], **SAME)
    assert (after[1:, 5] - before[1:, 5]).abs().amax() > 1e-4  # position 5 of the other claims moves


# --- Positional encoding: by word position -------------------------------------------------------


def test_intended_swapping_two_claims_permutes_the_outputs():
    notebook, intended = twin_models()
    ids = random_batch()
    swapped = ids[[1, 0, 2, 3]]
    with torch.no_grad():
        torch.testing.assert_close(intended(swapped), intended(ids)[[1, 0, 2, 3]], **SAME)
        torch.testing.assert_close(hidden(intended, swapped), hidden(intended, ids)[[1, 0, 2, 3]], **SAME)
        # the notebook's model marks a claim's place in its batch: swapping changes the verdicts' inputs
        assert not torch.allclose(notebook(swapped), notebook(ids)[[1, 0, 2, 3]], atol=1e-4)


def test_intended_word_order_matters():
    """pe by word position: the same words in another order give another output (in the
    notebook's model a claim's logits ignore word order, tests/models/test_transformer.py)."""
    _, intended = twin_models()
    ids = random_batch()
    reordered = ids[:, torch.arange(constants.MAX_LEN - 1, -1, -1)]
    with torch.no_grad():
        assert not torch.allclose(intended(reordered), intended(ids), atol=1e-4)


# --- The shipped checkpoint ------------------------------------------------------------------------


def test_shipped_intended_checkpoint_file_and_provenance():
    size = INTENDED_CHECKPOINT.stat().st_size
    assert size <= 25_000_000
    provenance = json.loads(INTENDED_PROVENANCE.read_text(encoding="utf-8"))
    assert provenance["variant"] == "intended" and provenance["dtype"] == "float16"
    assert "not claimed" in provenance["exactness"].lower()
    assert provenance["files"][constants.CHECKPOINT_FILES["intended"]] == sha256_file(INTENDED_CHECKPOINT)
    assert provenance["files"][constants.VOCAB_FILE] == sha256_file(ASSETS_DIR / constants.VOCAB_FILE)
    assert [h["epoch"] for h in provenance["history"]] == list(range(1, provenance["epochs"] + 1))
    assert provenance["seed"] == constants.SHIPPED_SEED
    metadata = checkpoint_metadata(INTENDED_CHECKPOINT)
    assert metadata["variant"] == "intended" and metadata["epoch"] == str(provenance["best_epoch"])
    from safetensors.torch import load_file

    assert all(t.dtype == torch.float16 for t in load_file(str(INTENDED_CHECKPOINT)).values())


def test_shipped_intended_checkpoint_loads(data):
    model = load_intended_model()
    assert model.config.fixed is True and not model.training
    state = model.state_dict()
    assert state["embedding.weight"].shape == (constants.VOCAB_SIZE, constants.EMBED_DIM)
    assert state["fc_out.weight"].shape == (len(constants.LABELS), constants.EMBED_DIM)
    assert state["transformer_encoder.layers.5.linear1.weight"].shape == (constants.FF_DIM, constants.EMBED_DIM)
    assert all(t.dtype == torch.float32 for t in state.values())
    assert torch.equal(state["pos_encoder.pe"], sinusoidal_table(TransformerConfig()))  # the constant, restored exactly
    # its recorded dev accuracy is the float16 checkpoint's own
    provenance = json.loads(INTENDED_PROVENANCE.read_text(encoding="utf-8"))
    correct = int(
        (notebook_logits(model, torch.from_numpy(data.dev.input_ids)).argmax(1).numpy() == data.dev.labels).sum()
    )
    assert correct == provenance["best_dev_correct_float16"]
    assert provenance["accuracy_with_gold_evidence"]["dev"]["notebook"]["correct"] == correct


def test_intended_loader_refuses_the_notebook_checkpoint():
    with pytest.raises(ValueError, match="not the intended one"):
        load_intended_model(ASSETS_DIR / constants.CHECKPOINT_FILE)


def test_intended_classifier_large_batches_agree_with_one_claim_and_batches_of_16(data):
    """The build computes each distinct input once, in batches of 16, for both protocols: within
    float32's agreement of a call of one claim and of the notebook's batches of 16, with the same
    verdicts; computed again, the same bits."""
    import numpy as np

    from claimtrace.models.intended import IntendedClassifier
    from claimtrace.models.transformer import alone_logits, torch_threads

    classifier = IntendedClassifier()
    ids = data.dev.input_ids
    stored = classifier.logits(np.concatenate([ids, ids[:20]]), "alone")
    assert np.array_equal(stored[-20:], stored[:20])  # one computation per distinct input
    assert np.array_equal(classifier.logits(ids, "notebook"), stored[: len(ids)])
    with torch_threads(1):
        in_sixteens = notebook_logits(classifier.model, torch.from_numpy(ids)).double().numpy()
        sample = ids[::8]
        one_by_one = alone_logits(classifier.model, torch.from_numpy(sample)).double().numpy()
    assert np.abs(stored[: len(ids)] - in_sixteens).max() < constants.FLOAT32_AGREEMENT
    assert (stored[: len(ids)].argmax(1) == in_sixteens.argmax(1)).all()
    assert np.abs(stored[: len(ids)][::8] - one_by_one).max() < constants.FLOAT32_AGREEMENT
    assert (stored[: len(ids)][::8].argmax(1) == one_by_one.argmax(1)).all()
    assert np.array_equal(IntendedClassifier(classifier.model).logits(ids, "alone"), stored[: len(ids)])
