"""The intended classifier's shipped checkpoint: writing it in float16 and loading it back.

The intended model is the notebook's model with its two bugs fixed (``transformer.py``,
``fixed=True``), trained exactly as the notebook's (``train.py``, ``--variant intended``). Its
best-dev checkpoint ships in ``assets/classifier_intended.safetensors`` as float16, half the size
of float32: it is an illustration of what the fixes cost or gain, not a reproduction, so its
exactness is not claimed (its logits differ from the float32 weights' in the last digits, and a
verdict near a tie may flip; ``classifier_intended_provenance.json`` records the float16
checkpoint's own accuracies). Its ids refer to the same vocabulary as the notebook's checkpoint,
``assets/classifier_vocab.json``.

The notebook's checkpoint is loaded by ``claimtrace.models.predict.load_classifier`` (float32,
its table and vocabulary); :func:`load_intended_model` is its sibling for the intended one.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch

from claimtrace.assets import ASSETS_DIR
from claimtrace.constants import CHECKPOINT_FILES, PROVENANCE_FILES
from claimtrace.lib.build_files import atomic_output
from claimtrace.models.config import TransformerConfig
from claimtrace.models.predict import PerClaimClassifier
from claimtrace.models.transformer import TransformerClassifier, model_from_state, sinusoidal_table

INTENDED_CHECKPOINT = ASSETS_DIR / CHECKPOINT_FILES["intended"]
INTENDED_PROVENANCE = ASSETS_DIR / PROVENANCE_FILES["intended"]

#: float16 keeps 11 significant bits: a value in [-1, 1] is off by at most 2**-12 after rounding
#: (twice that leaves room for another CPU's last bits of sin and cos).
_FLOAT16_PE_TOLERANCE = 2.0**-11


def save_float16_checkpoint(state: dict[str, torch.Tensor], path, metadata: dict[str, str] | None = None) -> None:
    """Write a state dict as float16 safetensors, atomically (the notebook's tensor names).

    Parameters
    ----------
    state : dict of str to torch.Tensor
        A float32 state dict (``embedding.weight`` (vocab, 256), ``pos_encoder.pe``
        (5000, 1, 256), the encoder's and ``fc_out``'s tensors).
    path : path-like
        The file to write.
    metadata : dict of str to str, optional
        Stored in the file's header (``variant`` should say which model the weights are for).
    """
    from safetensors.torch import save_file

    tensors = {name: t.detach().to(torch.float16).contiguous().clone() for name, t in state.items()}
    with atomic_output(path) as temporary:
        save_file(tensors, str(temporary), metadata={"dtype": "float16", **(metadata or {})})


def checkpoint_metadata(path) -> dict[str, str]:
    """The header metadata of a safetensors file (``variant``, ``seed``, ``epoch``, ...)."""
    from safetensors import safe_open

    with safe_open(str(path), framework="pt") as handle:
        return dict(handle.metadata() or {})


def float32_state(path) -> dict[str, torch.Tensor]:
    """A float16 checkpoint's tensors widened to float32, ``pos_encoder.pe`` restored exactly.

    Parameters
    ----------
    path : path-like
        A safetensors checkpoint written by :func:`save_float16_checkpoint`.

    Returns
    -------
    dict of str to torch.Tensor
        The state dict in float32; ``pos_encoder.pe`` is (5000, 1, 256).
    """
    from safetensors.torch import load_file

    state = {name: t.to(torch.float32) for name, t in load_file(str(path)).items()}
    # pe is a constant the model was trained with, not a learnt weight: float16 only blurred it,
    # so put back the exact table, after checking the file's copy is that table, rounded. Only
    # the rows the model reads (word positions 0-127) are compared: far rows (sin of angles up to
    # 5000) differ between CPUs' sin by up to 2.4e-4 before any rounding.
    config = TransformerConfig(fixed=True)
    exact = sinusoidal_table(config)
    stored = state["pos_encoder.pe"]
    used = slice(0, config.max_len)
    if stored.shape != exact.shape or (stored[used] - exact[used]).abs().max() > _FLOAT16_PE_TOLERANCE:
        raise ValueError(f"{path}: pos_encoder.pe is not the sinusoidal table")
    state["pos_encoder.pe"] = exact
    return state


def load_intended_model(path=None) -> TransformerClassifier:
    """The intended classifier (``fixed=True``) with the shipped float16 weights, in float32.

    Parameters
    ----------
    path : path-like, optional
        A float16 checkpoint (default: ``assets/classifier_intended.safetensors``).

    Returns
    -------
    TransformerClassifier
        ``fixed=True``, eval mode, float32: token ids (batch, 128) -> logits (batch, 4). Its
        vocabulary is ``assets/classifier_vocab.json`` (``train.load_vocab``).
    """
    path = INTENDED_CHECKPOINT if path is None else Path(path)
    variant = checkpoint_metadata(path).get("variant")
    if variant != "intended":  # the two models share tensor names: refuse the wrong weights
        raise ValueError(f"{path}: weights of the {variant!r} model, not the intended one")
    return model_from_state(float32_state(path), fixed=True)


def intended_provenance(path=None) -> dict:
    """The shipped intended checkpoint's provenance: seed, per-epoch curve, hashes, versions."""
    with open(INTENDED_PROVENANCE if path is None else path, encoding="utf-8") as handle:
        return json.load(handle)


class IntendedClassifier(PerClaimClassifier):
    """The intended model behind :func:`claimtrace.models.predict.predict`'s interface.

    Its attention runs within a claim and its positional encoding marks words, so a claim's
    logits do not depend on its batch-mates: "alone" (a batch of one) and "notebook" (batches of
    16 in file order) are the same function of the claim, and one computation serves both
    protocols (:class:`~claimtrace.models.predict.PerClaimClassifier`). tests/models/test_intended.py
    holds the logits within ``constants.FLOAT32_AGREEMENT`` of both calls and every demo verdict to
    theirs. The model has no exact table, and its float16 weights claim no exactness anyway
    (module docstring).
    """

    def __init__(self, model: TransformerClassifier | None = None):
        super().__init__(load_intended_model() if model is None else model)
