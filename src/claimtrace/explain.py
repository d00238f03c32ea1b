"""Why one claim's verdict is exactly explainable, and the two ways of running the classifier
(notebook.md section 7).

The notebook's encoder reads its (batch, 128, 256) input as (sequence, batch, features). A claim
alone is a batch of one, so the encoder sees a sequence of length one: attention has a single
key, its softmax weight is 1, and each of the 128 positions is transformed on its own. Its
positional encoding is pe[0] (the claim is first in its batch). With dropout off (eval mode):

    logits = b + (1/128) * sum_t g[token_t],   g[v] = W_fc @ encoder(E[v] * sqrt(128) + pe[0])

``g`` is a 5,886 x 4 table, one row per vocabulary entry. Each token's exact share of the
verdict is its row of g over 128, padding included ([PAD] rows usually weigh a lot: most
inputs are mostly padding).

Two protocols (``constants.PROTOCOLS``):

* ``alone``: every claim as a batch of one, which is what the table computes;
* ``notebook``: batches of 16 in file order, the full model, as the notebook evaluated dev and
  predicted test. A claim's verdict then also depends on its 15 neighbours in the file.

Evidence is a parameter everywhere: a mapping claim id -> passage texts in order. Today that is
:func:`gold_evidence` (train and dev). HOOK for the retrieval stage: pass
``evidence_texts(retrieved_ids, corpus)`` instead, where ``retrieved_ids`` maps each claim id to
its retrieved evidence ids and ``corpus`` maps ids to texts; nothing else changes.
"""

from __future__ import annotations

import copy
import hashlib
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np
import torch

from . import constants as C
from .classifier.inputs import Vocabulary
from .classifier.model import TransformerClassifier, load_model, notebook_logits, publish
from .classifier.train import EvidenceTexts, encode, gold_evidence, load_vocab, make_rows
from .data import Claim, DataError

ASSETS_DIR = Path(__file__).resolve().parent / "assets"

__all__ = [
    "ASSETS_DIR", "Table", "export_table", "save_table", "load_table", "Classifier", "load_classifier",
    "gold_evidence", "evidence_texts", "predict", "evaluate_protocols", "explain_claim",
    "alone_logits_stacked",
]


# --- The table ------------------------------------------------------------------------------------


@dataclass
class Table:
    """``g`` (vocab x 4) and ``bias`` (4,), float64: logits = bias + g[ids].sum() / 128."""

    g: np.ndarray
    bias: np.ndarray

    @property
    def g_float32(self) -> np.ndarray:
        """The table as the site ships it (94 KB): the float64 table rounded to float32."""
        return self.g.astype(np.float32)

    def logits(self, input_ids, float32: bool = False) -> np.ndarray:
        """Protocol "alone" for ids of shape (128,) or (n, 128), computed in float64 (from the
        float32-rounded table when ``float32``)."""
        ids = np.asarray(input_ids)
        g = self.g_float32.astype(np.float64) if float32 else self.g
        bias = self.bias.astype(np.float32).astype(np.float64) if float32 else self.bias
        return bias + g[ids].sum(axis=-2) / ids.shape[-1]

    def contributions(self, input_ids: Sequence[int]) -> np.ndarray:
        """Each position's exact share of the logits: its token's row of g over 128."""
        ids = np.asarray(input_ids)
        return self.g[ids] / ids.shape[-1]


@torch.no_grad()
def export_table(model: TransformerClassifier, dtype: torch.dtype = torch.float64) -> Table:
    """Compute g and b from a model: every vocabulary entry alone, at one position.

    The model is copied to ``dtype`` (float64 by default: the exact table), put in eval mode,
    and the encoder is run once on a "sequence" of length one whose batch is the whole
    vocabulary, which is exactly what it does to each position of a claim alone.
    """
    m = copy.deepcopy(model).to(dtype).eval()
    # Quirk "x sqrt(128)" and quirk "pe by batch position": a claim alone gets pe[0].
    x = m.embedding.weight * math.sqrt(C.MAX_LEN) + m.pos_encoder.pe[C.ALONE_PE_ROW]  # (vocab, 256)
    hidden = m.transformer_encoder(x.unsqueeze(0))[0]  # (1, vocab, 256): length-1 sequence
    g = hidden @ m.fc_out.weight.T  # (vocab, 4), the bias kept apart
    return Table(g.double().numpy().copy(), m.fc_out.bias.double().numpy().copy())


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def save_table(table: Table, path: Path, metadata: Mapping[str, str] | None = None) -> None:
    """Safetensors with ``g`` and ``bias`` in float64 and ``g_float32``/``bias_float32``."""
    import os
    import tempfile

    from safetensors.numpy import save_file

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tensors = {
        "g": np.ascontiguousarray(table.g, dtype=np.float64),
        "bias": np.ascontiguousarray(table.bias, dtype=np.float64),
        "g_float32": np.ascontiguousarray(table.g, dtype=np.float32),
        "bias_float32": np.ascontiguousarray(table.bias, dtype=np.float32),
    }
    meta = {"formula": "logits = bias + sum_t g[token_t] / 128 (a claim alone, eval mode)", **(metadata or {})}
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    try:
        save_file(tensors, tmp, metadata=meta)
        publish(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def load_table(path: Path) -> Table:
    from safetensors.numpy import load_file

    tensors = load_file(str(path))
    return Table(tensors["g"], tensors["bias"])


@torch.no_grad()
def alone_logits_stacked(model: TransformerClassifier, input_ids: torch.Tensor) -> torch.Tensor:
    """Protocol "alone" for many claims in one encoder call (same arithmetic as one call each).

    Alone, a claim's (1, 128, 256) input is a length-1 sequence with a batch of 128 positions;
    stacking n claims side by side makes a length-1 sequence with a batch of n * 128 positions,
    which the encoder transforms independently, just as it would in n separate calls. (Stacking
    them along dim 0 instead would make them attend to each other: the notebook protocol.)
    """
    model.eval()
    n, length = input_ids.shape
    x = model.embedding(input_ids) * math.sqrt(length) + model.pos_encoder.pe[C.ALONE_PE_ROW]
    hidden = model.transformer_encoder(x.reshape(1, n * length, -1)).reshape(n, length, -1)
    return model.fc_out(hidden.mean(dim=1))


# --- A loaded classifier --------------------------------------------------------------------------


@dataclass
class Classifier:
    """A checkpoint, the vocabulary its ids refer to, and its exact table."""

    model: TransformerClassifier
    vocab: Vocabulary
    table: Table
    checkpoint: Path

    def logits(self, input_ids: torch.Tensor, protocol: str) -> np.ndarray:
        """(n, 4) float64 logits for ids in file order under one protocol."""
        if protocol == "alone":
            return self.table.logits(input_ids.numpy())
        if protocol == "notebook":
            return notebook_logits(self.model, input_ids).double().numpy()
        raise ValueError(f"unknown protocol {protocol!r}: expected one of {', '.join(C.PROTOCOLS)}")


def load_classifier(workdir: Path | None = None) -> Classifier:
    """The checkpoint trained into ``workdir`` (``claimtrace train``), else the shipped one.

    The table is recomputed from the checkpoint in float64 (about a second); for the shipped
    checkpoint it equals the shipped table (tests/test_explain.py).
    """
    folder = ASSETS_DIR if workdir is None else Path(workdir)
    checkpoint, vocab_path = folder / C.CHECKPOINT_FILE, folder / C.VOCAB_FILE
    for path in (checkpoint, vocab_path):
        if not path.is_file():
            hint = "run `claimtrace train --workdir DIR` first" if workdir is not None else "reinstall claimtrace"
            raise DataError(f"{path}: file is missing ({hint})")
    model = load_model(checkpoint)
    vocab = load_vocab(vocab_path)
    if len(vocab) != model.embedding.num_embeddings:
        raise DataError(f"{vocab_path}: {len(vocab)} tokens but {checkpoint} embeds {model.embedding.num_embeddings}")
    return Classifier(model, vocab, export_table(model), checkpoint)


# --- Evidence sources -----------------------------------------------------------------------------


def evidence_texts(ids_by_claim: Mapping[str, Sequence[str]], corpus: Mapping[str, str]) -> dict[str, list[str]]:
    """Evidence ids (e.g. retrieved) -> texts, in order; ids not in ``corpus`` contribute
    nothing, as the notebook's left merge."""
    return {cid: [corpus[i] for i in ids if i in corpus] for cid, ids in ids_by_claim.items()}


# --- Both protocols over a split ------------------------------------------------------------------


def _confusion(gold: Sequence[int], predicted: Sequence[int]) -> list[list[int]]:
    matrix = np.zeros((len(C.LABELS), len(C.LABELS)), dtype=int)
    for g, p in zip(gold, predicted):
        matrix[g, p] += 1
    return matrix.tolist()


def predict(classifier: Classifier, claims: Mapping[str, Claim], evidence: EvidenceTexts) -> dict[str, dict]:
    """Per claim (file order): its label and, for each protocol, logits and verdict."""
    encoded = encode(make_rows(claims, evidence), classifier.vocab)
    by_protocol = {p: classifier.logits(encoded.input_ids, p) for p in C.PROTOCOLS}
    out = {}
    for i, cid in enumerate(encoded.claim_ids):
        entry = {"label": claims[cid].label}
        for protocol, logits in by_protocol.items():
            entry[protocol] = {"logits": logits[i].tolist(), "verdict": C.LABELS[int(np.argmax(logits[i]))]}
        out[cid] = entry
    return out


def evaluate_protocols(classifier: Classifier, claims: Mapping[str, Claim], evidence: EvidenceTexts) -> dict:
    """Accuracy and 4x4 confusion (rows: gold label, columns: verdict, in ``LABELS`` order)
    for each protocol, and every claim's verdicts. The claims must be labelled."""
    verdicts = predict(classifier, claims, evidence)
    gold = [C.LABEL_IDS[v["label"]] for v in verdicts.values()]
    summary = {}
    for protocol in C.PROTOCOLS:
        predicted = [C.LABEL_IDS[v[protocol]["verdict"]] for v in verdicts.values()]
        correct = sum(g == p for g, p in zip(gold, predicted))
        summary[protocol] = {
            "accuracy": correct / len(gold),
            "correct": correct,
            "claims": len(gold),
            "confusion": _confusion(gold, predicted),
        }
    return {"labels": list(C.LABELS), "protocols": summary,
            "verdicts": {cid: {"label": v["label"], **{p: v[p]["verdict"] for p in C.PROTOCOLS}} for cid, v in verdicts.items()}}


# --- One claim ------------------------------------------------------------------------------------


def explain_claim(classifier: Classifier, claim_id: str, claims: Mapping[str, Claim], evidence: EvidenceTexts,
                  evidence_source: str = "gold") -> dict:
    """Everything about one claim's verdict. ``claims`` is its whole split in file order (the
    notebook protocol needs its batch of 16); ``evidence`` maps claim ids to passage texts."""
    if claim_id not in claims:
        raise DataError(f"{claim_id}: not in the given claims")
    order = list(claims)
    position = order.index(claim_id)
    batch_index = position // C.BATCH_SIZE
    batch_ids = order[batch_index * C.BATCH_SIZE:(batch_index + 1) * C.BATCH_SIZE]
    batch_claims = {cid: claims[cid] for cid in batch_ids}
    encoded = encode(make_rows(batch_claims, evidence), classifier.vocab)
    row = batch_ids.index(claim_id)
    ids = encoded.input_ids[row]
    ids_list = ids.tolist()
    pad_id = classifier.vocab.index[C.PAD]

    alone = classifier.table.logits(ids.numpy())
    with torch.no_grad():
        torch_alone = classifier.model.eval()(ids.unsqueeze(0))[0].double().numpy()
    notebook = classifier.logits(encoded.input_ids, "notebook")[row]

    shares = classifier.table.contributions(ids.numpy())
    tokens = classifier.vocab.decode(ids_list)
    per_token = [
        {"position": t, "token": tokens[t], "id": ids_list[t], "contribution": shares[t].tolist()}
        for t in range(len(ids_list)) if ids_list[t] != pad_id
    ]
    pad_count = ids_list.count(pad_id)
    padding = {"token": C.PAD, "id": pad_id, "count": pad_count,
               "contribution": (classifier.table.g[pad_id] * pad_count / len(ids_list)).tolist()}
    claim = claims[claim_id]
    return {
        "claim_id": claim_id,
        "claim_text": claim.text,
        "label": claim.label,
        "checkpoint": str(classifier.checkpoint),
        "evidence_source": evidence_source,
        "evidence": list(evidence.get(claim_id, ())),
        "text": encoded.texts[row],
        "tokens": tokens,
        "input_ids": ids_list,
        "real_tokens": len(ids_list) - pad_count,
        "pad_tokens": pad_count,
        "alone": {
            "logits": alone.tolist(),
            "verdict": C.LABELS[int(np.argmax(alone))],
            "torch_logits": torch_alone.tolist(),
            "max_abs_diff_table_vs_torch": float(np.abs(alone - torch_alone).max()),
        },
        "notebook": {
            "logits": notebook.tolist(),
            "verdict": C.LABELS[int(np.argmax(notebook))],
            "batch": batch_index,
            "position_in_batch": row,
            "neighbours": [cid for cid in batch_ids if cid != claim_id],
        },
        "contributions": {
            "labels": list(C.LABELS),
            "bias": classifier.table.bias.tolist(),
            "tokens": per_token,
            "padding": padding,
        },
    }


def provenance(path: Path = ASSETS_DIR / C.PROVENANCE_FILE) -> dict:
    with open(path, encoding="utf-8") as handle:
        return json.load(handle)
