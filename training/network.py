"""Training's batched action math over the agents' network (``agents/network.py``).

The network itself (``PolicyNet``, ``NetworkShape``, ``masked_logits``) is
the agents' (an agent plays it without the trainer); this module holds what
only training needs: sampling and scoring whole batches of actions.

Training and rollouts compute the logits of the legal actions only
(:func:`legal_log_probs`: a position has about 9 of 3,519), as dot products of
the torso output with those actions' rows of the policy head, and softmax
over them per row; the full-width path (:func:`masked_distribution` over
every logit, illegal ones replaced by the smallest float) stays as the tests'
and benchmarks' reference. Both read the same parameters, so checkpoints are
the same either way.
"""

from __future__ import annotations

import numpy as np
import torch
from torch.distributions import Categorical

from agents.network import PolicyNet, SparseRows, StackedTorsos, masked_logits, pair_logits
from agents.pair_kernel import fused_eligible, fused_sample


def masked_distribution(logits: torch.Tensor, mask: torch.Tensor) -> Categorical:
    return Categorical(logits=masked_logits(logits, mask))


class LegalIndex:
    """The legal (row, action) pairs of a whole batch, found once and cut per
    minibatch by :meth:`pairs` (a ``nonzero`` per minibatch was 12% of an
    update): ``counts`` per row and the ``cols`` (actions) of every pair, row
    by row, in action order. Built from bool masks (:meth:`of_mask`) or from
    the rollout store's bit-packed ones (:meth:`of_packed`)."""

    def __init__(self, counts: torch.Tensor, cols: torch.Tensor) -> None:
        self.counts = counts
        self.cols = cols
        self.starts = torch.cumsum(self.counts, 0) - self.counts

    @classmethod
    def of_mask(cls, mask: torch.Tensor) -> LegalIndex:
        if mask.device.type == "cpu":  # numpy's nonzero is several times torch's on CPU
            rows, cols = np.nonzero(mask.numpy())
            # the counts from the few legal pairs, not another pass over the whole mask
            return cls(torch.from_numpy(np.bincount(rows, minlength=mask.shape[0])), torch.from_numpy(cols))
        return cls(mask.sum(1), mask.nonzero(as_tuple=True)[1])

    @classmethod
    def of_packed(cls, packed: np.ndarray, device: torch.device | None = None) -> LegalIndex:
        """From masks packed by ``np.packbits(mask, axis=1)`` (first action in a byte's high bit),
        without unpacking them: only the bytes that hold a legal action are opened (a position has
        ~9 legal actions of 3,519, so ~8 of 440 bytes); 53 ms of a 600 ms update went to the
        ``nonzero`` over the unpacked masks (bench/README.md)."""
        rows, byte = np.nonzero(packed)
        bits = np.flatnonzero(np.unpackbits(packed[rows, byte]))
        cols = byte[bits // 8].astype(np.int64) * 8 + bits % 8
        counts = np.bincount(rows[bits // 8], minlength=packed.shape[0])
        return cls(torch.from_numpy(counts).to(device), torch.from_numpy(cols).to(device))

    def pairs(self, idx: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``(rows, cols)`` of minibatch ``idx`` (rows numbered 0..len(idx)-1)."""
        rows, positions = self.positions(idx)
        return rows, self.cols[positions]

    def positions(self, idx: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The rows (0..len(idx)-1) of minibatch ``idx``'s legal pairs and each pair's place in the whole
        batch's pairs (row by row, actions in mask order: where per-pair data such as cloning's targets sit)."""
        counts = self.counts[idx]
        rows = torch.repeat_interleave(torch.arange(idx.numel(), device=idx.device), counts)
        first = torch.cumsum(counts, 0) - counts
        within = torch.arange(rows.numel(), device=idx.device) - first[rows]
        return rows, self.starts[idx][rows] + within


class SnapshotGroups:
    """Several frozen networks' rows sampled in one pass: ``sample_actions(groups, obs, mask)``
    where ``obs`` holds ``sizes[0]`` rows for the stack's network ``members[0]``, then
    ``sizes[1]`` for ``members[1]``, ...

    The rows go through their own networks' torsos together (:class:`StackedTorsos`), the legal
    logits of every row come from its own network's head (the stacked heads), and the masked
    softmax and the sampling run once for all rows. One pass per snapshot cost six snapshots
    about 0.4 of a running league's rollout, nearly all of it per-operation overhead on a few
    rows each (bench/README.md). The log-probabilities are each network's own to float
    rounding (``tests/test_training_vector.py``); values are not computed."""

    def __init__(self, stack: StackedTorsos, members: list[int], sizes: list[int]) -> None:
        self.stack = stack
        self.members = members
        self.sizes = sizes
        offsets = torch.tensor(members) * stack.num_actions
        self.row_offsets = torch.repeat_interleave(offsets, torch.tensor(sizes)).to(stack.head_weight.device)

    def features(self, obs: torch.Tensor, privileged: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """Every row's torso output from its own network; the values are zeros (unused)."""
        h = self.stack.features(obs, self.members, self.sizes)
        return h, h.new_zeros(h.shape[0])

    def logits_of(self, h: torch.Tensor, rows: torch.Tensor, cols: torch.Tensor) -> torch.Tensor:
        """The (row, action) pairs' logits, each from the head of the network that owns its row."""
        return pair_logits(h, rows, *self.head_of_pairs(rows, cols))

    def head_of_pairs(self, rows: torch.Tensor, cols: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """The stacked heads the pairs read: ``(weight, bias, head rows)``, each pair's row in the head
        of the network that owns its row."""
        return self.stack.head_weight, self.stack.head_bias, self.row_offsets.index_select(0, rows) + cols


def legal_pairs(mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The (row, action) pairs of a batch's legal actions, in row order."""
    if mask.device.type == "cpu":  # a flat nonzero and a divmod: ~6x torch's 2-d nonzero on a rollout's masks
        rows, cols = np.divmod(np.flatnonzero(mask.numpy()), mask.shape[1])
        return torch.from_numpy(rows), torch.from_numpy(cols)
    return mask.nonzero(as_tuple=True)


def legal_log_probs(
    net: PolicyNet | SnapshotGroups,
    h: torch.Tensor,
    mask: torch.Tensor | None,
    pairs: tuple[torch.Tensor, torch.Tensor] | None = None,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Log-probabilities of the legal actions only: ``(rows, cols, logp)``, one
    entry per legal (row, action) pair.

    A position has about 9 legal actions of 3,519, so the policy head's
    logits are computed as dot products of the torso output with the head's
    rows of those actions (the head's weights read as action embeddings), and
    the softmax runs per row over them (segment max / sum). The same
    parameters and the same distribution as ``masked_logits(net(obs)[0], mask)``,
    at about 1/400 of the head's arithmetic."""
    if pairs is None:
        if mask is None:
            raise ValueError("legal_log_probs needs the masks or their (row, action) pairs")
        pairs = legal_pairs(mask)
    rows, cols = pairs
    logits = net.logits_of(h, rows, cols)
    n = h.shape[0]
    top = torch.full((n,), -torch.inf, dtype=logits.dtype, device=logits.device)
    top = top.scatter_reduce(0, rows, logits.detach(), "amax", include_self=True)
    shifted = logits - top[rows]
    total = torch.zeros(n, dtype=logits.dtype, device=logits.device).index_add(0, rows, shifted.exp())
    return rows, cols, shifted - total.log()[rows]


def sample_actions(
    net: PolicyNet | SnapshotGroups,
    obs: torch.Tensor | SparseRows,
    mask: torch.Tensor | None,
    generator: torch.Generator | None = None,
    privileged: torch.Tensor | None = None,
    pairs: tuple[torch.Tensor, torch.Tensor] | None = None,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Sample one legal action per row: (actions, log-probabilities, values).

    Gumbel-max over the legal actions' log-probabilities (an exact sample of
    the masked softmax), so no illegal action can ever be drawn: the
    candidates are the mask's nonzero entries and nothing else. ``privileged``
    reaches the value only (``PolicyNet.features``). Without gradients, float32 on
    the CPU (a rollout's draw), the logits, softmax and draw are one compiled loop
    (``agents.pair_kernel.fused_sample``) from the same uniforms. ``pairs``: the mask's legal (row, action)
    pairs when already known (:func:`legal_pairs`' order; ``mask`` may then be None)."""
    h, values = net.features(obs, privileged)
    if pairs is None:
        if mask is None:
            raise ValueError("sample_actions needs the masks or their (row, action) pairs")
        pairs = legal_pairs(mask)
    if not torch.is_grad_enabled() and h.device.type == "cpu":  # a rollout's or a game's draw: one compiled loop
        weight, bias, head_rows = net.head_of_pairs(*pairs)
        if fused_eligible(h, weight, bias):
            u = torch.rand(pairs[0].shape, dtype=h.dtype, device=h.device, generator=generator)
            first, logp = fused_sample(h, pairs[0], weight, bias, head_rows, u)
            return pairs[1][first], logp, values
    rows, cols, logp = legal_log_probs(net, h, mask, pairs)
    u = torch.rand(logp.shape, dtype=logp.dtype, device=logp.device, generator=generator)
    key = logp - torch.log(-torch.log(u.clamp_min(torch.finfo(u.dtype).tiny)))
    n = h.shape[0]
    best = torch.full((n,), -torch.inf, dtype=key.dtype, device=key.device)
    best = best.scatter_reduce(0, rows, key, "amax", include_self=True)
    positions = torch.arange(rows.numel(), device=rows.device)
    first = torch.full((n,), rows.numel(), dtype=positions.dtype, device=rows.device)
    winners = key == best[rows]
    first = first.scatter_reduce(0, rows[winners], positions[winners], "amin", include_self=True)
    return cols[first], logp[first], values


def evaluate_actions(
    net: PolicyNet,
    obs: torch.Tensor,
    mask: torch.Tensor | None,
    actions: torch.Tensor,
    pairs: tuple[torch.Tensor, torch.Tensor] | None = None,
    privileged: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Log-probabilities and entropies of the given (legal) actions, and values,
    computed over the legal actions only (:func:`legal_log_probs`; ``pairs``:
    the mask's nonzero entries when already known, :class:`LegalIndex`;
    ``privileged``: the value's hidden tiles, ``PolicyNet.features``)."""
    h, values = net.features(obs, privileged)
    logp, entropy, _ = legal_figures(net, h, mask, actions, pairs)
    return logp, entropy, values


def legal_figures(
    net: PolicyNet,
    h: torch.Tensor,
    mask: torch.Tensor | None,
    actions: torch.Tensor,
    pairs: tuple[torch.Tensor, torch.Tensor] | None = None,
) -> tuple[torch.Tensor, torch.Tensor, tuple[torch.Tensor, torch.Tensor]]:
    """From the torso's output ``h``: the log-probabilities of ``actions`` and the entropies, and the whole
    legal distribution ``(rows, logp)`` over every legal (row, action) pair, what a divergence from
    another policy needs (:func:`anchor_kl`)."""
    rows, cols, logp_legal = legal_log_probs(net, h, mask, pairs)
    n = h.shape[0]
    chosen = torch.where(cols == actions[rows], logp_legal, torch.zeros_like(logp_legal))
    logp = torch.zeros(n, dtype=logp_legal.dtype, device=logp_legal.device).index_add(0, rows, chosen)
    entropy = -torch.zeros_like(logp).index_add(0, rows, logp_legal.exp() * logp_legal)
    return logp, entropy, (rows, logp_legal)


def anchor_kl(
    anchor: PolicyNet,
    obs: torch.Tensor,
    mask: torch.Tensor | None,
    pairs: tuple[torch.Tensor, torch.Tensor] | None,
    legal: tuple[torch.Tensor, torch.Tensor],
) -> torch.Tensor:
    """KL(anchor || policy) per row, over the legal actions: ``legal`` is the policy's ``(rows, logp)``
    of :func:`legal_figures` on the same rows and ``pairs`` (so both list the pairs in one order). The
    anchor is frozen (no gradient): the divergence pulls the policy back toward the moves the anchor
    plays, mass it puts on a move the anchor prefers costs little, mass it takes away from one costs
    much (``anchor_kl_coef``). The anchor's value is not needed, so it gets no hidden tiles."""
    rows, logp = legal
    with torch.no_grad():
        h, _ = anchor.features(obs)
        _, _, anchor_logp = legal_log_probs(anchor, h, mask, pairs)
    terms = anchor_logp.exp() * (anchor_logp - logp)
    return torch.zeros(obs.shape[0], dtype=terms.dtype, device=terms.device).index_add(0, rows, terms)


def sample_actions_dense(
    net: PolicyNet, obs: torch.Tensor, mask: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The full-width path (every action's logit, then the mask): the
    reference for :func:`sample_actions` in tests and ``bench/bench_training.py``."""
    logits, values = net(obs)
    dist = masked_distribution(logits, mask)
    actions = dist.sample()
    return actions, dist.log_prob(actions), values


def evaluate_actions_dense(
    net: PolicyNet,
    obs: torch.Tensor,
    mask: torch.Tensor | None,
    actions: torch.Tensor,
    pairs: tuple[torch.Tensor, torch.Tensor] | None = None,
    privileged: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """:func:`evaluate_actions` through all 3,519 logits (the reference path)."""
    if mask is None:
        raise ValueError("the full-width path needs the masks")
    logits, values = net(obs, privileged)
    logp_all = torch.log_softmax(masked_logits(logits, mask), dim=1)
    logp = logp_all.gather(1, actions.unsqueeze(1)).squeeze(1)
    entropy = -(logp_all.exp() * logp_all).sum(1)
    return logp, entropy, values
