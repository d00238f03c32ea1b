"""The exact table: a claim alone is explained token by token (notebook.md section 7).

The notebook's encoder reads its (batch, 128, 256) input as (sequence, batch, features). A claim
alone is a batch of one, so the encoder sees a sequence of length one: attention has a single
key, its softmax weight is 1, and each of the 128 positions is transformed on its own. Its
positional encoding is pe[0] (the claim is first in its batch). With dropout off (eval mode):

    logits = b + (1/128) * sum_t g[token_t],   g[v] = W_fc @ encoder(E[v] * sqrt(128) + pe[0])

``g`` is a 5,886 x 4 table, one row per vocabulary entry. It gives the protocol "alone" its
logits (:mod:`claimtrace.models.predict`) and each token its exact share of the verdict
(:mod:`claimtrace.explain.verdict`).
"""

from __future__ import annotations

import copy
import hashlib
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from claimtrace.constants import ALONE_PE_ROW
from claimtrace.lib.build_files import atomic_output

if TYPE_CHECKING:  # torch is imported where a model runs: a saved table is read without it
    import torch

    from claimtrace.models.transformer import TransformerClassifier


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


def export_table(model: TransformerClassifier, dtype: torch.dtype | None = None) -> Table:
    """Compute g and b from a model: every vocabulary entry alone, at one position.

    The model is copied to ``dtype`` (``None``: torch.float64, the exact table), put in eval mode,
    and the encoder is run once on a "sequence" of length one whose batch is the whole
    vocabulary, which is exactly what it does to each position of a claim alone.
    """
    import torch

    m = copy.deepcopy(model).to(torch.float64 if dtype is None else dtype).eval()
    with torch.no_grad():
        # Quirk "x sqrt(128)" and quirk "pe by batch position": a claim alone gets pe[0].
        x = m.embedding.weight * math.sqrt(m.config.max_len) + m.pos_encoder.pe[ALONE_PE_ROW]  # (vocab, 256)
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
    from safetensors.numpy import save_file

    tensors = {
        "g": np.ascontiguousarray(table.g, dtype=np.float64),
        "bias": np.ascontiguousarray(table.bias, dtype=np.float64),
        "g_float32": np.ascontiguousarray(table.g, dtype=np.float32),
        "bias_float32": np.ascontiguousarray(table.bias, dtype=np.float32),
    }
    meta = {"formula": "logits = bias + sum_t g[token_t] / 128 (a claim alone, eval mode)", **(metadata or {})}
    with atomic_output(path) as temporary:
        save_file(tensors, str(temporary), metadata=meta)


def load_table(path: Path) -> Table:
    """The float64 table of a file written by :func:`save_table`."""
    from safetensors.numpy import load_file

    tensors = load_file(str(path))
    return Table(tensors["g"], tensors["bias"])


def table_metadata(path: Path) -> dict[str, str]:
    """What a table file says it was made from (``checkpoint_sha256``, ``vocab_sha256``)."""
    from safetensors import safe_open

    with safe_open(str(path), "np") as handle:
        return dict(handle.metadata() or {})
