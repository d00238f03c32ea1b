"""claimtrace.models.transformer: the model as the notebook wrote it (against the notebook's class,
re-typed), built from its config, and the shipped checkpoint (notebook.md section 5)."""

from __future__ import annotations

import os

# Before torch is imported: threads sleep at barriers rather than spin (constants.OMP_WAIT_POLICY);
# on a shared CPU the many small forward calls below are several times faster, same numbers.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import json
import math

import numpy as np
import torch
from torch import nn

from claimtrace.assets import ASSETS_DIR
from claimtrace.constants import CHECKPOINT_FILE, PROVENANCE_FILE, VOCAB_SIZE
from claimtrace.models.config import TransformerConfig
from claimtrace.models.transformer import (
    TransformerClassifier,
    build_model,
    load_model,
    load_state_dict,
    notebook_logits,
    sinusoidal_table,
)

SHIPPED = ASSETS_DIR / CHECKPOINT_FILE


# --- The notebook's class, re-typed from reading the notebook (cell "Transformer Model for
# Classification"): the reference the port must agree with. ------------------------------------


class NotebookPositionalEncoding(nn.Module):
    def __init__(self, d_model, max_len=5000):
        super().__init__()
        position = torch.arange(0, max_len, dtype=torch.float).unsqueeze(1)
        scale = torch.exp(torch.arange(0, d_model, 2).float() * (-math.log(10000.0) / d_model))
        table = torch.zeros(max_len, d_model)
        table[:, 0::2] = torch.sin(position * scale)
        table[:, 1::2] = torch.cos(position * scale)
        self.register_buffer("pe", table.unsqueeze(0).transpose(0, 1))

    def forward(self, x):
        return x + self.pe[: x.size(0), :]


class NotebookTransformerModel(nn.Module):
    def __init__(self, input_dim, model_dim, num_heads, num_encoder_layers, num_classes, dropout=0.1):
        super().__init__()
        self.embedding = nn.Embedding(input_dim, model_dim)
        self.pos_encoder = NotebookPositionalEncoding(model_dim)
        layer = nn.TransformerEncoderLayer(model_dim, num_heads, dim_feedforward=512, dropout=dropout)
        self.transformer_encoder = nn.TransformerEncoder(layer, num_encoder_layers)
        self.fc_out = nn.Linear(model_dim, num_classes)
        self.dropout = nn.Dropout(dropout)

    def forward(self, src, src_mask=None):
        src = self.embedding(src) * math.sqrt(src.size(1))
        src = self.dropout(self.pos_encoder(src))
        output = self.transformer_encoder(src, src_key_padding_mask=src_mask)
        return self.fc_out(output.mean(dim=1))


def notebook_model() -> NotebookTransformerModel:
    import warnings

    with warnings.catch_warnings():  # the notebook's enable_nested_tensor warning
        warnings.simplefilter("ignore")
        return NotebookTransformerModel(VOCAB_SIZE, 256, 8, 6, 4, 0.1)


# --- The model ------------------------------------------------------------------------------------


def expected_names() -> set[str]:
    names = {"embedding.weight", "pos_encoder.pe", "fc_out.weight", "fc_out.bias"}
    per_layer = [
        "self_attn.in_proj_weight",
        "self_attn.in_proj_bias",
        "self_attn.out_proj.weight",
        "self_attn.out_proj.bias",
        "linear1.weight",
        "linear1.bias",
        "linear2.weight",
        "linear2.bias",
        "norm1.weight",
        "norm1.bias",
        "norm2.weight",
        "norm2.bias",
    ]
    names |= {f"transformer_encoder.layers.{i}.{p}" for i in range(6) for p in per_layer}
    return names


def test_the_model_is_built_from_its_config():
    config = TransformerConfig(vocab_size=50, d_model=16, pe_rows=40, dropout=0.25, n_layers=2, n_heads=2, ff_dim=24)
    model = TransformerClassifier(config)
    state = model.state_dict()
    assert model.config is config and len(model.transformer_encoder.layers) == 2
    assert state["embedding.weight"].shape == (50, 16) and state["pos_encoder.pe"].shape == (40, 1, 16)
    assert state["transformer_encoder.layers.1.linear1.weight"].shape == (24, 16)
    assert model.transformer_encoder.layers[0].self_attn.num_heads == 2 and model.dropout.p == 0.25
    assert model.eval()(torch.randint(0, 50, (3, 10))).shape == (3, 4)


def test_model_shapes_names_and_configuration():
    model = build_model()
    state = model.state_dict()
    assert set(state) == expected_names()
    assert state["embedding.weight"].shape == (5886, 256)
    assert state["pos_encoder.pe"].shape == (5000, 1, 256)
    assert state["fc_out.weight"].shape == (4, 256)
    assert state["transformer_encoder.layers.0.self_attn.in_proj_weight"].shape == (768, 256)
    assert state["transformer_encoder.layers.5.linear1.weight"].shape == (512, 256)
    for layer in model.transformer_encoder.layers:
        assert layer.self_attn.batch_first is False and layer.norm_first is False
        assert layer.self_attn.num_heads == 8 and layer.activation is torch.nn.functional.relu
        assert layer.dropout.p == layer.dropout1.p == layer.dropout2.p == layer.self_attn.dropout == 0.1
    assert model.dropout.p == 0.1
    assert sum(p.numel() for p in model.parameters()) == 4_670_468
    model.eval()
    for batch in (1, 12, 16):
        assert model(torch.randint(0, 5886, (batch, 128))).shape == (batch, 4)


def test_same_seed_same_initial_weights_as_the_notebooks_class():
    """Modules are created in the notebook's order, so a seed initialises both alike."""
    torch.manual_seed(11)
    reference = notebook_model().state_dict()
    torch.manual_seed(11)
    ours = build_model().state_dict()
    assert all(torch.equal(reference[name], ours[name]) for name in reference)


def test_pe_is_the_notebooks_buffer_and_indexes_the_batch():
    pe = sinusoidal_table(TransformerConfig())
    assert torch.equal(pe, notebook_model().pos_encoder.pe)
    assert torch.equal(pe[0, 0, 0::2], torch.zeros(128)) and torch.equal(pe[0, 0, 1::2], torch.ones(128))
    # quirk "pe by batch position": claim i of a batch gets pe[i] at every one of its positions
    model = build_model()
    x = torch.zeros(3, 128, 256)
    out = model.pos_encoder(x)
    for i in range(3):
        assert torch.equal(out[i], pe[i, 0].expand(128, 256))


def test_attention_runs_across_the_batch():
    """Quirk "batch-first bug": a claim's logits depend on its batch-mates, and not on the
    order of its own words' positions... except through the mean, which ignores order."""
    torch.manual_seed(1)
    model = build_model().eval()
    ids = torch.randint(4, 5886, (4, 128))
    with torch.no_grad():
        together = model(ids)
        alone = torch.cat([model(ids[i : i + 1]) for i in range(4)])
        shuffled = model(ids[:, torch.randperm(128)])
    assert not torch.allclose(together[1:], alone[1:], atol=1e-4)  # neighbours matter
    torch.testing.assert_close(shuffled, together, atol=1e-5, rtol=0)  # word order does not


def test_fixed_switch_is_a_different_model_on_the_same_tensors():
    torch.manual_seed(2)
    faithful = build_model().eval()
    fixed = build_model(fixed=True).eval()
    fixed.load_state_dict(faithful.state_dict(), strict=True)
    ids = torch.randint(4, 5886, (2, 128))
    with torch.no_grad():
        assert not torch.allclose(faithful(ids), fixed(ids))
        assert not torch.allclose(fixed(ids), fixed(ids[:, torch.randperm(128)]), atol=1e-4)  # order matters


# --- The shipped checkpoint -----------------------------------------------------------------------


def _sinusoidal_table_on_mkls_reproducible_path(tmp_path) -> torch.Tensor:
    """The table as torch computes it with MKL in its conditional-numerical-reproducibility
    mode (MKL_CBWR=COMPATIBLE: the same bits on every x86 CPU), in a fresh process (MKL reads
    the variable when it starts). torch's float32 sin and cos go through MKL's vector maths,
    whose default code path depends on the CPU (docs/architecture.md, "Reference platform")."""
    import subprocess
    import sys

    out = tmp_path / "pe.npy"
    script = (
        "import sys, numpy; from claimtrace.models.config import TransformerConfig; "
        "from claimtrace.models.transformer import sinusoidal_table; "
        "numpy.save(sys.argv[1], sinusoidal_table(TransformerConfig()).numpy())"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(out)],
        capture_output=True,
        text=True,
        env={**os.environ, "MKL_CBWR": "COMPATIBLE"},
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return torch.from_numpy(np.load(out))


def test_shipped_checkpoint_file(tmp_path):
    assert SHIPPED.stat().st_size < 25_000_000
    state = load_state_dict(SHIPPED)
    assert set(state) == expected_names()
    assert all(t.dtype == torch.float32 for t in state.values())
    # The stored buffer is the table bit for bit, as MKL's reproducible path computes it; the
    # first row (the only one a claim alone reads) is exact on any path.
    assert torch.equal(state["pos_encoder.pe"], _sinusoidal_table_on_mkls_reproducible_path(tmp_path))
    assert torch.equal(state["pos_encoder.pe"][0], sinusoidal_table(TransformerConfig())[0])


def test_notebook_class_loads_the_shipped_state_dict(data):
    reference = notebook_model()
    reference.load_state_dict(load_state_dict(SHIPPED), strict=True)
    reference.eval()
    ours = load_model(SHIPPED)
    ids = torch.from_numpy(data.dev.input_ids)
    with torch.no_grad():
        for batch in (ids[:16], ids[144:], ids[5:6]):
            assert torch.equal(reference(batch), ours(batch))


def test_shipped_checkpoint_reproduces_its_recorded_dev_accuracy(data):
    provenance = json.loads((ASSETS_DIR / PROVENANCE_FILE).read_text(encoding="utf-8"))
    best = provenance["history"][provenance["best_epoch"] - 1]
    assert best["saved"] and best["dev_accuracy"] == provenance["best_dev_accuracy"]
    # strictly greater: the kept epoch beats every earlier one, and no later one beats it
    earlier = [h["dev_correct"] for h in provenance["history"][: provenance["best_epoch"] - 1]]
    later = [h["dev_correct"] for h in provenance["history"][provenance["best_epoch"] :]]
    assert all(c < best["dev_correct"] for c in earlier) and all(c <= best["dev_correct"] for c in later)
    logits = notebook_logits(load_model(SHIPPED), torch.from_numpy(data.dev.input_ids))
    assert int((logits.argmax(1).numpy() == data.dev.labels).sum()) == best["dev_correct"]
    assert 0.55 <= provenance["best_dev_accuracy"] <= 0.61


def test_notebook_logits_batches_in_file_order(data):
    model = load_model(SHIPPED)
    ids = torch.from_numpy(data.dev.input_ids[:40])
    batched = notebook_logits(model, ids)
    with torch.no_grad():
        assert torch.equal(batched[16:32], model(ids[16:32]))
        assert torch.equal(batched[32:], model(ids[32:40]))
    assert np.isfinite(batched.numpy()).all()
