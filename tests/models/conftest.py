"""What the model tests share: the training data (the notebook's vocabulary and rows)."""

from __future__ import annotations

import pytest

from claimtrace.models.train import TrainingData, training_data


@pytest.fixture(scope="session")
def data(data_dir) -> TrainingData:
    return training_data(data_dir)
