"""The notebook's protocol: a claim's verdict depends on the 15 claims it is batched with (its
batch of 16, in file order). Each batch-mate is taken out in turn (given a batch of its own, which
leaves every other batch as it was) and the claim's batch, one claim shorter, is run through the
network again; the claim's verdict there is read. There is no table for this protocol: every
answer is a forward call."""

from __future__ import annotations

import numpy as np

from claimtrace import constants
from claimtrace.models.predict import notebook_batches

__all__ = ["neighbour_edits"]


def neighbour_edits(build, split: str, claim_id: str, source: str = "retrieved") -> dict:
    """Each batch-mate of a course claim taken out of its batch, the claim's notebook verdict re-run."""
    encoded = build.inputs(split, source)
    row = encoded.claim_ids.index(claim_id)
    start = row - row % constants.BATCH_SIZE
    rows = list(range(start, min(start + constants.BATCH_SIZE, len(encoded.claim_ids))))
    model = build.classifier().model
    ids = np.asarray(encoded.input_ids)
    whole = notebook_batches(model, ids[rows], workers=1)[rows.index(row)]
    verdicts = build.verdicts(split)
    stored = verdicts[claim_id][source]["notebook"]["verdict"]
    verdict = constants.LABELS[int(np.argmax(whole))]
    out = []
    for taken in rows:
        if taken == row:
            continue
        kept = [r for r in rows if r != taken]
        logits = notebook_batches(model, ids[kept], workers=1)[kept.index(row)]
        after = constants.LABELS[int(np.argmax(logits))]
        neighbour = encoded.claim_ids[taken]
        out.append(
            {
                "id": neighbour,
                "position": rows.index(taken),
                "verdict_of_neighbour": verdicts[neighbour][source]["notebook"]["verdict"],
                "logits_after": [float(x) for x in logits],
                "verdict_after": after,
                "changes": after != verdict,
            }
        )
    return {
        "verdict": verdict,
        "stored_verdict": stored,
        "position_in_batch": rows.index(row),
        "batch_size": len(rows),
        "neighbours": out,
        "changing": [n["id"] for n in out if n["changes"]],
    }
