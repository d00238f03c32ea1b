"""Protocol "alone" for many claims in one encoder call, to hold the exact table and the
float32 model against each other over thousands of claims in a test's time."""

from __future__ import annotations

import math

import torch

from claimtrace.constants import ALONE_PE_ROW
from claimtrace.models.transformer import TransformerClassifier


def alone_logits_stacked(model: TransformerClassifier, input_ids: torch.Tensor) -> torch.Tensor:
    """Protocol "alone" for many claims in one encoder call (the same arithmetic as one call each,
    in other float32 shapes).

    Alone, a claim's (1, 128, 256) input is a length-1 sequence with a batch of 128 positions, so
    each position is transformed on its own and its output depends on its token only: the encoder
    runs once over the claims' distinct tokens side by side (a length-1 sequence with a batch of
    one position per distinct token), and each claim gathers its 128 rows. (Stacking claims
    along dim 0 instead would make them attend to each other: the notebook protocol.)
    """
    model.eval()
    length = input_ids.shape[1]
    with torch.no_grad():
        tokens, where = torch.unique(input_ids, return_inverse=True)
        x = model.embedding(tokens) * math.sqrt(length) + model.pos_encoder.pe[ALONE_PE_ROW]
        rows = model.transformer_encoder(x.unsqueeze(0))[0]  # (distinct tokens, 256)
        return model.fc_out(rows[where].mean(dim=1))  # (n, 128, 256) -> (n, 256) -> (n, 4)
