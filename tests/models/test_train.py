"""claimtrace.models.train: the training rows and deterministic training, of the notebook's model
and of the intended one (notebook.md section 6)."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from claimtrace import constants
from claimtrace.assets import ASSETS_DIR
from claimtrace.models.inputs import load_vocab
from claimtrace.models.intended import (
    checkpoint_metadata,
)
from claimtrace.models.train import train
from claimtrace.models.transformer import (
    load_state_dict,
)
from tests.support.training_slice import training_slice


def test_training_inputs(data):
    assert len(data.vocab) == constants.VOCAB_SIZE
    assert data.vocab.tokens[:4] == list(constants.SPECIAL_TOKENS)
    assert data.train.input_ids.shape == (1228, constants.MAX_LEN) and data.dev.input_ids.shape == (
        154,
        constants.MAX_LEN,
    )
    assert (data.train.input_ids[:, 0] == 1).all()
    # every row has exactly one [SEP], and only [PAD] after it
    for ids in np.concatenate([data.train.input_ids, data.dev.input_ids]).tolist():
        sep = ids.index(2)
        assert ids.count(2) == 1 and all(i == 3 for i in ids[sep + 1 :])
    assert sorted(set(data.train.labels.tolist())) == [0, 1, 2, 3]


def test_shipped_vocab_is_the_training_vocab(data):
    assert load_vocab(ASSETS_DIR / constants.VOCAB_FILE).tokens == data.vocab.tokens


# --- Training -------------------------------------------------------------------------------------


def test_training_is_deterministic(data, tmp_path):
    small = training_slice(data)
    before = torch.get_num_threads(), torch.are_deterministic_algorithms_enabled()
    first = train(small, tmp_path / "a", seed=7, epochs=1, show_progress=False)
    second = train(small, tmp_path / "b", seed=7, epochs=1, show_progress=False)
    other = train(small, None, seed=8, epochs=1, show_progress=False)
    a, b = first.model.state_dict(), second.model.state_dict()
    assert all(torch.equal(a[name], b[name]) for name in a)
    assert not torch.equal(a["fc_out.weight"], other.model.state_dict()["fc_out.weight"])
    logs = [json.loads((tmp_path / run / constants.TRAINING_LOG_FILE).read_text()) for run in ("a", "b")]
    for log in logs:  # wall times differ; nothing else may
        del log["seconds"]
        for record in log["history"]:
            del record["seconds"]
    assert logs[0] == logs[1]
    (entry,) = logs[0]["history"]
    assert entry["epoch"] == 1 and 0 <= entry["train_correct"] <= 32
    # the checkpoint was written when dev accuracy rose above 0, and loads strictly
    if entry["saved"]:
        saved = [load_state_dict(tmp_path / run / constants.CHECKPOINT_FILE) for run in ("a", "b")]
        assert all(torch.equal(saved[0][n], a[n]) and torch.equal(saved[1][n], a[n]) for n in a)
    assert (torch.get_num_threads(), torch.are_deterministic_algorithms_enabled()) == before


# --- Training the intended variant ----------------------------------------------------------------


def test_training_the_intended_variant(data, tmp_path):
    result = train(training_slice(data), tmp_path, seed=7, epochs=1, show_progress=False, variant="intended")
    assert result.model.config.fixed is True
    log = json.loads((tmp_path / constants.TRAINING_LOG_FILES["intended"]).read_text())
    assert log["variant"] == "intended" and log["seed"] == 7
    assert not (tmp_path / constants.TRAINING_LOG_FILE).exists()  # the notebook variant's log is untouched
    if log["history"][0]["saved"]:
        assert result.checkpoint == tmp_path / constants.CHECKPOINT_FILES["intended"]
        assert checkpoint_metadata(result.checkpoint)["variant"] == "intended"
    with pytest.raises(ValueError, match="unknown variant"):
        train(training_slice(data), None, epochs=1, show_progress=False, variant="fixed")
