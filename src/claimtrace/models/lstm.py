"""The notebook's other classifier, its LSTM, exactly as it was written (the notebook's cell
"LSTM Classification Model"; trained by the same loop as the Transformer, ``train.py``).

Read top to bottom:

1. ``embedding``: token ids (batch, 128) -> vectors (batch, 128, 256), used as they are (quirk
   "no embedding scale": the Transformer multiplies its embedding by sqrt(128), this model not).
2. ``lstm``: 4 stacked LSTM layers of 256, ``batch_first=True``, dropout 0.1 between layers: it
   reads each claim's 128 positions in order, ``[PAD]`` included (nothing is packed or masked).
3. ``dropout`` (0.1) on the LSTM's output, every position (quirk "dropout after the LSTM": off
   in eval mode, it only adds noise to training).
4. ``fc_out``: Linear(256, 4) on ``x[:, -1, :]``, the output at the last of the 128 positions
   (quirk "last position read"). Inputs are padded to 128, so for almost every claim that
   position is a ``[PAD]``: claim-752 has 37 real tokens and 91 ``[PAD]`` s, and its verdict is
   read after the network has stepped through the 91 of them.

Unlike the Transformer, this model has ``batch_first=True``: a claim never meets its batch-mates,
so its logits do not depend on them, and the two protocols ("alone", "notebook") are the same
function of the claim; only the float32 sums' shape differs between a batch of one and of 16
(tests/models/test_lstm.py holds them within ``constants.FLOAT32_AGREEMENT``).

Tensor names are the notebook's (``embedding.weight``, ``lstm.weight_ih_l0`` ...,
``fc_out.weight``/``fc_out.bias``), so the notebook's class loads our state dict strictly. The
shipped checkpoint is float16 (``assets/classifier_lstm.safetensors``), an illustration like the
intended model's: its exactness is not claimed.
"""

from __future__ import annotations

from pathlib import Path

import torch
from torch import nn

from claimtrace.assets import ASSETS_DIR
from claimtrace.constants import CHECKPOINT_FILES, VOCAB_SIZE
from claimtrace.models.config import LSTMConfig
from claimtrace.models.predict import PerClaimClassifier

LSTM_CHECKPOINT = ASSETS_DIR / CHECKPOINT_FILES["lstm"]


class LSTMClassifier(nn.Module):
    """The notebook's ``LSTM(input_dim, model_dim, num_layers, num_classes, dropout)``, built
    from a config (kept as ``self.config``)."""

    def __init__(self, config: LSTMConfig):
        super().__init__()
        self.config = config
        # The notebook's modules in its order (embedding, lstm, fc_out, dropout): the same seed
        # gives the same initial weights.
        self.embedding = nn.Embedding(config.vocab_size, config.d_model)
        # batch_first=True, unlike the notebook's Transformer: each claim is its own sequence.
        self.lstm = nn.LSTM(config.d_model, config.d_model, config.n_layers, batch_first=True, dropout=config.dropout)
        self.fc_out = nn.Linear(config.d_model, config.n_classes)
        self.dropout = nn.Dropout(config.dropout)

    def forward(self, src: torch.Tensor) -> torch.Tensor:
        """Logits of a mini-batch.

        Parameters
        ----------
        src : torch.Tensor
            Token ids, shape (batch, 128), int64.

        Returns
        -------
        torch.Tensor
            Logits, shape (batch, 4), float32.
        """
        # Quirk "no embedding scale": the vectors go in as the embedding gives them.
        return self.logits_from_embeddings(self.embedding(src))

    def logits_from_embeddings(self, embedded: torch.Tensor) -> torch.Tensor:
        """The model after its embedding: what an attribution method varies.

        Parameters
        ----------
        embedded : torch.Tensor
            Shape (batch, 128, 256), float32: ``self.embedding(src)`` or a blend of such rows.

        Returns
        -------
        torch.Tensor
            Logits, shape (batch, 4).
        """
        # Every position is stepped through, [PAD] included: no packing, no mask.
        outputs, _ = self.lstm(embedded)
        # Quirk "dropout after the LSTM": on every position's output, before one is picked.
        outputs = self.dropout(outputs)
        # Quirk "last position read": x[:, -1, :], the 128th position, usually a [PAD].
        return self.fc_out(outputs[:, -1, :])


def build_lstm(vocab_size: int = VOCAB_SIZE) -> LSTMClassifier:
    """A freshly initialised LSTM of the notebook's configuration (PyTorch's default
    initialisation, as the notebook's)."""
    return LSTMClassifier(LSTMConfig(vocab_size=vocab_size))


def load_lstm_model(path=None) -> LSTMClassifier:
    """The LSTM with a checkpoint's weights (float16 or float32 on disk), in float32, eval mode.

    Parameters
    ----------
    path : path-like, optional
        A safetensors checkpoint whose metadata says ``variant: lstm`` (default: the shipped
        ``assets/classifier_lstm.safetensors``).

    Returns
    -------
    LSTMClassifier
        Token ids (batch, 128) -> logits (batch, 4); its vocabulary is ``classifier_vocab.json``.
    """
    from safetensors.torch import load_file

    from claimtrace.models.intended import checkpoint_metadata

    path = LSTM_CHECKPOINT if path is None else Path(path)
    variant = checkpoint_metadata(path).get("variant")
    if variant != "lstm":  # a Transformer's weights would fail on names; say which they are
        raise ValueError(f"{path}: weights of the {variant!r} model, not the LSTM")
    state = {name: t.to(torch.float32) for name, t in load_file(str(path)).items()}
    model = build_lstm(vocab_size=state["embedding.weight"].shape[0])
    model.load_state_dict(state, strict=True)
    return model.eval()


class LSTMVerdicts(PerClaimClassifier):
    """The shipped LSTM behind ``logits(input_ids, protocol)``: one computation serves both
    protocols (module docstring), each distinct input computed once."""

    def __init__(self, model: LSTMClassifier | None = None):
        super().__init__(load_lstm_model() if model is None else model)
