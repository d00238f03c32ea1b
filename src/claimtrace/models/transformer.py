"""The notebook's Transformer classifier, exactly as it was written, bug included (notebook.md
section 6).

Read top to bottom:

1. ``embedding``: token ids (batch, 128) -> vectors (batch, 128, 256), multiplied by
   sqrt(src.size(1)) = sqrt(128) (quirk: the usual scale is sqrt(d_model) = sqrt(256)).
2. ``pos_encoder``: adds a sinusoidal table ``pe`` of shape (5000, 1, 256), sliced
   ``pe[:x.size(0)]``. The table is laid out for (sequence, batch, features) input, but x is
   (batch, 128, 256), so x.size(0) is the batch size: row i of the table is added to every
   position of the i-th claim of the mini-batch (quirk "pe by batch position").
3. ``dropout`` (0.1) after the positional encoding.
4. ``transformer_encoder``: 6 post-norm ReLU layers, 8 heads, feed-forward 512, dropout 0.1,
   ``batch_first=False``. It reads the (batch, 128, 256) tensor as (sequence, batch, features):
   attention runs across the claims of a mini-batch at each of the 128 positions, never across
   the words of a claim (quirk "batch-first bug").
5. ``fc_out``: Linear(256, 4) on ``output.mean(dim=1)``: the mean over the 128 positions.

Consequence (claimtrace.explain.verdict): a claim alone (batch of one) gives the encoder a sequence of
length one, so each position is transformed on its own and the logits are a sum of per-token
rows of a 5,886 x 4 table.

Its sizes are a :class:`~claimtrace.models.config.TransformerConfig` (the notebook's by default),
which the model keeps as ``model.config``. ``fixed=True`` there is the "intended" model: the
same network with exactly those two bugs fixed and every other quirk kept (see
:class:`TransformerClassifier`). It has its own trained checkpoint (``claimtrace.models.intended``).

Tensor names are the notebook's (``embedding.weight``, ``pos_encoder.pe``,
``transformer_encoder.layers.N.*``, ``fc_out.weight``/``fc_out.bias``): the notebook's own
class loads a state dict saved from this one with ``load_state_dict(strict=True)``.
"""

from __future__ import annotations

import math
from contextlib import contextmanager

import torch
from torch import nn

from claimtrace.constants import BATCH_SIZE, VOCAB_SIZE
from claimtrace.lib.build_files import atomic_output
from claimtrace.models.config import TransformerConfig


def sinusoidal_table(config: TransformerConfig) -> torch.Tensor:
    """The sine/cosine table of "Attention is all you need", shape (pe_rows, 1, d_model), float32.

    Even features are sin(position * 10000^(-2i/d)), odd features cos of the same angle. The
    arithmetic order is the notebook's (exp of arange times -log(10000)/d, in float32), so the
    table is the buffer the notebook's class registers on the same machine. Its last bits depend
    on the CPU: torch's float32 sin and cos go through MKL's vector maths, which picks code by
    the CPU (row 0, the only row a claim alone reads, is exact everywhere). A checkpoint stores
    its table, so nothing that loads one recomputes it; with ``MKL_CBWR=COMPATIBLE`` MKL gives
    the shipped checkpoint's table on every x86 CPU.
    """
    rows, d_model = config.pe_rows, config.d_model
    position = torch.arange(0, rows, dtype=torch.float).unsqueeze(1)
    frequency = torch.exp(torch.arange(0, d_model, 2).float() * (-math.log(10000.0) / d_model))
    table = torch.zeros(rows, d_model)
    table[:, 0::2] = torch.sin(position * frequency)
    table[:, 1::2] = torch.cos(position * frequency)
    return table.unsqueeze(1)  # (rows, 1, d_model): laid out for sequence-first input


class PositionalEncoding(nn.Module):
    """Adds ``pe[:x.size(0)]`` to x. With the notebook's batch-first input x.size(0) is the batch
    size, so this marks a claim's place in its mini-batch (quirk "pe by batch position")."""

    def __init__(self, config: TransformerConfig):
        super().__init__()
        # A registered (persistent) buffer: it is in the notebook's state dict, so it is in ours.
        self.register_buffer("pe", sinusoidal_table(config))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.pe[: x.size(0)]

    def by_word(self, x: torch.Tensor) -> torch.Tensor:
        """What the notebook meant: x (batch, seq, d) gets row t of the table at word position t,
        the same rows for every claim of the batch. Returns (batch, seq, d)."""
        # pe[:seq] is (seq, 1, d); moved to (1, seq, d) it broadcasts over the batch.
        return x + self.pe[: x.size(1)].transpose(0, 1)


class TransformerClassifier(nn.Module):
    """The notebook's ``TransformerModel``, built from a config (kept as ``self.config``).

    The config's ``fixed=False`` (the default) is the notebook's model; ``fixed=True`` is the
    "intended" model: it fixes the two bugs and nothing else.

    * batch-first attention: the encoder layers are built with ``batch_first=True``, so they read
      (batch, 128, 256) as it is, and attention runs over the 128 positions of each claim;
    * pe by batch position: row t of the table is added at word position t (``by_word``).

    Everything else is the notebook's, on purpose: the x sqrt(src.size(1)) = sqrt(128) embedding
    scale, dropout after the encoding, no padding mask, the mean over all 128 positions
    ([PAD] included), the same layers and initialisation. Both have the same tensors, so a state
    dict loads into either; the shipped ``classifier.safetensors`` was trained with
    ``fixed=False``, ``classifier_intended.safetensors`` with ``fixed=True``.
    """

    def __init__(self, config: TransformerConfig):
        super().__init__()
        self.config = config
        # The notebook's modules in its order: the same seed gives the notebook's initial weights.
        self.embedding = nn.Embedding(config.vocab_size, config.d_model)
        self.pos_encoder = PositionalEncoding(config)
        layer = nn.TransformerEncoderLayer(
            config.d_model,
            config.n_heads,
            dim_feedforward=config.ff_dim,
            dropout=config.dropout,
            # The notebook left batch_first at its default, False (quirk "batch-first bug").
            batch_first=config.fixed,
        )
        # enable_nested_tensor only matters with a padding mask and batch_first=True; the
        # notebook passed no mask, so turning it off changes nothing but PyTorch's warning.
        self.transformer_encoder = nn.TransformerEncoder(layer, config.n_layers, enable_nested_tensor=False)
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
        # dim=1 is the 128 positions in both variants: each claim's output is the mean over its
        # positions, [PAD] included (the notebook passed no mask).
        return self.fc_out(self.encoder_output(src).mean(dim=1))

    def encoder_output(self, src: torch.Tensor) -> torch.Tensor:
        """The encoder's output before the mean, one vector per claim and position.

        Parameters
        ----------
        src : torch.Tensor
            Token ids, shape (batch, 128), int64.

        Returns
        -------
        torch.Tensor
            Shape (batch, 128, 256): [claim, position] in both variants (the notebook's encoder
            mislabels the axes but returns its input's layout).
        """
        # Quirk "x sqrt(128)", kept in both variants: src.size(1) is the sequence length (128),
        # not d_model (256).
        x = self.embedding(src) * math.sqrt(src.size(1))
        if self.config.fixed:
            # Both fixes: pe by word position, and an encoder built with batch_first=True.
            return self.transformer_encoder(self.dropout(self.pos_encoder.by_word(x)))
        # Quirk "pe by batch position": x is (batch, 128, 256), pe is sliced by x.size(0).
        x = self.dropout(self.pos_encoder(x))
        # Quirk "batch-first bug": read as (sequence=batch, batch=128 positions, features).
        return self.transformer_encoder(x)


def build_model(vocab_size: int = VOCAB_SIZE, fixed: bool = False) -> TransformerClassifier:
    """A freshly initialised model of the notebook's configuration with ``vocab_size`` tokens,
    or the intended model if ``fixed`` (PyTorch's default initialisation, as the notebook's)."""
    return TransformerClassifier(TransformerConfig(vocab_size=vocab_size, fixed=fixed))


# --- The two ways of running it -----------------------------------------------------------------


@torch.no_grad()
def notebook_logits(model: nn.Module, input_ids: torch.Tensor, batch_size: int = BATCH_SIZE) -> torch.Tensor:
    """Protocol "notebook": eval mode, consecutive batches of 16 in the given (file) order, as
    the notebook's eval_model and predict ran. A claim's logits depend on its batch-mates."""
    model.eval()
    return torch.cat([model(input_ids[start : start + batch_size]) for start in range(0, len(input_ids), batch_size)])


@torch.no_grad()
def alone_logits(model: nn.Module, input_ids: torch.Tensor) -> torch.Tensor:
    """Protocol "alone": eval mode, every claim as a batch of one, literally one call each."""
    model.eval()
    return torch.cat([model(input_ids[i : i + 1]) for i in range(len(input_ids))])


# --- Threads ------------------------------------------------------------------------------------


@contextmanager
def torch_threads(n: int):
    """Run a block on ``n`` PyTorch CPU threads, then restore the count. Small forward calls
    (batches of 16 x 128) gain nothing from a second thread, and on a busy machine two OpenMP
    threads waiting on each other were many times slower (docs/benchmarks.md, "The build");
    training pins its own count so that a run
    repeats (float sums may depend on how work is split between threads)."""
    previous = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(previous)


# --- Checkpoints --------------------------------------------------------------------------------


def save_checkpoint(model: nn.Module, path, metadata: dict[str, str] | None = None) -> None:
    """Write the state dict (the notebook's tensor names, ``pos_encoder.pe`` included) as
    float32 safetensors, atomically."""
    from safetensors.torch import save_file

    tensors = {name: t.detach().to(torch.float32).contiguous().clone() for name, t in model.state_dict().items()}
    with atomic_output(path) as temporary:
        save_file(tensors, str(temporary), metadata=metadata or {})


def load_state_dict(path) -> dict[str, torch.Tensor]:
    """The tensors of a safetensors checkpoint, by the notebook's names."""
    from safetensors.torch import load_file

    return load_file(str(path))


def model_from_state(state: dict[str, torch.Tensor], fixed: bool = False) -> TransformerClassifier:
    """A model in eval mode with a state dict's weights (strict: every name must match), of the
    notebook's configuration with the state's vocabulary size."""
    model = build_model(vocab_size=state["embedding.weight"].shape[0], fixed=fixed)
    model.load_state_dict(state, strict=True)
    return model.eval()


def load_model(path, fixed: bool = False) -> TransformerClassifier:
    """A model in eval mode with the checkpoint's weights (strict: every name must match)."""
    return model_from_state(load_state_dict(path), fixed)
