"""The notebook's LSTM on one course claim, read from a build: its model input (the same 128 ids
as the Transformer's), where it reads its verdict (the last position, usually a ``[PAD]``), and
its logits and verdict under both protocols, as the build's verdicts stage stored them.

Unlike the notebook's Transformer alone, the LSTM's verdict has no exact per-word decomposition:
its state carries every word into the last position through four nonlinear layers. Explaining
it word by word needs an attribution method, graded elsewhere; this module says what is exact.
"""

from __future__ import annotations

from typing import Any

from claimtrace import constants
from claimtrace.errors import DataError
from claimtrace.explain.verdict import located_claim

#: Why ``explain --model lstm`` lists no per-word shares.
NO_EXACT_SHARES = (
    "The LSTM's verdict has no exact per-word decomposition: its state carries every word through "
    "4 nonlinear layers to the last of the 128 positions, where the verdict is read."
)


def explain_lstm(build, claim_id: str, source: str = "retrieved") -> dict:
    """The LSTM's reading of one dev or test claim, from a build.

    Parameters
    ----------
    build : claimtrace.workdir.reader.BuildReader
    claim_id : str
        A dev or test claim (the build does not run the LSTM on the training claims).
    source : {"retrieved", "gold"}
        The evidence the model read (gold: dev only).

    Returns
    -------
    dict
        ``claim_id``, ``split``, ``claim_text``, ``label``, ``model``, ``checkpoint_name``,
        ``evidence_source``, ``evidence_ids``, ``tokens``, ``input_ids`` (128), ``real_tokens``,
        ``pad_tokens``, ``last_position`` (``{"position", "token"}``: where the verdict is
        read), ``alone`` and ``notebook`` (``{"logits", "verdict"}``, the build's), ``same``
        (whether the two protocols agree), ``note``.
    """
    split, claim = located_claim(build, claim_id, source)
    stored = build.more_verdicts(split)[claim_id].get("lstm", {}).get(source)
    if not stored:
        raise DataError(f"{claim_id}: the build runs the LSTM on dev and test claims only ({split} claim)")
    encoded = build.inputs(split, source)
    row = encoded.claim_ids.index(claim_id)
    ids = [int(i) for i in encoded.input_ids[row]]
    tokens = build.classifier().vocab.decode(ids)
    evidence = build.retrieval(split)[claim_id]["evidences"] if source == "retrieved" else list(claim.evidences)
    out: dict[str, Any] = {
        "claim_id": claim_id,
        "split": split,
        "claim_text": claim.text,
        "label": claim.label,
        "model": "lstm",
        "checkpoint_name": constants.CHECKPOINT_FILES["lstm"],
        "evidence_source": source,
        "evidence_ids": evidence,
        "tokens": tokens,
        "input_ids": ids,
        "real_tokens": sum(t != constants.PAD for t in tokens),
        "pad_tokens": tokens.count(constants.PAD),
        "last_position": {"position": len(ids) - 1, "token": tokens[-1]},
        **{
            p: {"logits": [float(x) for x in stored[p]["logits"]], "verdict": stored[p]["verdict"]}
            for p in constants.PROTOCOLS
        },
        "note": NO_EXACT_SHARES,
    }
    out["same"] = out["alone"]["verdict"] == out["notebook"]["verdict"]
    return out
