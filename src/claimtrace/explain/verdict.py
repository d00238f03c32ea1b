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

from claimtrace import constants as C
from claimtrace.errors import DataError

__all__ = ["explain_input", "explain_claim", "margin", "RetrievalView"]


def _floats(values) -> list[float]:
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
    vocab, table = classifier.vocab, classifier.table
    pad_id, unk_id = vocab.index[C.PAD], vocab.index[C.UNK]
    words = text.split()
    tokens = vocab.decode(ids)
    alone = table.logits(np.asarray(ids))
    torch_alone = (
        np.asarray(torch_logits, dtype=np.float64) if torch_logits is not None else classifier.forward_alone(ids)
    )
    shares = table.contributions(ids)
    pad_count = ids.count(pad_id)
    real = len(ids) - pad_count
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
    padding = {
        "token": C.PAD,
        "id": pad_id,
        "count": pad_count,
        "contribution": _floats(table.g[pad_id] * pad_count / len(ids)),
    }
    words_total = np.sum([p["contribution"] for p in per_token], axis=0) if per_token else np.zeros(len(C.LABELS))
    return {
        "text": text,
        "words": len(words),
        "tokens": tokens,
        "input_ids": ids,
        "real_tokens": real,
        "pad_tokens": pad_count,
        "unknown_tokens": int(sum(p["unknown"] for p in per_token)),
        "truncated": len(words) + 2 > C.MAX_LEN,
        "dropped_words": max(0, len(words) + 2 - C.MAX_LEN),
        "alone": {
            "logits": _floats(alone),
            "verdict": C.LABELS[int(np.argmax(alone))],
            "torch_logits": _floats(torch_alone),
            "max_abs_diff_table_vs_torch": float(np.abs(alone - torch_alone).max()),
        },
        "contributions": {
            "labels": list(C.LABELS),
            "bias": _floats(table.bias),
            "tokens": per_token,
            "padding": padding,
            "words_total": _floats(words_total),
            "margin": margin(alone, table.bias, per_token, padding),
        },
    }


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
        "verdict": C.LABELS[win],
        "runner_up": C.LABELS[second],
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
    batch = row // C.BATCH_SIZE
    batch_ids = encoded.claim_ids[batch * C.BATCH_SIZE : (batch + 1) * C.BATCH_SIZE]
    claim_id = encoded.claim_ids[row]
    entry = verdicts[claim_id][source]["notebook"]
    return {
        "logits": _floats(entry["logits"]),
        "verdict": entry["verdict"],
        "batch": batch,
        "position_in_batch": batch_ids.index(claim_id),
        "batch_size": len(batch_ids),
        "neighbours": [
            {"id": cid, "label": verdicts[cid]["label"], "verdict": verdicts[cid][source]["notebook"]["verdict"]}
            for cid in batch_ids
            if cid != claim_id
        ],
    }


def explain_claim(build, claim_id: str, source: str = "retrieved") -> dict:
    """Everything about one course claim's verdict, from a build.

    Parameters
    ----------
    build : claimtrace.workdir.reader.Build
    claim_id : str
        A train, dev or test claim.
    source : {"retrieved", "gold"}
        The evidence the classifier read: what the build retrieved (what the pipeline
        classifies, and what the site shows), or the gold passages (train and dev).
    """
    found = build.locate(claim_id)
    if found is None:
        raise DataError(f"{claim_id}: not a train, dev or test claim")
    split, _ = found
    claim = build.claims(split)[claim_id]
    if source == "gold" and claim.label is None:
        raise DataError(f"{claim_id}: gold evidence exists only for train and dev claims ({split} is unlabelled)")
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


# --- the notebook retrieval's view of any passage ------------------------------------------------


class RetrievalView:
    """The notebook retrieval's view of any passage for one claim, from the build's retrieval
    model (nothing refit): the passage's tags, the tags it shares with the claim, its cosine,
    overlap and score, and the first rule that kept it out of the six returned (or that it was
    returned). One implementation serves the walkthrough's missed gold passages and the passages
    a compared run named (:mod:`claimtrace.compare.runs`).

    Parameters
    ----------
    build : claimtrace.workdir.reader.Build
    record : dict
        The claim's retrieval record (``tags``, ``evidences``, ``fallback``, ``kept``).
    fallback_scores : numpy.ndarray, shape (n_candidates,), optional
        The score of every passage with a non-zero score for this claim (``Retriever.scores``),
        which ranks a passage in the fallback. A trace that already ran the retrieval kernel
        hands its scores down; otherwise the kernel runs once, and only for a fallback claim.
    query : claimtrace.pipeline.retrieval.Query, optional
        The claim's tag string as the retrieval model reads it, when the caller made it (a
        trace); otherwise it is made once, on first use.
    """

    def __init__(self, build, record: dict, fallback_scores: np.ndarray | None = None, query=None):
        self.build = build
        self.record = record
        self._fallback_scores = fallback_scores
        self._query = query
        self.claim_tags = set(record["tags"].split())
        self.returned = {pid: rank for rank, pid in enumerate(record["evidences"], 1)}
        self.kept_rank = {k["id"]: rank for rank, k in enumerate(record["kept"], 1)}
        # The max-shared rule keeps only the passages sharing the most tags; a fallback has no such cut.
        self.max_shared = None if record["fallback"] else max((k["shared"] for k in record["kept"]), default=0)

    def query(self):
        """The claim's :class:`claimtrace.pipeline.retrieval.Query`, made once."""
        if self._query is None:
            self._query = self.build.retriever().query(self.record["tags"])
        return self._query

    def fallback_scores(self) -> np.ndarray:
        if self._fallback_scores is None:
            self._fallback_scores = self.build.retriever().scores(self.query()).score
        return self._fallback_scores

    def passages(self, passage_ids: Sequence[str], gold: Sequence[str] = ()) -> list[dict]:
        """One row per passage id, in the order given.

        Returns
        -------
        list of dict
            ``{"id", "text", "gold", "in_build", "retrievable", "tags", "shared_tags", "cosine",
            "overlap", "score", "shared", "returned_rank", "stopped_by", "why"}``; ``stopped_by``
            is ``"returned"`` for a passage among the claim's six, else the first rule that
            stopped it (``"not in the build"``, ``"no tags"``, the filter's ``"no shared tag"``,
            ``"cosine"`` or ``"overlap"``, ``"max shared"``, ``"past the sixth"``, ``"fallback"``).
        """
        retriever = self.build.retriever()
        store = self.build.passages()
        gold_set = set(gold)
        rows, scored = [], []
        for pid in passage_ids:
            row: dict[str, Any] = {
                "id": pid,
                "text": self.build.passage_text(pid),
                "gold": pid in gold_set,
                "in_build": pid in store,
                "returned_rank": self.returned.get(pid),
            }
            position = retriever.position(pid)
            row["retrievable"] = position is not None
            if not row["in_build"] or position is None:
                row.update({"tags": [], "shared_tags": [], "cosine": None, "overlap": None, "score": None})
                row["shared"] = None
                if not row["in_build"]:
                    row["stopped_by"], row["why"] = "not in the build", "not in this build’s corpus"
                else:
                    row["stopped_by"], row["why"] = "no tags", "it has no usable tag, so it is never a candidate"
            else:
                tags = retriever.tags[position].split()
                row.update({"tags": tags, "shared_tags": sorted(self.claim_tags & set(tags))})
                scored.append((row, position))
            rows.append(row)
        if scored:
            columns = retriever.point_columns(self.query(), [position for _, position in scored])
            for k, (row, _) in enumerate(scored):
                cosine, overlap, score, shared = (x[k] for x in columns)
                row.update({"cosine": float(cosine), "overlap": float(overlap), "score": float(score)})
                row["shared"] = int(shared)
                row["stopped_by"], row["why"] = self._first_stop(row)
        return rows

    def _first_stop(self, row: dict) -> tuple[str, str]:
        """The rule that kept a scored passage out of the returned six: the filter, the max-shared
        cut, the six-passage limit, or its rank in the fallback ("returned" when it is one of them)."""
        rank = row["returned_rank"]
        if rank is not None:
            return "returned", f"returned #{rank} of the {len(self.returned)}"
        failed = filter_stop(row)
        if self.record["fallback"]:
            # Nothing passed, so the fallback's ranking by score is what decided, whatever the filter said.
            higher = int(np.count_nonzero(self.fallback_scores() > row["score"]))
            because = failed[1] if failed else "it passes"
            return "fallback", (
                f"below the sixth in the fallback: nothing passed the filter (here: {because}), so the "
                f"{C.MAX_EVIDENCES} best scores are returned, and {higher:,} passages score higher than this one"
            )
        if failed:
            return failed
        if self.max_shared is not None and row["shared"] < self.max_shared:
            return "max shared", (
                f"cut by the max-shared rule: it shares {row['shared']} tags, the kept ones {self.max_shared}"
            )
        return "past the sixth", f"kept #{self.kept_rank.get(row['id'])}, past the {C.MAX_EVIDENCES} returned"


def filter_stop(row: dict) -> tuple[str, str] | None:
    """The first of the filter's tests a passage fails (None when it passes)."""
    if row["shared"] == 0:
        return "no shared tag", "it shares no tag with the claim (overlap 0)"
    if row["cosine"] <= C.COSINE_THRESHOLD:
        return "cosine", f"cosine {row['cosine']:.3f} ≤ {C.COSINE_THRESHOLD}"
    if row["overlap"] <= C.OVERLAP_THRESHOLD:
        return "overlap", f"overlap {row['overlap']:.3f} ≤ {C.OVERLAP_THRESHOLD}"
    return None
