"""scripts/seed_spread.py: one epoch on a slice runs, writes the shape the site reads, and a
second run resumes without training again."""

from __future__ import annotations

import importlib.util
import json

import pytest

from claimtrace.constants import PROTOCOLS
from claimtrace.models.train import TrainingData, training_data
from tests.conftest import REPO
from tests.support.training_slice import first_claims, training_slice


@pytest.fixture(scope="module")
def seed_spread():
    spec = importlib.util.spec_from_file_location("seed_spread", REPO / "scripts" / "seed_spread.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def data(data_dir) -> TrainingData:
    return training_data(data_dir)


def test_one_epoch_on_a_slice(seed_spread, data, tmp_path, monkeypatch):
    small = training_slice(data)
    output = tmp_path / "seed_spread.json"
    retrieved = first_claims(data.dev, 16)  # any inputs of the same claims stand in for a build's
    seed_spread.run_all(small, retrieved, ["transformer", "lstm"], [42, 1], 1, 1, output, tmp_path)
    document = json.loads(output.read_text())
    assert set(document["models"]) == {"transformer", "lstm"}
    for name, entry in document["models"].items():
        assert entry["variant"] == seed_spread.MODELS[name]
        assert sorted(entry["runs"]) == ["1", "42"]
        for run in entry["runs"].values():
            assert run["epochs"] == 1 and len(run["curve"]) == 1 and run["best_epoch"] in (None, 1)
            for evidence in ("gold", "retrieved"):
                for protocol in PROTOCOLS:
                    figure = run["dev"][evidence][protocol]
                    assert figure["claims"] == 16 and figure["accuracy"] == figure["correct"] / 16
                    assert figure["interval"][0] <= figure["accuracy"] <= figure["interval"][1]
        for evidence in ("gold", "retrieved"):
            for protocol in PROTOCOLS:
                s = entry["spread"][evidence][protocol]
                assert s["min"] <= s["mean"] <= s["max"] and s["sd"] >= 0 and s["seeds"] == [1, 42]
    # the LSTM never meets its batch-mates: both protocols give the same accuracy
    for run in document["models"]["lstm"]["runs"].values():
        assert run["dev"]["gold"]["alone"]["correct"] == run["dev"]["gold"]["notebook"]["correct"]

    # resumable: what is in the file with the same epochs is not trained again
    monkeypatch.setattr(seed_spread, "run_one", lambda *a, **k: pytest.fail("trained again"))
    seed_spread.run_all(small, retrieved, ["transformer", "lstm"], [42, 1], 1, 1, output, tmp_path)
