"""The notebook's LSTM (claimtrace.models.lstm): its shapes and tensor names, the last-position
quirk, determinism, the two protocols agreeing, its training under the shared loop and the
shipped float16 checkpoint."""

from __future__ import annotations

import os

# Before torch is imported: threads sleep at barriers rather than spin (constants.OMP_WAIT_POLICY).
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import json

import numpy as np
import pytest
import torch

from claimtrace import constants
from claimtrace.assets import ASSETS_DIR
from claimtrace.models.config import LSTMConfig
from claimtrace.models.intended import checkpoint_metadata, save_float16_checkpoint
from claimtrace.models.lstm import (
    LSTM_CHECKPOINT,
    LSTMClassifier,
    LSTMVerdicts,
    build_lstm,
    load_lstm_model,
)
from claimtrace.models.train import train
from claimtrace.models.transformer import alone_logits, notebook_logits, torch_threads
from tests.support.training_slice import training_slice


def lstm(seed: int = 3) -> LSTMClassifier:
    torch.manual_seed(seed)
    return build_lstm().eval()


def padded_batch(seed: int = 4, batch: int = 16) -> torch.Tensor:
    """Ids (batch, 128) shaped like the build's inputs: [CLS], words, [SEP], then [PAD]s, each
    claim of its own length (the LSTM steps through every [PAD])."""
    generator = torch.Generator().manual_seed(seed)
    ids = torch.full((batch, constants.MAX_LEN), constants.SPECIAL_TOKENS.index(constants.PAD))
    for row in range(batch):
        length = int(torch.randint(5, constants.MAX_LEN - 1, (1,), generator=generator))
        ids[row, 0] = constants.SPECIAL_TOKENS.index(constants.CLS)
        ids[row, 1 : length + 1] = torch.randint(4, constants.VOCAB_SIZE, (length,), generator=generator)
        ids[row, length + 1] = constants.SPECIAL_TOKENS.index(constants.SEP)
    return ids


def test_the_notebooks_configuration_and_tensor_names():
    model = lstm()
    assert model.config == LSTMConfig()
    assert (model.config.d_model, model.config.n_layers, model.config.dropout) == (256, 4, 0.1)
    assert model.lstm.batch_first and model.lstm.num_layers == 4 and model.lstm.dropout == 0.1
    names = list(model.state_dict())
    assert names[0] == "embedding.weight" and names[-2:] == ["fc_out.weight", "fc_out.bias"]
    assert f"lstm.weight_hh_l{constants.LSTM_LAYERS - 1}" in names
    with torch.no_grad():
        assert model(padded_batch(batch=3)).shape == (3, len(constants.LABELS))


@torch.no_grad()
def test_the_verdict_is_read_at_the_last_position_only():
    """Quirk "last position read": changing a word moves the logits only through the LSTM's
    state, and the logits are fc_out of the output at position 127, nothing else."""
    model = lstm()
    ids = padded_batch(batch=2)
    outputs, _ = model.lstm(model.embedding(ids))
    assert torch.equal(model(ids), model.fc_out(outputs[:, -1, :]))
    # the last position is a [PAD] in these claims, as in almost every real one
    assert (ids[:, -1] == constants.SPECIAL_TOKENS.index(constants.PAD)).all()
    # the forward function an attribution method varies: embeddings -> logits
    assert torch.equal(model.logits_from_embeddings(model.embedding(ids)), model(ids))


@torch.no_grad()
def test_the_same_bits_for_the_same_threads():
    ids = padded_batch()
    with torch_threads(1):
        first, second = lstm()(ids), lstm()(ids)
    assert torch.equal(first, second)


@torch.no_grad()
def test_alone_and_in_batches_of_16_agree():
    """batch_first=True and nothing mixes claims: a claim's logits are the same function of the
    claim alone or among 15 others; only the float32 sums' shape differs."""
    model = lstm()
    ids = padded_batch(batch=40)
    with torch_threads(1):
        alone, batched = alone_logits(model, ids), notebook_logits(model, ids)
    assert (alone - batched).abs().max().item() < constants.FLOAT32_AGREEMENT
    assert torch.equal(alone.argmax(1), batched.argmax(1))
    # and the build's one computation for both protocols gives the same logits
    verdicts = LSTMVerdicts(model)
    for protocol, reference in (("alone", alone), ("notebook", batched)):
        assert (
            np.abs(verdicts.logits(ids.numpy(), protocol) - reference.double().numpy()).max()
            < constants.FLOAT32_AGREEMENT
        )


def test_float16_checkpoint_round_trip(tmp_path):
    model = lstm()
    path = tmp_path / "lstm.safetensors"
    save_float16_checkpoint(model.state_dict(), path, metadata={"variant": "lstm"})
    loaded = load_lstm_model(path)
    for name, tensor in model.state_dict().items():
        assert torch.equal(loaded.state_dict()[name], tensor.half().float())
    save_float16_checkpoint(model.state_dict(), path, metadata={"variant": "intended"})
    with pytest.raises(ValueError, match="not the LSTM"):
        load_lstm_model(path)


def test_training_the_lstm_one_epoch_on_a_slice(data, tmp_path):
    small = training_slice(data)
    result = train(small, tmp_path, seed=7, epochs=1, show_progress=False, variant="lstm")
    assert isinstance(result.model, LSTMClassifier)
    log = json.loads((tmp_path / constants.TRAINING_LOG_FILES["lstm"]).read_text())
    assert log["variant"] == "lstm" and log["seed"] == 7 and len(log["history"]) == 1
    assert not (tmp_path / constants.TRAINING_LOG_FILE).exists()
    if log["history"][0]["saved"]:
        assert checkpoint_metadata(result.checkpoint)["variant"] == "lstm"


@pytest.mark.skipif(not LSTM_CHECKPOINT.is_file(), reason="no shipped LSTM checkpoint")
def test_the_shipped_checkpoint_and_its_provenance(data):
    from claimtrace.course import ORIGINAL_LSTM_LOG

    provenance = json.loads((ASSETS_DIR / constants.PROVENANCE_FILES["lstm"]).read_text())
    assert provenance["variant"] == "lstm" and provenance["dtype"] == "float16"
    assert len(provenance["history"]) == len(ORIGINAL_LSTM_LOG) == constants.EPOCHS
    assert [row["notebook"]["dev_accuracy"] for row in provenance["beside_the_notebook"]] == [
        ORIGINAL_LSTM_LOG[e][3] for e in range(1, 11)
    ]
    model = load_lstm_model()
    with torch.no_grad():
        correct = int(
            (notebook_logits(model, torch.from_numpy(data.dev.input_ids)).argmax(1).numpy() == data.dev.labels).sum()
        )
    assert correct == provenance["best_dev_correct_float16"]
