"""claimtrace.models.table: the 5,886 x 4 table against real PyTorch forward calls, each claim alone
(within ``FLOAT32_AGREEMENT`` against the float32 model, 1e-12 against float64), and the
shipped table against the shipped checkpoint."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch

from claimtrace.assets import ASSETS_DIR
from claimtrace.constants import CHECKPOINT_FILE, FLOAT32_AGREEMENT, SPLITS, TABLE_FILE, VOCAB_FILE, VOCAB_SIZE
from claimtrace.models.inputs import encode, make_rows
from claimtrace.models.predict import load_classifier
from claimtrace.models.table import export_table, load_table, sha256_file, table_metadata
from claimtrace.models.transformer import alone_logits
from tests.support.alone_stacked import alone_logits_stacked


@pytest.fixture(scope="session")
def all_ids(classifier, splits, preprocessor) -> torch.Tensor:
    """Every train and dev claim with its gold evidence, encoded: (1382, 128)."""
    encoded = [
        encode(make_rows(claims, evidence, preprocessor), classifier.vocab) for claims, evidence in splits.values()
    ]
    return torch.from_numpy(np.concatenate([e.input_ids for e in encoded]))


def sample_of(ids: torch.Tensor) -> torch.Tensor:
    """A spread of claims (the first and last of each file among them) for the literal loop."""
    rows = sorted({*range(0, 16), *range(1212, 1244), *range(1366, 1382), *range(0, 1382, 43)})
    return ids[rows]


def _stored_forward_calls(build) -> dict[str, np.ndarray]:
    """Every claim of the build on its retrieved evidence: its model input (``ids``) and the one
    real PyTorch forward call the build stored for it (``logits``), a batch of one in float32."""
    ids, logits = [], []
    for split in SPLITS:
        encoded = build.inputs(split, "retrieved")
        verdicts = build.verdicts(split)
        ids.append(encoded.input_ids)
        logits += [verdicts[cid]["retrieved"]["alone"]["torch_logits"] for cid in encoded.claim_ids]
    return {"ids": np.concatenate(ids), "logits": np.asarray(logits, dtype=np.float64)}


def test_table_matches_torch_float32_for_every_claim_alone(classifier, all_ids, demo_build):
    """Float32: the table against real PyTorch forward calls, each claim alone as a batch of one:
    literally one call per claim for a spread of claims (gold evidence), and the call the build
    stored for every claim of every split (retrieved evidence; bit for bit a literal call:
    test_build_stores_each_claims_real_forward_call)."""
    model = classifier.model
    sample = sample_of(all_ids)
    literal = alone_logits(model, sample).double().numpy()
    stored = _stored_forward_calls(demo_build)
    # the stacked computation (one encoder call for many claims) is one call per claim, in other shapes
    assert np.abs(alone_logits_stacked(model, sample).double().numpy() - literal).max() < FLOAT32_AGREEMENT
    for float32_table in (False, True):
        for name, torch_logits, table_part in (
            ("literal", literal, classifier.table.logits(sample.numpy(), float32=float32_table)),
            ("stored", stored["logits"], classifier.table.logits(stored["ids"], float32=float32_table)),
        ):
            error = np.abs(table_part - torch_logits).max()
            print(
                f"max |table{'32' if float32_table else '64'} - torch float32 {name}| over {len(torch_logits)} claims: {error:.3g}"
            )
            assert error < FLOAT32_AGREEMENT
            assert (table_part.argmax(1) == torch_logits.argmax(1)).all()


def test_table_matches_torch_float64_for_a_spread_of_claims_alone(classifier, all_ids):
    """Float64: the table against the float64 model, literally one forward call per claim for a
    spread of claims (every claim would take a minute: the float32 test covers them all)."""
    model64 = copy.deepcopy(classifier.model).double()
    sample = sample_of(all_ids)
    literal = alone_logits(model64, sample).numpy()
    assert np.abs(alone_logits_stacked(model64, sample).numpy() - literal).max() < 1e-13
    table_logits = classifier.table.logits(sample.numpy())
    error = np.abs(table_logits - literal).max()
    print(f"max |table - torch float64| over {len(sample)} claims: {error:.3g}")
    assert error < 1e-12
    assert (table_logits.argmax(1) == literal.argmax(1)).all()


def test_shipped_table_is_the_shipped_checkpoints(classifier):
    path = ASSETS_DIR / TABLE_FILE
    shipped = load_table(path)
    assert shipped.g.shape == (VOCAB_SIZE, 4) and shipped.g.dtype == np.float64
    recomputed = export_table(classifier.model)
    np.testing.assert_allclose(shipped.g, recomputed.g, rtol=0, atol=1e-12)
    np.testing.assert_allclose(shipped.bias, recomputed.bias, rtol=0, atol=0)
    from safetensors.numpy import load_file

    tensors = load_file(str(path))
    assert np.array_equal(tensors["g_float32"], shipped.g.astype(np.float32))
    assert tensors["g_float32"].nbytes == 94_176  # the site's "94 KB table"
    assert np.array_equal(tensors["bias_float32"], shipped.bias.astype(np.float32))
    meta = table_metadata(path)
    assert meta["checkpoint_sha256"] == sha256_file(ASSETS_DIR / CHECKPOINT_FILE)
    assert meta["vocab_sha256"] == sha256_file(ASSETS_DIR / VOCAB_FILE)
    # the shipped table is what the shipped classifier reads (not recomputed at load)
    assert np.array_equal(classifier.table.g, shipped.g)


def test_a_trained_checkpoint_without_its_table_gets_one_computed(tmp_path, classifier):
    import shutil

    for name in (CHECKPOINT_FILE, VOCAB_FILE):
        shutil.copyfile(ASSETS_DIR / name, tmp_path / name)
    trained = load_classifier(tmp_path)
    np.testing.assert_allclose(trained.table.g, classifier.table.g, rtol=0, atol=1e-12)


def test_table_of_a_tiny_vocabulary_is_per_token():
    """The table's defining property on a fresh model: any claim alone is a sum of rows."""
    from claimtrace.models.transformer import build_model

    torch.manual_seed(5)
    model = build_model(vocab_size=10).eval()
    table = export_table(model)
    ids = torch.randint(0, 10, (3, 128))
    with torch.no_grad():
        expected = alone_logits(model.double(), ids).numpy()
    assert np.abs(table.logits(ids.numpy()) - expected).max() < 1e-12
