"""The legal-action logits as one fused kernel on the CPU (``agents.network.pair_logits``).

A position has ~9 legal actions of 3,519, so the policy head's logits are computed
only for the (row, action) pairs of a batch: row ``rows[p]`` of the torso output
``h`` dotted with row ``cols[p]`` of the head's weight, plus its bias. Written in
torch ops (``index_select`` both sides, multiply, sum) a 2,048-row minibatch
materialises three pairs x hidden tensors forward and three more backward, and
its backward scatters them back with ``index_add``: ~40% of a PPO update on a
2-core CPU (bench/README.md, "The legal logits in one kernel"). Here the forward
pass is one loop of dot products and the backward pass one loop of two
``axpy`` per pair, straight into the gradients, reading ``h`` and the head in
place (a 2,048 x 256 torso output and a 3,519 x 256 head fit in cache).

Layout of the arguments (the same as ``pair_logits``'):

| argument | shape | dtype |
|---|---|---|
| ``h`` | (rows, hidden) | float32, C-contiguous |
| ``weight`` | (actions, hidden) | float32, C-contiguous |
| ``bias`` | (actions,) | float32 |
| ``rows``, ``cols`` | (pairs,) | int64 |

The sums run in a fixed order (one thread, pairs in order), so a result is the
same on every call; it differs from torch's ``(a * b).sum(1)`` only by float
rounding (~1e-7 relative). Anything else (a GPU, another dtype) keeps the torch
ops: :func:`fused_eligible` says which. ``BURAKO_PAIR_KERNEL=0`` in the environment
keeps the torch ops everywhere (the benchmark's before, ``bench/bench_training.py
--variant torchpairs:env.BURAKO_PAIR_KERNEL=0``).
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import torch
from numba import njit

#: reassociation lets the dot products vectorise; no ``nnan``/``ninf``, so a NaN or an infinity
#: in the weights still comes out as one
_FASTMATH = {"reassoc", "contract", "nsz", "arcp"}

#: False: the torch ops everywhere (``BURAKO_PAIR_KERNEL=0``, read once at import)
ENABLED = os.environ.get("BURAKO_PAIR_KERNEL", "1") != "0"


@njit(cache=True, nogil=True, fastmath=_FASTMATH)
def _forward(
    h: np.ndarray, rows: np.ndarray, weight: np.ndarray, bias: np.ndarray, cols: np.ndarray, out: np.ndarray
) -> None:  # pragma: no cover - compiled
    width = h.shape[1]
    for p in range(rows.shape[0]):
        r = rows[p]
        c = cols[p]
        total = h[r, 0] * weight[c, 0]
        for k in range(1, width):
            total += h[r, k] * weight[c, k]
        out[p] = total + bias[c]


@njit(cache=True, nogil=True, fastmath=_FASTMATH)
def _backward(
    grad: np.ndarray,
    h: np.ndarray,
    rows: np.ndarray,
    weight: np.ndarray,
    cols: np.ndarray,
    grad_h: np.ndarray,
    grad_weight: np.ndarray,
    grad_bias: np.ndarray,
    want_h: bool,
    want_weight: bool,
    want_bias: bool,
) -> None:  # pragma: no cover - compiled
    width = h.shape[1]
    for p in range(rows.shape[0]):
        r = rows[p]
        c = cols[p]
        g = grad[p]
        if want_h:
            for k in range(width):
                grad_h[r, k] += g * weight[c, k]
        if want_weight:
            for k in range(width):
                grad_weight[c, k] += g * h[r, k]
        if want_bias:
            grad_bias[c] += g


@njit(cache=True, nogil=True, fastmath=_FASTMATH)
def _sample(
    h: np.ndarray,
    rows: np.ndarray,
    weight: np.ndarray,
    bias: np.ndarray,
    cols: np.ndarray,
    uniforms: np.ndarray,
    chosen: np.ndarray,
    chosen_logp: np.ndarray,
) -> int:  # pragma: no cover - compiled
    """Gumbel-max over each row's pairs: ``chosen[r]`` the pair drawn for row ``r``, ``chosen_logp[r]``
    its log-probability under the row's softmax; returns a row where none was drawn (no pair, or NaN
    logits: no NaN key beats another), or -1."""
    n = chosen.shape[0]
    logits = np.empty(rows.shape[0], dtype=np.float32)
    _forward(h, rows, weight, bias, cols, logits)  # the logits as fused_pair_logits computes them
    top = np.full(n, -np.inf, dtype=np.float32)
    total = np.zeros(n, dtype=np.float32)
    best = np.full(n, -np.inf, dtype=np.float32)
    tiny = np.finfo(np.float32).tiny
    for p in range(rows.shape[0]):
        r = rows[p]
        if logits[p] > top[r]:
            top[r] = logits[p]
    for p in range(rows.shape[0]):
        r = rows[p]
        total[r] += np.exp(logits[p] - top[r])
    chosen[:] = -1
    for p in range(rows.shape[0]):
        r = rows[p]
        logp = (logits[p] - top[r]) - np.log(total[r])
        key = logp - np.log(-np.log(max(uniforms[p], tiny)))
        if key > best[r]:  # strictly: the first of equal keys, as the torch ops pick
            best[r] = key
            chosen[r] = p
            chosen_logp[r] = logp
    for r in range(n):
        if chosen[r] < 0:
            return r
    return -1


def fused_sample(
    h: torch.Tensor,
    rows: torch.Tensor,
    weight: torch.Tensor,
    bias: torch.Tensor,
    cols: torch.Tensor,
    uniforms: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor]:
    """One legal pair per row of ``h`` by Gumbel-max in one compiled loop, without gradients: ``(pair
    index per row, its log-probability)``. The logits as :func:`fused_pair_logits` computes them, the
    softmax and the draw as ``training.network.sample_actions``' torch ops do from the same
    ``uniforms`` (one per pair): the same draws up to float rounding, in one call where those took
    ~20 small ops (~255 -> ~150 us a rollout step of 130 rows, with the pairs' own cost)."""
    chosen = torch.empty(h.shape[0], dtype=torch.int64)
    chosen_logp = torch.empty(h.shape[0], dtype=torch.float32)
    empty = _sample(
        _array(h),
        rows.to(torch.int64).contiguous().numpy(),
        _array(weight),
        _array(bias),
        cols.to(torch.int64).contiguous().numpy(),
        _array(uniforms.to(torch.float32)),
        chosen.numpy(),
        chosen_logp.numpy(),
    )
    if empty >= 0:
        raise ValueError(f"sample: row {empty} has no legal action, or NaN logits (a NaN in the network)")
    return chosen, chosen_logp


def fused_eligible(h: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> bool:
    """Whether :func:`fused_pair_logits` serves: float32 tensors on the CPU."""
    return (
        ENABLED
        and h.device.type == "cpu"
        and weight.device.type == "cpu"
        and h.dtype == torch.float32
        and weight.dtype == torch.float32
        and bias.dtype == torch.float32
        and h.dim() == 2
        and h.shape[1] > 0
    )


def _array(tensor: torch.Tensor) -> np.ndarray:
    return tensor.detach().contiguous().numpy()


class _PairLogits(torch.autograd.Function):
    @staticmethod
    def forward(  # type: ignore[override]
        ctx: Any, h: torch.Tensor, rows: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, cols: torch.Tensor
    ) -> torch.Tensor:
        rows = rows.to(torch.int64).contiguous()
        cols = cols.to(torch.int64).contiguous()
        out = torch.empty(rows.shape[0], dtype=h.dtype)
        _forward(_array(h), rows.numpy(), _array(weight), _array(bias), cols.numpy(), out.numpy())
        ctx.save_for_backward(h, rows, weight, cols)
        ctx.bias_shape = bias.shape
        return out

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor | None, ...]:  # type: ignore[override]
        h, rows, weight, cols = ctx.saved_tensors
        want_h, _, want_weight, want_bias, _ = ctx.needs_input_grad
        grad_h = torch.zeros_like(h) if want_h else h.new_zeros((1, 1))
        grad_weight = torch.zeros_like(weight) if want_weight else weight.new_zeros((1, 1))
        grad_bias = weight.new_zeros(ctx.bias_shape) if want_bias else weight.new_zeros(1)
        _backward(
            _array(grad.to(h.dtype)),
            _array(h),
            rows.numpy(),
            _array(weight),
            cols.numpy(),
            grad_h.numpy(),
            grad_weight.numpy(),
            grad_bias.numpy(),
            want_h,
            want_weight,
            want_bias,
        )
        return (
            grad_h if want_h else None,
            None,
            grad_weight if want_weight else None,
            grad_bias if want_bias else None,
            None,
        )


def fused_pair_logits(
    h: torch.Tensor, rows: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, cols: torch.Tensor
) -> torch.Tensor:
    """``pair_logits`` in one compiled loop: the same values up to float rounding, with gradients."""
    return _PairLogits.apply(h, rows, weight, bias, cols)


def compile_kernels() -> None:
    """Compile (or load from numba's disk cache) both kernels on a tiny problem."""
    h = torch.ones(2, 4, requires_grad=True)
    weight = torch.ones(3, 4, requires_grad=True)
    bias = torch.zeros(3, requires_grad=True)
    fused_pair_logits(h, torch.tensor([0, 1]), weight, bias, torch.tensor([2, 0])).sum().backward()
    with torch.no_grad():
        fused_sample(h, torch.tensor([0, 1]), weight, bias, torch.tensor([2, 0]), torch.rand(2))
