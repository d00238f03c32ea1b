"""A verdict's softmax over its four logits: the model's score for each label, scaled to sum to one.

The notebook's classifier is trained with cross-entropy, so its softmax is what it was pushed to
make large for the right label; it is not calibrated, and it says nothing of whether a claim is
true. Pages print it beside the logits with that said (docs/web.md, "The verdict's softmax").
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["softmax"]


def softmax(logits: Sequence[float]) -> list[float]:
    """``exp(l_i - max l) / sum_j exp(l_j - max l)`` in float64, LABELS order (the shift keeps
    large logits finite and changes nothing else)."""
    values = np.asarray(logits, dtype=np.float64)
    shifted = np.exp(values - values.max())
    return (shifted / shifted.sum()).tolist()
