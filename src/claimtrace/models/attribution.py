"""Attribution methods on a classifier's input, and the exact answer they are graded against.

A method explains one number of one input: here the verdict's lead over the runner-up,
``F(x) = logit[verdict] - logit[runner-up]`` (the two classes read off the claim's own logits,
as :func:`claimtrace.explain.verdict.margin` splits it on the claim page). Each method answers
per token position; "absent" is a ``[PAD]`` in that position, the token the notebook's inputs
are filled with. The four methods are Captum's, on the embedded input:

* ``occlusion``: each position replaced by ``[PAD]``'s embedding, one at a time (Captum's
  ``Occlusion`` with a window of one position);
* ``integrated_gradients``: gradients along the straight line from the all-``[PAD]`` input to
  the claim's (:data:`IG_STEPS` Gauss-Legendre steps, Captum's default rule);
* ``kernel_shap`` and ``lime``: :data:`SAMPLES` random coalitions of positions each, Captum's
  defaults otherwise (KernelSHAP: the Shapley kernel and a least-squares fit; LIME: each position
  kept with probability 1/2, an exponential kernel on cosine distance, a Lasso fit with
  alpha 0.01), seeded with :data:`SEED` before every claim so that a claim's answer does not
  depend on which claims were done before it.

The exact answer (:func:`exact_shares`): under the protocol "alone" the notebook's Transformer
transforms each position on its own (:mod:`claimtrace.models.table`), so ``F`` is a sum over
positions, and replacing position t by ``[PAD]`` changes ``F`` by exactly
``(g[token_t] - g[PAD]) / 128`` read at (verdict - runner-up), whatever else is present. That
is each position's Shapley value, its occlusion effect and its integrated gradient at once; the
sum over positions is ``F(x) - F(all [PAD])``. A method that ranks, signs or sums otherwise is
wrong on this model, which is what makes the grading (:mod:`claimtrace.evaluation.attribution`)
possible.

Any model plugs in through a forward callable: embedded inputs (n, 128, d) -> logits (n, 4),
and the embedding table; :func:`transformer_alone` makes the Transformer's.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from claimtrace.constants import ALONE_PE_ROW

#: The methods, in the order every table lists them.
METHODS = ("occlusion", "integrated_gradients", "kernel_shap", "lime")
#: Their names in prose.
METHOD_NAMES = {
    "occlusion": "Occlusion by [PAD]",
    "integrated_gradients": "Integrated Gradients",
    "kernel_shap": "KernelSHAP",
    "lime": "LIME",
}
#: Integrated Gradients' steps along the path (Captum's default is 50; 24 keep the command under
#: its time budget, and the completeness grade shows what they cost).
IG_STEPS = 24
#: Coalitions sampled per claim by KernelSHAP and by LIME.
SAMPLES = 256
#: torch's seed before each claim's KernelSHAP and LIME.
SEED = 2024
#: Perturbed inputs per forward call (occlusion, KernelSHAP, LIME).
PER_CALL = 128

#: embedded inputs (n, 128, d) float32 -> logits (n, 4)
Forward = Callable[["torch.Tensor"], "torch.Tensor"]  # noqa: F821 (torch is imported where used)


@dataclass
class Attributions:
    """One claim's answers: per method, one float per position (zeros at ``[PAD]``), the
    seconds it took (wall) and the CPU seconds of its process (on a busy machine the wall time
    says more about the neighbours than about the method); the target classes and ``F`` at the
    input and at the all-``[PAD]`` input."""

    verdict: int
    runner_up: int
    margin: float
    baseline_margin: float
    values: dict[str, np.ndarray]
    seconds: dict[str, float]
    cpu_seconds: dict[str, float]


def target_classes(logits: Sequence[float]) -> tuple[int, int]:
    """The verdict and the runner-up (ties to the earlier label, as ``margin`` orders them)."""
    order = np.argsort(-np.asarray(logits, dtype=np.float64), kind="stable")
    return int(order[0]), int(order[1])


def exact_shares(g: np.ndarray, ids: Sequence[int], pad_id: int, verdict: int, runner_up: int) -> np.ndarray:
    """Each position's exact share of ``F(x) - F(all [PAD])`` under the protocol "alone".

    Parameters
    ----------
    g : ndarray, shape (vocab, 4)
        The exact table (:class:`claimtrace.models.table.Table`'s ``g``).
    ids : sequence of int, length L (128)
    pad_id, verdict, runner_up : int

    Returns
    -------
    ndarray of float64, shape (L,)
        ``(g[id_t] - g[PAD]) / L`` at (verdict - runner-up); exactly 0 at ``[PAD]`` positions.
    """
    ids = np.asarray(ids)
    push = g[:, verdict] - g[:, runner_up]
    return (push[ids] - push[pad_id]) / len(ids)


def transformer_alone(model) -> Forward:
    """The notebook's Transformer (``fixed=False``) under the protocol "alone", as a forward
    callable on embedded inputs: every row of the batch is its own claim of a batch of one.

    Alone, each position is transformed on its own (a length-1 sequence whose "batch" is the
    128 positions), so the rows of a batch of perturbed inputs go through the encoder once per
    distinct row (perturbations repeat most rows): the same arithmetic as one call per input,
    gradients included (:func:`_distinct`).
    """
    import torch

    if model.config.fixed:
        raise ValueError("transformer_alone: the intended model attends across positions; it has no per-position form")
    model.eval()
    projection = row_projection(model.config.d_model)

    def forward(embedded: torch.Tensor) -> torch.Tensor:
        n, length, d = embedded.shape
        # Quirk "x sqrt(128)" and quirk "pe by batch position" (a claim alone gets pe[0]).
        x = embedded * math.sqrt(length) + model.pos_encoder.pe[ALONE_PE_ROW]
        rows, where = _distinct(x.reshape(n * length, d), projection)
        # A claim's own call runs the encoder on its 128 rows; on some CPUs (AVX-512) PyTorch's
        # matrix products take another path, with other float32 roundings, for fewer than 16
        # rows. A few distinct rows are run among copies of the first up to 128, as the claim's
        # own call is, so that each row's output has its bits.
        short = max(0, length - len(rows))
        if short:
            rows = torch.cat([rows, rows[:1].detach().expand(short, d)])
        out = model.transformer_encoder(rows.unsqueeze(0))[0]  # (distinct rows [+ copies], d)
        return model.fc_out(out[where].reshape(n, length, d).mean(dim=1))

    return forward


def _distinct(x, projection):
    """The distinct rows of ``x`` (N, d) and where each row of ``x`` is among them.

    Rows are told apart by their dot product with ``projection`` (:func:`row_projection`;
    ``torch.unique(dim=0)`` sorts whole rows, far slower), and the result is checked row for row:
    a collision falls back to the sort.
    With gradients, each distinct row's gradient is shared equally among the rows it stands
    for: every copy reaches the output through the same function with the same weight (1/128
    of its own input's mean), so each copy's true gradient is that share.
    """
    import torch

    with torch.no_grad():
        flat = x.detach()
        keys = flat.double() @ projection
        _, where, counts = torch.unique(keys, return_inverse=True, return_counts=True)
        first = torch.full((len(counts),), len(flat), dtype=torch.long).scatter_reduce(
            0, where, torch.arange(len(flat)), reduce="amin"
        )
        rows = flat[first]
        if not torch.equal(rows[where], flat):
            rows, where, counts = torch.unique(flat, dim=0, return_inverse=True, return_counts=True)
    if not x.requires_grad:
        return rows, where
    summed = torch.zeros_like(rows).index_add(0, where, x)
    # the value stays ``rows`` exactly (summed - summed.detach() is 0); the gradient is 1/count
    return rows + (summed - summed.detach()) / counts.unsqueeze(1).to(x.dtype), where


def row_projection(d: int):
    """A fixed random (d,) float64 vector, the same on every call (seeded with :data:`SEED`): a
    row's key in :func:`_distinct` is its dot product with it. A forward callable makes it once."""
    import torch

    return torch.randn(d, dtype=torch.float64, generator=torch.Generator().manual_seed(SEED))


def attribute(
    forward: Forward, embedding, ids: Sequence[int], pad_id: int, methods: Sequence[str] = METHODS
) -> Attributions:
    """Every method's per-position attribution of ``F`` for one input.

    Parameters
    ----------
    forward : callable
        Embedded inputs (n, L, d) -> logits (n, 4).
    embedding : torch.Tensor, shape (vocab, d)
        The model's embedding table.
    ids : sequence of int, length L
    pad_id : int
        The ``[PAD]`` id: absent positions are its embedding.
    methods : names from :data:`METHODS`

    Returns
    -------
    Attributions
        ``values[method]``: float64, shape (L,), zeros at ``[PAD]`` positions.
    """
    import torch

    ids_t = torch.as_tensor(np.asarray(ids, dtype=np.int64))
    with torch.no_grad():
        x = embedding[ids_t].unsqueeze(0).detach()  # (1, L, d)
        base = embedding[torch.full_like(ids_t, pad_id)].unsqueeze(0).detach()
        logits = forward(torch.cat([x, base])).double().numpy()
    verdict, runner_up = target_classes(logits[0])

    def lead(embedded):
        out = forward(embedded)
        return out[:, verdict] - out[:, runner_up]

    real = ids_t != pad_id
    mask = _feature_mask(real, x.shape[-1])
    values, seconds, cpu = {}, {}, {}
    for method in methods:
        start, cpu_start = time.perf_counter(), time.process_time()
        per_position = _RUNNERS[method](lead, x, base, mask)[0]  # (L,)
        values[method] = np.where(real.numpy(), per_position.detach().double().numpy(), 0.0)
        seconds[method] = time.perf_counter() - start
        cpu[method] = time.process_time() - cpu_start
    return Attributions(
        verdict,
        runner_up,
        float(logits[0, verdict] - logits[0, runner_up]),
        float(logits[1, verdict] - logits[1, runner_up]),
        values,
        seconds,
        cpu,
    )


def _feature_mask(real, d: int):
    """Features for KernelSHAP and LIME: each real position its own (0 .. k-1), every ``[PAD]``
    position one more feature together (replacing [PAD] by [PAD] changes nothing)."""
    import torch

    feature = torch.full(real.shape, int(real.sum()), dtype=torch.long)
    feature[real] = torch.arange(int(real.sum()))
    return feature.view(1, -1, 1).expand(1, -1, d).contiguous()


def _occlusion(lead, x, base, mask):
    import torch
    from captum.attr import Occlusion

    with torch.no_grad():
        d = x.shape[-1]
        out = Occlusion(lead).attribute(
            x, sliding_window_shapes=(1, d), strides=(1, d), baselines=base, perturbations_per_eval=PER_CALL
        )
    return out[:, :, 0]  # each dimension of a position holds the whole change its window made


def _integrated_gradients(lead, x, base, mask):
    from captum.attr import IntegratedGradients

    out = IntegratedGradients(lead).attribute(x, baselines=base, n_steps=IG_STEPS, internal_batch_size=IG_STEPS)
    return out.sum(dim=-1)  # a position's share: its d dimensions' together


def _kernel_shap(lead, x, base, mask):
    import torch
    from captum.attr import KernelShap

    torch.manual_seed(SEED)
    with torch.no_grad():
        out = KernelShap(lead).attribute(
            x, baselines=base, feature_mask=mask, n_samples=SAMPLES, perturbations_per_eval=PER_CALL
        )
    return out[:, :, 0]  # every feature's value is repeated over its d dimensions


def _lime(lead, x, base, mask):
    import torch
    from captum.attr import Lime

    torch.manual_seed(SEED)
    with torch.no_grad():
        out = Lime(lead).attribute(
            x, baselines=base, feature_mask=mask, n_samples=SAMPLES, perturbations_per_eval=PER_CALL
        )
    return out[:, :, 0]


_RUNNERS = {
    "occlusion": _occlusion,
    "integrated_gradients": _integrated_gradients,
    "kernel_shap": _kernel_shap,
    "lime": _lime,
}
