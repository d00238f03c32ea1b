"""The classifier's exact table for the browser (``api/table.json``): what the page scripts need
to recompute a claim's verdict alone as it is edited, ``g`` packed as base64 float32."""

from __future__ import annotations

import base64
from pathlib import Path

import numpy as np

from claimtrace.constants import CLS, LABELS, MAX_LEN, PAD, SEP, UNK
from claimtrace.workdir.reader import BuildReader


def table_payload(build: BuildReader) -> dict:
    """The classifier's exact table for the browser: ``g`` as little-endian float32, base64."""
    classifier = build.classifier()
    g = np.ascontiguousarray(classifier.table.g, dtype="<f4")
    return {
        "labels": list(LABELS),
        "formula": "logits = bias + (1/128) * sum_t g[token_t]  (a claim alone, eval mode)",
        "shape": list(g.shape),
        "max_len": MAX_LEN,
        "special": {"unk": UNK, "cls": CLS, "sep": SEP, "pad": PAD},
        "bias": [float(x) for x in classifier.table.bias],
        "vocab": list(classifier.vocab.tokens),
        "g_encoding": "base64 of little-endian float32, row-major (vocab x labels)",
        "g_float32_bytes": int(g.nbytes),
        "g": base64.b64encode(g.tobytes()).decode("ascii"),
        "checkpoint": Path(str(classifier.checkpoint)).name,
    }
