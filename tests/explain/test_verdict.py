"""The exact explanation of a claim alone (notebook.md section 7), and both protocols.

The proofs compare the 5,886 x 4 table with real PyTorch forward calls, each claim alone: it
gives their logits within ``C.FLOAT32_AGREEMENT`` (1e-5) against the float32 model (same argmax;
the figure depends on the CPU's kernels) for EVERY claim of the demo build (the call the build
stored for each) and a spread of train and dev claims with gold evidence (one call each), and
within 1e-12 against the float64 model for that spread.
"""

from __future__ import annotations

import os

# Before torch is imported: threads sleep at barriers rather than spin (constants.OMP_WAIT_POLICY);
# on a shared CPU the many small forward calls below are several times faster, same numbers.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import copy
import json

import numpy as np
import pytest
import torch
from click.testing import CliRunner

from claimtrace import constants as C
from claimtrace.assets import ASSETS_DIR
from claimtrace.cli.main import main
from claimtrace.data.files import gold_passages, load_claims
from claimtrace.explain.verdict import explain_claim
from claimtrace.models.inputs import encode, gold_evidence, make_rows
from claimtrace.models.predict import load_classifier, predict, protocol_figures
from claimtrace.models.table import (
    alone_logits_stacked,
    export_table,
    load_table,
    sha256_file,
    table_metadata,
)
from claimtrace.models.transformer import alone_logits, notebook_logits


@pytest.fixture(scope="session")
def classifier():
    return load_classifier()


@pytest.fixture(scope="session")
def splits(data_dir):
    passages = gold_passages(data_dir)
    out = {}
    for split in ("train", "dev"):
        claims = load_claims(split, data_dir)
        out[split] = (claims, gold_evidence(claims, passages))
    return out


@pytest.fixture(scope="session")
def all_ids(classifier, splits) -> torch.Tensor:
    """Every train and dev claim with its gold evidence, encoded: (1382, 128)."""
    encoded = [encode(make_rows(claims, evidence), classifier.vocab) for claims, evidence in splits.values()]
    return torch.from_numpy(np.concatenate([e.input_ids for e in encoded]))


def sample_of(ids: torch.Tensor) -> torch.Tensor:
    """A spread of claims (the first and last of each file among them) for the literal loop."""
    rows = sorted({*range(0, 16), *range(1212, 1244), *range(1366, 1382), *range(0, 1382, 43)})
    return ids[rows]


def _stored_forward_calls(build) -> dict[str, np.ndarray]:
    """Every claim of the build on its retrieved evidence: its model input (``ids``) and the one
    real PyTorch forward call the build stored for it (``logits``), a batch of one in float32."""
    ids, logits = [], []
    for split in C.SPLITS:
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
    assert np.abs(alone_logits_stacked(model, sample).double().numpy() - literal).max() < C.FLOAT32_AGREEMENT
    for float32_table in (False, True):
        for name, torch_logits, table_part in (
            ("literal", literal, classifier.table.logits(sample.numpy(), float32=float32_table)),
            ("stored", stored["logits"], classifier.table.logits(stored["ids"], float32=float32_table)),
        ):
            error = np.abs(table_part - torch_logits).max()
            print(
                f"max |table{'32' if float32_table else '64'} - torch float32 {name}| over {len(torch_logits)} claims: {error:.3g}"
            )
            assert error < C.FLOAT32_AGREEMENT
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
    path = ASSETS_DIR / C.TABLE_FILE
    shipped = load_table(path)
    assert shipped.g.shape == (C.VOCAB_SIZE, 4) and shipped.g.dtype == np.float64
    recomputed = export_table(classifier.model)
    np.testing.assert_allclose(shipped.g, recomputed.g, rtol=0, atol=1e-12)
    np.testing.assert_allclose(shipped.bias, recomputed.bias, rtol=0, atol=0)
    from safetensors.numpy import load_file

    tensors = load_file(str(path))
    assert np.array_equal(tensors["g_float32"], shipped.g.astype(np.float32))
    assert tensors["g_float32"].nbytes == 94_176  # the site's "94 KB table"
    assert np.array_equal(tensors["bias_float32"], shipped.bias.astype(np.float32))
    meta = table_metadata(path)
    assert meta["checkpoint_sha256"] == sha256_file(ASSETS_DIR / C.CHECKPOINT_FILE)
    assert meta["vocab_sha256"] == sha256_file(ASSETS_DIR / C.VOCAB_FILE)
    # the shipped table is what the shipped classifier reads (not recomputed at load)
    assert np.array_equal(classifier.table.g, shipped.g)


def test_a_trained_checkpoint_without_its_table_gets_one_computed(tmp_path, classifier):
    import shutil

    for name in (C.CHECKPOINT_FILE, C.VOCAB_FILE):
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


def test_explain_claim_contributions_add_up(demo_build):
    claims = demo_build.claims("dev")
    claim_id = list(claims)[20]
    result = explain_claim(demo_build, claim_id, "gold")
    parts = np.array(result["contributions"]["bias"]) + sum(
        np.array(t["contribution"]) for t in result["contributions"]["tokens"]
    )
    parts = parts + np.array(result["contributions"]["padding"]["contribution"])
    np.testing.assert_allclose(parts, result["alone"]["logits"], rtol=0, atol=1e-12)
    assert result["real_tokens"] + result["pad_tokens"] == 128 == len(result["tokens"]) == len(result["input_ids"])
    assert result["contributions"]["padding"]["count"] == result["pad_tokens"]
    assert len(result["contributions"]["tokens"]) == result["real_tokens"]
    assert result["tokens"][0] == "[CLS]" and result["tokens"][result["real_tokens"] - 1] == "[SEP]"
    assert result["alone"]["max_abs_diff_table_vs_torch"] < C.FLOAT32_AGREEMENT
    assert result["notebook"]["batch"] == 1 and result["notebook"]["position_in_batch"] == 4
    assert [n["id"] for n in result["notebook"]["neighbours"]] == [c for c in list(claims)[16:32] if c != claim_id]
    margin = result["contributions"]["margin"]
    assert margin["margin"] == pytest.approx(margin["bias"] + margin["tokens"] + margin["padding"], abs=1e-12)


def test_notebook_protocol_uses_the_batch_of_16_in_file_order(demo_build, classifier, splits):
    claims, evidence = splits["dev"]
    order = list(claims)
    last = order[-1]  # 154 = 9 x 16 + 10: the last batch has 10 claims
    result = explain_claim(demo_build, last, "gold")
    assert result["notebook"]["batch"] == 9 and [n["id"] for n in result["notebook"]["neighbours"]] == order[144:153]
    encoded = encode(make_rows(claims, evidence), classifier.vocab)
    with torch.no_grad():
        expected = notebook_logits(classifier.model, torch.from_numpy(encoded.input_ids))[-1].double().numpy()
    np.testing.assert_array_equal(result["notebook"]["logits"], expected)


def test_protocol_figures_reproduce_the_shipped_checkpoints_provenance(classifier, splits):
    claims, evidence = splits["dev"]
    verdicts = predict(classifier, encode(make_rows(claims, evidence), classifier.vocab))
    report = protocol_figures(
        {cid: c.label for cid, c in claims.items()},
        {cid: {p: v[p]["verdict"] for p in C.PROTOCOLS} for cid, v in verdicts.items()},
    )
    provenance = json.loads((ASSETS_DIR / C.PROVENANCE_FILE).read_text(encoding="utf-8"))
    for protocol in C.PROTOCOLS:
        result = report[protocol]
        confusion = np.array(result["confusion"])
        assert confusion.shape == (4, 4) and confusion.sum() == 154
        assert np.trace(confusion) == result["correct"] and result["accuracy"] == result["correct"] / 154
        # rows are gold labels
        gold_counts = [sum(c.label == label for c in claims.values()) for label in C.LABELS]
        assert confusion.sum(axis=1).tolist() == gold_counts
        assert provenance["accuracy_with_gold_evidence"]["dev"][protocol]["correct"] == result["correct"]
    assert report["notebook"]["accuracy"] == provenance["best_dev_accuracy"]


# --- Command line ---------------------------------------------------------------------------------


def _cli(data_dir, *args, env=None):
    return CliRunner().invoke(main, ["--data", str(data_dir), *args], env=env)


def test_cli_explain_json(data_dir, demo_build):
    result = _cli(data_dir, "explain", "claim-752", "--workdir", str(demo_build.root), "--evidence", "gold", "--json")
    assert result.exit_code == 0, result.output
    out = json.loads(result.output)
    assert out["checkpoint"].endswith(C.CHECKPOINT_FILE) and out["split"] in ("train", "dev")
    assert out["evidence_source"] == "gold"
    for protocol in C.PROTOCOLS:
        assert len(out[protocol]["logits"]) == 4 and out[protocol]["verdict"] in C.LABELS
    assert len(out["notebook"]["neighbours"]) == 15
    assert out["input_ids"][0] == 1 and len(out["tokens"]) == 128


def test_cli_explain_works_from_any_directory(data_dir, demo_build, tmp_path, monkeypatch):
    data_dir = data_dir.resolve()
    monkeypatch.chdir(tmp_path)
    result = _cli(data_dir, "explain", "claim-752", "--workdir", str(demo_build.root), "--json")
    assert result.exit_code == 0, result.output
    # --workdir defaults to $CLAIMTRACE_WORKDIR
    by_env = _cli(data_dir, "explain", "claim-752", "--json", env={"CLAIMTRACE_WORKDIR": str(demo_build.root)})
    assert by_env.exit_code == 0 and json.loads(by_env.output) == json.loads(result.output)
    # and then to ./work/demo, whose absence is named
    missing = _cli(data_dir, "explain", "claim-752", "--json", env={"CLAIMTRACE_WORKDIR": ""})
    assert missing.exit_code == 2 and "work/demo" in missing.output


def test_cli_explain_unknown_claim(data_dir, demo_build):
    result = _cli(data_dir, "explain", "claim-no-such", "--workdir", str(demo_build.root))
    assert result.exit_code == 2 and "not a train, dev or test claim" in result.output


def test_cli_explain_gold_of_a_test_claim_is_refused(data_dir, demo_build):
    test_id = next(iter(demo_build.claims("test")))
    result = _cli(data_dir, "explain", test_id, "--workdir", str(demo_build.root), "--evidence", "gold")
    assert result.exit_code == 2 and "unlabelled" in result.output


def test_cli_evaluate_classifier_json(data_dir, demo_build):
    result = _cli(
        data_dir,
        "evaluate-classifier",
        "--workdir",
        str(demo_build.root),
        "--split",
        "dev",
        "--evidence",
        "gold",
        "--json",
    )
    assert result.exit_code == 0, result.output
    out = json.loads(result.output)
    assert set(out["evidence"]) == {"gold"}
    assert out["evidence"]["gold"] == demo_build.classifier_summary()["dev"]["gold"]
    # another checkpoint (here a copy of the shipped one) is run on the build's inputs
    with_checkpoint = _cli(
        data_dir,
        "evaluate-classifier",
        "--workdir",
        str(demo_build.root),
        "--split",
        "dev",
        "--checkpoint",
        str(ASSETS_DIR),
        "--json",
    )
    assert with_checkpoint.exit_code == 0, with_checkpoint.output
    assert json.loads(with_checkpoint.output)["evidence"] == demo_build.classifier_summary()["dev"]


def test_cli_explain_with_retrieved_evidence(data_dir, demo_build):
    result = _cli(data_dir, "explain", "claim-752", "--workdir", str(demo_build.root), "--json")
    assert result.exit_code == 0, result.output
    out = json.loads(result.output)
    retrieved = demo_build.retrieval("dev")["claim-752"]
    assert out["evidence_source"] == "retrieved" and out["evidence_ids"] == retrieved["evidences"]
    assert out["real_tokens"] + out["pad_tokens"] == 128
    verdicts = demo_build.verdicts("dev")["claim-752"]["retrieved"]
    assert out["notebook"]["verdict"] == verdicts["notebook"]["verdict"]
    assert max(abs(a - b) for a, b in zip(out["alone"]["logits"], verdicts["alone"]["logits"])) < 1e-9


# --- the forward calls a build stores, and pages without torch ---------------------------------


def test_build_stores_each_claims_real_forward_call(demo_build):
    """classifier/<split>.json holds every claim's one real forward call on its retrieved
    evidence, bit for bit the call
    :meth:`claimtrace.models.predict.Classifier.forward_alone` makes."""
    classifier = demo_build.classifier()
    for split in C.SPLITS:
        encoded = demo_build.inputs(split, "retrieved")
        verdicts = demo_build.verdicts(split)
        assert all("torch_logits" in verdicts[cid]["retrieved"]["alone"] for cid in encoded.claim_ids)
        for row in (0, len(encoded.claim_ids) // 2, len(encoded.claim_ids) - 1):
            stored = verdicts[encoded.claim_ids[row]]["retrieved"]["alone"]["torch_logits"]
            assert stored == classifier.forward_alone(encoded.input_ids[row]).tolist()


def test_explain_claim_reads_the_stored_call_and_agrees_with_a_live_one(demo_build):
    """The stored call and a live one give the same explanation, number for number."""
    from claimtrace.explain.verdict import explain_input

    stored = explain_claim(demo_build, "claim-752")
    encoded = demo_build.inputs("dev", "retrieved")
    row = encoded.claim_ids.index("claim-752")
    live = explain_input(demo_build.classifier(), encoded.input_ids[row], encoded.texts[row])
    assert stored["alone"] == live["alone"]
    assert stored["contributions"] == live["contributions"]


def test_a_course_claim_is_explained_without_torch(demo_build, tmp_path):
    """A build's classifier (the shipped checkpoint, its table read from assets) and a course
    claim's whole explanation need no torch: the server's first page does not pay for it."""
    import subprocess
    import sys

    script = (
        "import sys\n"
        "from claimtrace.workdir.reader import Build\n"
        "from claimtrace.explain.verdict import explain_claim\n"
        f"build = Build({str(demo_build.root)!r}, {str(demo_build.data_dir)!r})\n"
        "explained = explain_claim(build, 'claim-752')\n"
        "assert explained['alone']['torch_logits'], explained\n"
        "print(build.classifier().parameter_count)\n"
        "print('torch' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    count, torch_imported = done.stdout.split()
    assert torch_imported == "False"
    assert int(count) == sum(p.numel() for p in load_classifier().model.parameters())
