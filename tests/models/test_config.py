"""claimtrace.models.config: the model's hyper-parameters, the notebook's."""

from __future__ import annotations

import dataclasses

from claimtrace.models.config import TransformerConfig
from claimtrace.models.transformer import (
    build_model,
)


def test_the_config_is_the_notebooks():
    """The notebook's TransformerModel(5886, 256, 8, 6, 4, 0.1), dim_feedforward=512, pe of 5000
    rows, inputs of 128 ids, its bugs kept."""
    assert dataclasses.asdict(TransformerConfig()) == {
        "vocab_size": 5886,
        "max_len": 128,
        "d_model": 256,
        "pe_rows": 5000,
        "dropout": 0.1,
        "n_layers": 6,
        "n_heads": 8,
        "ff_dim": 512,
        "n_classes": 4,
        "fixed": False,
    }
    assert build_model().config == TransformerConfig() and build_model(fixed=True).config.fixed is True
