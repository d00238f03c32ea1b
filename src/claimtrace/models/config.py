"""The classifier's hyper-parameters in one record, as nanoGPT's ``GPTConfig``: the defaults are
the notebook's ``TransformerModel`` (notebook.md section 6), quirks included.

:class:`claimtrace.models.transformer.TransformerClassifier` is built from a config and keeps it
(``model.config``). This module imports no torch, so that a page can describe the model without
loading it.
"""

from __future__ import annotations

from dataclasses import dataclass

from claimtrace import constants


@dataclass(frozen=True)
class TransformerConfig:
    """The notebook's Transformer classifier, field by field in the order it reads its input."""

    #: Token ids: ``<unk> [CLS] [SEP] [PAD]``, then the training rows' tokens (models.inputs).
    vocab_size: int = constants.VOCAB_SIZE
    #: Ids per claim, padded or cut (``[CLS]`` ... ``[SEP]``). Quirk "x sqrt(128)": the embedding
    #: is scaled by the square root of this length, not of ``d_model``.
    max_len: int = constants.MAX_LEN
    #: The width of every vector: the embedding, the positional table and the encoder.
    d_model: int = constants.EMBED_DIM
    #: Rows of the sinusoidal positional table. Quirk "pe by batch position": the notebook's model
    #: adds row i to every position of the i-th claim of its mini-batch, so a claim alone reads
    #: row 0 only (``constants.ALONE_PE_ROW``).
    pe_rows: int = constants.PE_MAX_LEN
    #: After the positional encoding and inside each encoder layer (off in eval mode).
    dropout: float = constants.DROPOUT
    #: Encoder layers: post-norm, ReLU, PyTorch's defaults.
    n_layers: int = constants.N_LAYERS
    n_heads: int = constants.N_HEADS
    #: Each encoder layer's feed-forward width.
    ff_dim: int = constants.FF_DIM
    #: Logits, one per label (``constants.LABELS`` order), from the mean over all ``max_len``
    #: positions, ``[PAD]`` included (the notebook passed no padding mask).
    n_classes: int = len(constants.LABELS)
    #: False: the notebook's model. True: the intended one, with exactly two bugs fixed: attention
    #: within a claim (quirk "batch-first bug": the notebook left ``batch_first=False``) and the
    #: positional table by word position.
    fixed: bool = False


@dataclass(frozen=True)
class LSTMConfig:
    """The notebook's other classifier, ``LSTM(input_dim=len(vocab), model_dim=256,
    num_layers=4, num_classes=4, dropout=0.1)`` (its cell "LSTM Classification Model"), field by
    field in the order it reads its input. It shares the Transformer's inputs (models.inputs)."""

    #: Token ids: the same 5,886-entry vocabulary as the Transformer's.
    vocab_size: int = constants.VOCAB_SIZE
    #: Ids per claim, padded with ``[PAD]`` or cut. The LSTM steps through all of them, padding
    #: included (the notebook packed no sequence), and reads its output at the last one.
    max_len: int = constants.MAX_LEN
    #: The embedding's width and each LSTM layer's hidden size (the notebook's ``model_dim``).
    #: Quirk "no embedding scale": unlike the Transformer's, the embedding is used as it is.
    d_model: int = constants.EMBED_DIM
    #: Stacked LSTM layers (``num_layers_lstm = 4``), ``batch_first=True``.
    n_layers: int = constants.LSTM_LAYERS
    #: Between the LSTM's layers (PyTorch's ``dropout=``) and once more on its output before
    #: ``fc_out`` (off in eval mode).
    dropout: float = constants.DROPOUT
    #: Logits, one per label, from the output at position ``max_len - 1`` only.
    n_classes: int = len(constants.LABELS)
