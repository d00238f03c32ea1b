"""Why one claim got its verdict, exactly (notebook.md section 7): the one explanation path.

A claim alone is explained token by token by the classifier's exact table
(:mod:`claimtrace.models.table`): ``logits = b + (1/128) * sum_t g[token_t]``, so each token's
share of the verdict is its row of ``g`` over 128, padding included ([PAD] rows usually weigh a
lot: most inputs are mostly padding). Under the notebook's protocol (batches of 16 in file
order) the verdict also depends on the claim's 15 neighbours, which are listed with their
verdicts.

:func:`explain_input` explains any 128 ids (a typed claim on the site); :func:`explain_claim`
explains a course claim from a build: its model input, both protocols' logits (the build's),
its batch neighbours, and each token's share. ``claimtrace explain`` and every page call these.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from claimtrace import constants
from claimtrace.errors import DataError
from claimtrace.explain.confidence import softmax

__all__ = ["explain_input", "explain_claim", "margin"]


def _floats(values) -> list[float]:
    # an array's own tolist: the same Python floats as float() of each item, made in C
    if isinstance(values, np.ndarray) and values.ndim == 1:
        return values.astype(np.float64, copy=False).tolist()
    return [float(x) for x in values]


def explain_input(classifier, ids: Sequence[int], text: str, torch_logits: Sequence[float] | None = None) -> dict:
    """Every token's exact share of the verdict of the claim alone.

    Parameters
    ----------
    classifier : claimtrace.models.predict.Classifier
    ids : sequence of int, length 128
        The model input (``Vocabulary.encode(text)``).
    text : str
        The row text the ids encode (its words name the tokens, ``<unk>`` included).
    torch_logits : sequence of 4 floats, optional
        The claim's one real PyTorch forward call (batch of one, float32), when the build
        stored it; else the call is made here.

    Returns
    -------
    dict with the tokens, counts (real, [PAD], unknown), the table's logits and verdict beside
    one real PyTorch forward call (and their largest difference), and ``contributions``: the
    bias, each real token's share (4 floats, LABELS order), the padding's, the words' total and
    the verdict's margin over the runner-up split into its parts.
    """
    ids = [int(i) for i in ids]
    table = classifier.table
    words = text.split()
    tokens = classifier.vocab.decode(ids)
    alone = table.logits(np.asarray(ids))
    torch_alone = (
        np.asarray(torch_logits, dtype=np.float64) if torch_logits is not None else classifier.forward_alone(ids)
    )
    per_token = _token_shares(classifier, ids, tokens, words)
    padding = _padding_share(classifier, ids)
    words_total = (
        np.sum([p["contribution"] for p in per_token], axis=0) if per_token else np.zeros(len(constants.LABELS))
    )
    return {
        "text": text,
        "words": len(words),
        "tokens": tokens,
        "input_ids": ids,
        "real_tokens": len(ids) - padding["count"],
        "pad_tokens": padding["count"],
        "unknown_tokens": int(sum(p["unknown"] for p in per_token)),
        "truncated": len(words) + 2 > constants.MAX_LEN,
        "dropped_words": max(0, len(words) + 2 - constants.MAX_LEN),
        "alone": {
            "logits": _floats(alone),
            "verdict": constants.LABELS[int(np.argmax(alone))],
            "softmax": softmax(alone),
            "torch_logits": _floats(torch_alone),
            "max_abs_diff_table_vs_torch": float(np.abs(alone - torch_alone).max()),
        },
        "contributions": {
            "labels": list(constants.LABELS),
            "bias": _floats(table.bias),
            "tokens": per_token,
            "padding": padding,
            "words_total": _floats(words_total),
            "margin": margin(alone, table.bias, per_token, padding),
        },
    }


def _padding_share(classifier, ids: list[int]) -> dict:
    """The [PAD] tokens' share of the verdict together: one table row times their count, over 128."""
    pad_id = classifier.vocab.index[constants.PAD]
    pad_count = ids.count(pad_id)
    return {
        "token": constants.PAD,
        "id": pad_id,
        "count": pad_count,
        "contribution": _floats(classifier.table.g[pad_id] * pad_count / len(ids)),
    }


def _token_shares(classifier, ids: list[int], tokens: list[str], words: list[str]) -> list[dict]:
    """Each real (not [PAD]) token's share of the verdict: its row of the table over 128, with
    the word of the row text it stands for."""
    pad_id, unk_id = classifier.vocab.index[constants.PAD], classifier.vocab.index[constants.UNK]
    shares = classifier.table.contributions(ids)
    real = len(ids) - ids.count(pad_id)
    per_token = []
    for t, (token, token_id) in enumerate(zip(tokens, ids)):
        if token_id == pad_id:
            continue
        # position 0 is [CLS]; the last real position is [SEP]; in between, the t-th word
        word = words[t - 1] if 0 < t <= len(words) and t < real - 1 else token
        per_token.append(
            {
                "position": t,
                "token": token,
                "word": word,
                "id": token_id,
                "unknown": token_id == unk_id,
                "contribution": _floats(shares[t]),
            }
        )
    return per_token


def margin(logits, bias, per_token: list[dict], padding: dict, shown: int = 5) -> dict:
    """The verdict's lead over the runner-up, split into bias, each token and the padding; the
    ``shown`` tokens pushing hardest each way."""
    order = np.argsort(-np.asarray(logits), kind="stable")
    win, second = int(order[0]), int(order[1])
    pushes = sorted(
        (
            {
                "position": t["position"],
                "token": t["token"],
                "word": t["word"],
                "unknown": t["unknown"],
                "push": t["contribution"][win] - t["contribution"][second],
            }
            for t in per_token
        ),
        key=lambda p: -p["push"],
    )
    return {
        "verdict": constants.LABELS[win],
        "runner_up": constants.LABELS[second],
        "margin": float(logits[win] - logits[second]),
        "bias": float(bias[win] - bias[second]),
        "padding": float(padding["contribution"][win] - padding["contribution"][second]),
        "tokens": float(sum(p["push"] for p in pushes)),
        "for": pushes[:shown],
        "against": pushes[max(shown, len(pushes) - shown) :][::-1],
    }


def notebook_batch(build, split: str, source: str, row: int) -> dict:
    """The notebook protocol around one claim: its batch of 16 in file order, its logits and
    verdict (the build's), and each neighbour's gold label and notebook verdict."""
    encoded = build.inputs(split, source)
    verdicts = build.verdicts(split)
    batch = row // constants.BATCH_SIZE
    batch_ids = encoded.claim_ids[batch * constants.BATCH_SIZE : (batch + 1) * constants.BATCH_SIZE]
    claim_id = encoded.claim_ids[row]
    entry = verdicts[claim_id][source]["notebook"]
    return {
        "logits": _floats(entry["logits"]),
        "verdict": entry["verdict"],
        "softmax": softmax(entry["logits"]),
        "batch": batch,
        "position_in_batch": batch_ids.index(claim_id),
        "batch_size": len(batch_ids),
        "neighbours": [
            {"id": cid, "label": verdicts[cid]["label"], "verdict": verdicts[cid][source]["notebook"]["verdict"]}
            for cid in batch_ids
            if cid != claim_id
        ],
    }


def located_claim(build, claim_id: str, source: str):
    """A course claim's split and the claim itself, when it can be explained with ``source``:
    DataError for an id of no split, or gold evidence asked of an unlabelled (test) claim."""
    found = build.locate(claim_id)
    if found is None:
        raise DataError(f"{claim_id}: not a train, dev or test claim")
    split, _ = found
    claim = build.claims(split)[claim_id]
    if source == "gold" and claim.label is None:
        raise DataError(f"{claim_id}: gold evidence exists only for train and dev claims ({split} is unlabelled)")
    return split, claim


def explain_claim(build, claim_id: str, source: str = "retrieved") -> dict:
    """Everything about one course claim's verdict, from a build.

    Parameters
    ----------
    build : claimtrace.workdir.reader.BuildReader
    claim_id : str
        A train, dev or test claim.
    source : {"retrieved", "gold"}
        The evidence the classifier read: what the build retrieved (what the pipeline
        classifies, and what the site shows), or the gold passages (train and dev).
    """
    split, claim = located_claim(build, claim_id, source)
    classifier = build.classifier()
    encoded = build.inputs(split, source)
    row = encoded.claim_ids.index(claim_id)
    # The build stores each claim's forward call on its retrieved evidence (what pages show).
    stored = build.verdicts(split)[claim_id].get(source, {}).get("alone", {}).get("torch_logits")
    explained = explain_input(classifier, encoded.input_ids[row], encoded.texts[row], stored)
    ids = build.retrieval(split)[claim_id]["evidences"] if source == "retrieved" else list(claim.evidences)
    out: dict[str, Any] = {
        "claim_id": claim_id,
        "split": split,
        "claim_text": claim.text,
        "label": claim.label,
        "checkpoint": str(classifier.checkpoint),
        "checkpoint_name": Path(str(classifier.checkpoint)).name,
        "evidence_source": source,
        "evidence_ids": ids,
        "evidence": [t for t in (build.passage_text(i) for i in ids) if t is not None],
        **explained,
        "notebook": notebook_batch(build, split, source, row),
    }
    return out
