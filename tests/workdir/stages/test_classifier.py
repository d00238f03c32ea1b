"""The build's classifier stage (claimtrace.workdir.stages.classifier): what it stores for each
claim."""

from __future__ import annotations

from claimtrace.constants import SPLITS


def test_build_stores_each_claims_real_forward_call(demo_build):
    """classifier/<split>.json holds every claim's one real forward call on its retrieved
    evidence, bit for bit the call
    :meth:`claimtrace.models.predict.Classifier.forward_alone` makes."""
    classifier = demo_build.classifier()
    for split in SPLITS:
        encoded = demo_build.inputs(split, "retrieved")
        verdicts = demo_build.verdicts(split)
        assert all("torch_logits" in verdicts[cid]["retrieved"]["alone"] for cid in encoded.claim_ids)
        for row in (0, len(encoded.claim_ids) // 2, len(encoded.claim_ids) - 1):
            stored = verdicts[encoded.claim_ids[row]]["retrieved"]["alone"]["torch_logits"]
            assert stored == classifier.forward_alone(encoded.input_ids[row]).tolist()
