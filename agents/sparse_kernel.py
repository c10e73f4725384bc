"""The torso's first layer from what each row sets, as compiled loops on the CPU (``agents.network.SparseRows``).

A 2-player Burako row sets ~35 of the 446 columns that are not meld slots and uses ~9 of its 74 meld
slots, but a batch's dense product multiplies every column some row sets (~320) and every slot up to
the batch's longest prefix (~26): ~80 M of a 2,048-row minibatch's ~381 M multiply-adds in the first
layer are needed (bench/README.md, "The non-slot columns sparse in torch"). torch's sparse ops
(``embedding_bag``, CSR and COO products) were slower than the dense product they replace there, so the
first layer is two loops here: forward, each entry adds its weight column to its row's output; backward,
each entry adds its row's gradient to its weight column's gradient.

The first layer's input is ``[slot encodings (slots x embed) | other columns]`` (``PolicyNet``). An
unused slot's encoding is ``e0`` (the encoder's output for zeros) in every row, so

    out[r] = sum_k W_k e0 + sum_{used slots u of r} W_{k(u)} (e_u - e0) + sum_{set columns c of r} W_c x_rc

(``W_k``: slot ``k``'s ``embed`` columns of the weight; the bias is added by the caller), and the
weight's gradient is ``G (x) e0`` on every slot's columns (``G``: the gradient summed over rows) plus the
used slots' and set columns' terms; ``e0``'s gradient is ``sum_k W_k^T G`` less the used slots' encodings'
gradients. The dense product's values and gradients, to float rounding.

Layout of the arguments (weights transposed: one input column's weights contiguous):

| argument | shape | dtype |
|---|---|---|
| ``weight_t`` | (inputs, hidden): ``slots x embed`` slot columns, then the others | float32, C-contiguous |
| ``encodings`` | (used slots, embed): each used slot's encoder output | float32 |
| ``empty`` | (embed,): ``e0`` | float32 |
| ``slot_rows``, ``slot_index`` | (used slots,): its row, its slot (0 .. slots - 1) | int64 |
| ``rest_rows``, ``rest_cols`` | (entries,): its row, its column among the others | int64 |
| ``rest_values`` | (entries,): its value | float32 |

One thread, entries in order: a result is the same on every call. The forward pass adds four weight
columns of one row at a time where four entries in a row share it (entries come row by row from
``take_rows``). Measured in bench/README.md, "Sparse batches".
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from numba import njit

from agents.pair_kernel import _FASTMATH, _array


@njit(cache=True, nogil=True, fastmath=_FASTMATH)
def _forward(
    weight_t: np.ndarray, encodings: np.ndarray, empty: np.ndarray, slot_rows: np.ndarray, slot_index: np.ndarray,
    n_slots: int, rest_rows: np.ndarray, rest_cols: np.ndarray, rest_values: np.ndarray, out: np.ndarray,
) -> None:  # fmt: skip
    # every loop over the hidden units reads and writes 1-d row views: with 2-d indexing numba's loops do
    # not vectorise (~10x slower, bench/README.md)
    hidden = out.shape[1]
    embed = empty.shape[0]
    base = np.zeros(hidden, dtype=np.float32)
    for k in range(n_slots):
        for j in range(embed):
            e = empty[j]
            w = weight_t[k * embed + j]
            for h in range(hidden):
                base[h] += e * w[h]
    for r in range(out.shape[0]):
        o = out[r]
        for h in range(hidden):
            o[h] = base[h]
    # four weight rows a pass: one load and store of the output row per four multiply-adds
    for u in range(slot_rows.shape[0]):
        o = out[slot_rows[u]]
        first = slot_index[u] * embed
        j = 0
        while j + 4 <= embed:
            d0 = encodings[u, j] - empty[j]
            d1 = encodings[u, j + 1] - empty[j + 1]
            d2 = encodings[u, j + 2] - empty[j + 2]
            d3 = encodings[u, j + 3] - empty[j + 3]
            w0, w1, w2, w3 = (
                weight_t[first + j],
                weight_t[first + j + 1],
                weight_t[first + j + 2],
                weight_t[first + j + 3],
            )
            for h in range(hidden):
                o[h] += d0 * w0[h] + d1 * w1[h] + d2 * w2[h] + d3 * w3[h]
            j += 4
        for extra in range(j, embed):
            d = encodings[u, extra] - empty[extra]
            w = weight_t[first + extra]
            for h in range(hidden):
                o[h] += d * w[h]
    offset = n_slots * embed
    p = 0
    n = rest_rows.shape[0]
    while p < n:
        r = rest_rows[p]
        o = out[r]
        if p + 4 <= n and rest_rows[p + 1] == r and rest_rows[p + 2] == r and rest_rows[p + 3] == r:
            v0, v1, v2, v3 = rest_values[p], rest_values[p + 1], rest_values[p + 2], rest_values[p + 3]
            w0, w1 = weight_t[offset + rest_cols[p]], weight_t[offset + rest_cols[p + 1]]
            w2, w3 = weight_t[offset + rest_cols[p + 2]], weight_t[offset + rest_cols[p + 3]]
            for h in range(hidden):
                o[h] += v0 * w0[h] + v1 * w1[h] + v2 * w2[h] + v3 * w3[h]
            p += 4
        else:
            v = rest_values[p]
            w = weight_t[offset + rest_cols[p]]
            for h in range(hidden):
                o[h] += v * w[h]
            p += 1


@njit(cache=True, nogil=True, fastmath=_FASTMATH)
def _backward(
    grad: np.ndarray, weight_t: np.ndarray, encodings: np.ndarray, empty: np.ndarray, slot_rows: np.ndarray,
    slot_index: np.ndarray, n_slots: int, rest_rows: np.ndarray, rest_cols: np.ndarray, rest_values: np.ndarray,
    grad_weight_t: np.ndarray, grad_encodings: np.ndarray, grad_empty: np.ndarray,
) -> None:  # fmt: skip
    hidden = grad.shape[1]
    embed = empty.shape[0]
    total = np.zeros(hidden, dtype=np.float32)
    for r in range(grad.shape[0]):
        g = grad[r]
        for h in range(hidden):
            total[h] += g[h]
    for k in range(n_slots):
        for j in range(embed):
            e = empty[j]
            w = weight_t[k * embed + j]
            dw = grad_weight_t[k * embed + j]
            s = np.float32(0.0)
            for h in range(hidden):
                dw[h] += e * total[h]
                s += w[h] * total[h]
            grad_empty[j] += s
    # row by row: the row's gradient stays in the L1 cache while its entries add it to their columns'
    # gradients (0.5 MB, in the L2); taken column by column instead, the rows' gradients (1 MB) came from
    # farther and the backward pass took 1.7x as long (a counting sort tried on this project's 2-core EPYC)
    for u in range(slot_rows.shape[0]):
        g = grad[slot_rows[u]]
        first = slot_index[u] * embed
        for j in range(embed):
            d = encodings[u, j] - empty[j]
            w = weight_t[first + j]
            dw = grad_weight_t[first + j]
            s = np.float32(0.0)
            for h in range(hidden):
                dw[h] += d * g[h]
                s += w[h] * g[h]
            grad_encodings[u, j] = s
            grad_empty[j] -= s
    offset = n_slots * embed
    for p in range(rest_rows.shape[0]):
        g = grad[rest_rows[p]]
        dw = grad_weight_t[offset + rest_cols[p]]
        v = rest_values[p]
        for h in range(hidden):
            dw[h] += v * g[h]


@njit(cache=True, nogil=True)
def _count_entries(
    obs: np.ndarray, rows: np.ndarray, blocks: np.ndarray, rest_runs: np.ndarray, slot_counts: np.ndarray,
    rest_counts: np.ndarray, present: int, width: int,
) -> None:  # fmt: skip
    for i in range(rows.shape[0]):
        row = obs[rows[i]]
        used = 0
        for b in range(blocks.shape[0]):
            start = blocks[b, 0]
            for k in range(blocks[b, 1]):
                if row[start + k * width + present] != 0:
                    used += 1
        slot_counts[i] = used
        set_columns = 0
        for q in range(rest_runs.shape[0]):
            start = rest_runs[q, 0]
            for c in range(rest_runs[q, 1]):
                if row[start + c] != 0:
                    set_columns += 1
        rest_counts[i] = set_columns


@njit(cache=True, nogil=True)
def _fill_entries(
    obs: np.ndarray, rows: np.ndarray, blocks: np.ndarray, rest_runs: np.ndarray, present: int, width: int,
    slot_index: np.ndarray, slot_features: np.ndarray, rest_cols: np.ndarray, rest_values: np.ndarray,
) -> None:  # fmt: skip
    u = 0
    p = 0
    for i in range(rows.shape[0]):
        row = obs[rows[i]]
        for b in range(blocks.shape[0]):
            start = blocks[b, 0]
            for k in range(blocks[b, 1]):
                at = start + k * width
                if row[at + present] != 0:
                    slot_index[u] = blocks[b, 2] + k
                    for f in range(width):
                        slot_features[u, f] = row[at + f]
                    u += 1
        column = 0
        for q in range(rest_runs.shape[0]):
            start = rest_runs[q, 0]
            for c in range(rest_runs[q, 1]):
                v = row[start + c]
                if v != 0:
                    rest_cols[p] = column
                    rest_values[p] = v
                    p += 1
                column += 1


def sparse_entries(
    obs: np.ndarray, rows: np.ndarray, blocks: np.ndarray, rest_runs: np.ndarray, present: int, width: int
) -> tuple[np.ndarray, ...]:
    """What rows ``rows`` of ``obs`` set, row by row: ``(slot counts, slot numbers, slot features, column
    counts, columns, values)``. ``blocks``: per meld-slot block ``(offset, slots, number of its first
    slot)``, a slot in use when its ``present`` feature is set (an empty slot is all zeros,
    ``burako_env.melds.encode_meld``); ``rest_runs``: ``(offset, length)`` of the other columns, numbered
    in that order."""
    n = rows.shape[0]
    slot_counts = np.empty(n, dtype=np.int64)
    rest_counts = np.empty(n, dtype=np.int64)
    _count_entries(obs, rows, blocks, rest_runs, slot_counts, rest_counts, present, width)
    slot_index = np.empty(int(slot_counts.sum()), dtype=np.int64)
    slot_features = np.empty((slot_index.shape[0], width), dtype=np.float32)
    rest_cols = np.empty(int(rest_counts.sum()), dtype=np.int64)
    rest_values = np.empty(rest_cols.shape[0], dtype=np.float32)
    _fill_entries(obs, rows, blocks, rest_runs, present, width, slot_index, slot_features, rest_cols, rest_values)
    return slot_counts, slot_index, slot_features, rest_counts, rest_cols, rest_values


@njit(cache=True, nogil=True)
def _take_rows(
    idx: np.ndarray, counts: np.ndarray, starts: np.ndarray, index: np.ndarray, values: np.ndarray,
    out_rows: np.ndarray, out_index: np.ndarray, out_values: np.ndarray,
) -> None:  # fmt: skip
    q = 0
    for i in range(idx.shape[0]):
        r = idx[i]
        first = starts[r]
        for e in range(first, first + counts[r]):
            out_rows[q] = i
            out_index[q] = index[e]
            out_values[q] = values[e]
            q += 1


def take_rows(
    idx: np.ndarray, counts: np.ndarray, starts: np.ndarray, index: np.ndarray, values: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The entries of rows ``idx`` of entries stored row by row (row ``r``'s ``counts[r]`` from
    ``starts[r]``): ``(their row in idx, their index, their values)``; ``values`` may have a second axis."""
    total = int(counts[idx].sum())
    out_rows = np.empty(total, dtype=np.int64)
    out_index = np.empty(total, dtype=index.dtype)
    out_values = np.empty((total, *values.shape[1:]), dtype=values.dtype)
    _take_rows(idx, counts, starts, index, values, out_rows, out_index, out_values)
    return out_rows, out_index, out_values


class _SparseFirstLayer(torch.autograd.Function):
    @staticmethod
    def forward(  # type: ignore[override]
        ctx: Any,
        weight: torch.Tensor,
        encodings: torch.Tensor,
        empty: torch.Tensor,
        shape: tuple[int, int],
        *entries: torch.Tensor,
    ) -> torch.Tensor:
        n_rows, n_slots = shape
        slot_rows, slot_index, rest_rows, rest_cols, rest_values = entries
        weight_t = weight.detach().t().contiguous()
        out = torch.empty((n_rows, weight.shape[0]), dtype=torch.float32)
        arrays = (slot_rows.numpy(), slot_index.numpy(), n_slots, rest_rows.numpy(), rest_cols.numpy())
        _forward(weight_t.numpy(), _array(encodings), _array(empty), *arrays, _array(rest_values), out.numpy())
        ctx.save_for_backward(weight_t, encodings, empty, *entries)
        ctx.n_slots = n_slots
        return out

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor | None, ...]:  # type: ignore[override]
        weight_t, encodings, empty, slot_rows, slot_index, rest_rows, rest_cols, rest_values = ctx.saved_tensors
        grad_weight_t = torch.zeros_like(weight_t)
        grad_encodings = torch.empty(encodings.shape, dtype=torch.float32)
        grad_empty = torch.zeros(empty.shape, dtype=torch.float32)
        arrays = (slot_rows.numpy(), slot_index.numpy(), ctx.n_slots, rest_rows.numpy(), rest_cols.numpy())
        inputs = (_array(grad.float()), weight_t.numpy(), _array(encodings), _array(empty))
        outputs = (grad_weight_t.numpy(), grad_encodings.numpy(), grad_empty.numpy())
        _backward(*inputs, *arrays, _array(rest_values), *outputs)
        return (grad_weight_t.t(), grad_encodings, grad_empty, None, *(None for _ in range(5)))


def sparse_first_layer(
    weight: torch.Tensor,
    encodings: torch.Tensor,
    empty: torch.Tensor,
    shape: tuple[int, int],
    entries: tuple[torch.Tensor, ...],
) -> torch.Tensor:
    """The first layer's product (no bias) of ``shape = (rows, meld slots)`` rows given as their used
    slots' ``encodings`` and their set other columns, with gradients for ``weight`` (hidden, inputs),
    ``encodings`` and ``empty``. ``entries``: ``(slot_rows, slot_index, rest_rows, rest_cols, rest_values)``
    (the module docstring's layout; index tensors int64, float32 on the CPU)."""
    return _SparseFirstLayer.apply(weight, encodings, empty, shape, *entries)


def compile_kernels() -> None:
    """Compile (or load from numba's disk cache) every kernel here on a tiny problem."""
    obs = np.zeros((2, 8), dtype=np.float32)
    obs[1, [0, 2, 6]] = 1.0
    blocks = np.array([[0, 2, 0]], dtype=np.int64)
    counts, index, features, rest_counts, rest_cols, rest_values = sparse_entries(
        obs, np.arange(2), blocks, np.array([[4, 4]], dtype=np.int64), 0, 2
    )
    rows = np.arange(2)
    slot_rows, slot_index, slot_features = take_rows(rows, counts, np.cumsum(counts) - counts, index, features)
    rest_rows, cols, values = take_rows(rows, rest_counts, np.cumsum(rest_counts) - rest_counts, rest_cols, rest_values)
    weight = torch.ones(3, 2 * 2 + 4, requires_grad=True)
    encodings = torch.from_numpy(slot_features).matmul(torch.ones(2, 2)).requires_grad_()
    empty = torch.zeros(2, requires_grad=True)
    tensors = tuple(torch.from_numpy(part) for part in (slot_rows, slot_index, rest_rows, cols, values))
    sparse_first_layer(weight, encodings, empty, (2, 2), tensors).sum().backward()
