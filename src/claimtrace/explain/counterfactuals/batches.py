"""The notebook's protocol: a claim's verdict depends on the 15 claims it is batched with (its
batch of 16, in file order). Each batch-mate is taken out in turn (given a batch of its own, which
leaves every other batch as it was) and the claim's batch, one claim shorter, is run through the
network again; the claim's verdict there is read. There is no table for this protocol: every
answer is a forward call, and one call answers every claim left in that batch, so a batch's runs
are made once (:class:`BatchRuns`) and shared by its claims."""

from __future__ import annotations

import numpy as np

from claimtrace import constants
from claimtrace.models.predict import run_calls

__all__ = ["BatchRuns", "neighbour_edits"]


class BatchRuns:
    """One split's notebook batches run again, whole and with each member taken out: the logits of
    the members left, one forward call each, made when first asked and kept (a split's worth is a
    few kilobytes)."""

    def __init__(self, build, split: str, source: str = "retrieved"):
        self.build, self.split, self.source = build, split, source
        self.encoded = build.inputs(split, source)
        self._runs: dict[int, dict] = {}

    def rows(self, batch: int) -> list[int]:
        """The rows (file positions) of a batch."""
        start = batch * constants.BATCH_SIZE
        return list(range(start, min(start + constants.BATCH_SIZE, len(self.encoded.claim_ids))))

    def of_batch(self, batch: int) -> dict:
        """``None`` (the whole batch) and each member's row taken out -> {row left: logits}."""
        if batch not in self._runs:
            import torch

            rows = self.rows(batch)
            ids = np.asarray(self.encoded.input_ids)
            variants = [None, *rows]
            kept = [[r for r in rows if r != taken] for taken in variants]
            model = self.build.classifier().model
            model.eval()
            outputs = run_calls(model, [torch.as_tensor(ids[k]) for k in kept])
            self._runs[batch] = {
                taken: dict(zip(k, out.double().numpy(), strict=True))
                for taken, k, out in zip(variants, kept, outputs, strict=True)
            }
        return self._runs[batch]


def neighbour_edits(build, split: str, claim_id: str, source: str = "retrieved", runs: BatchRuns | None = None) -> dict:
    """Each batch-mate of a course claim taken out of its batch, the claim's notebook verdict re-run."""
    runs = runs if runs is not None else BatchRuns(build, split, source)
    row = runs.encoded.claim_ids.index(claim_id)
    batch = row // constants.BATCH_SIZE
    rows, made = runs.rows(batch), runs.of_batch(batch)
    verdicts = build.verdicts(split)
    verdict = constants.LABELS[int(np.argmax(made[None][row]))]
    out = []
    for taken in rows:
        if taken == row:
            continue
        logits = made[taken][row]
        after = constants.LABELS[int(np.argmax(logits))]
        neighbour = runs.encoded.claim_ids[taken]
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
        "stored_verdict": verdicts[claim_id][source]["notebook"]["verdict"],
        "position_in_batch": rows.index(row),
        "batch_size": len(rows),
        "neighbours": out,
        "changing": [n["id"] for n in out if n["changes"]],
    }
