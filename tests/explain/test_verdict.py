"""The exact explanation of a claim alone (claimtrace.explain.verdict, notebook.md section 7), and
both protocols: contributions that add up to the logits, the notebook's batch of 16, the
forward call the build stored, and no torch for a course claim. The table it reads is proved in
tests/models/test_table.py.
"""

from __future__ import annotations

import os

# Before torch is imported: threads sleep at barriers rather than spin (constants.OMP_WAIT_POLICY);
# on a shared CPU the many small forward calls below are several times faster, same numbers.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


import numpy as np
import pytest
import torch

from claimtrace.constants import FLOAT32_AGREEMENT
from claimtrace.explain.verdict import explain_claim
from claimtrace.models.inputs import encode, make_rows
from claimtrace.models.predict import load_classifier
from claimtrace.models.transformer import notebook_logits


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
    assert result["alone"]["max_abs_diff_table_vs_torch"] < FLOAT32_AGREEMENT
    assert result["notebook"]["batch"] == 1 and result["notebook"]["position_in_batch"] == 4
    assert [n["id"] for n in result["notebook"]["neighbours"]] == [c for c in list(claims)[16:32] if c != claim_id]
    margin = result["contributions"]["margin"]
    assert margin["margin"] == pytest.approx(margin["bias"] + margin["tokens"] + margin["padding"], abs=1e-12)


def test_notebook_protocol_uses_the_batch_of_16_in_file_order(demo_build, classifier, splits, preprocessor):
    claims, evidence = splits["dev"]
    order = list(claims)
    last = order[-1]  # 154 = 9 x 16 + 10: the last batch has 10 claims
    result = explain_claim(demo_build, last, "gold")
    assert result["notebook"]["batch"] == 9 and [n["id"] for n in result["notebook"]["neighbours"]] == order[144:153]
    encoded = encode(make_rows(claims, evidence, preprocessor), classifier.vocab)
    with torch.no_grad():
        expected = notebook_logits(classifier.model, torch.from_numpy(encoded.input_ids))[-1].double().numpy()
    np.testing.assert_array_equal(result["notebook"]["logits"], expected)


# --- the forward call a build stores, and pages without torch ---------------------------------


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
        "from claimtrace.workdir.reader import BuildReader\n"
        "from claimtrace.explain.verdict import explain_claim\n"
        f"build = BuildReader({str(demo_build.root)!r}, {str(demo_build.data_dir)!r})\n"
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
