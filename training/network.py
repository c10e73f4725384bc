"""The policy/value network and the masked action distribution.

One network serves every seat (and partners, with 4 players). It reads the
env's flat observation (``burako_env.observation``) and splits it by the
layout, so the only facts it owns are its sizes:

| part          | input                                   | output                       |
|---------------|-----------------------------------------|------------------------------|
| slot encoder  | each meld slot (``melds`` segment, and  | ``slot_embed`` features per  |
|               | the two ``pending_options``), 60 each   | slot (shared weights)        |
| torso         | slot features + every other segment     | ``hidden`` (two ReLU layers) |
| policy head   | torso                                   | ``NUM_ACTIONS`` logits       |
|               |                                         | (only the legal ones needed) |
| value head    | torso                                   | expected hand reward         |

The meld slots are most of the vector (4,320 of 4,886 floats with 2 players)
and all share one meaning, so a shared slot encoder keeps the network small
(about 1.4 M parameters) without losing which slot is which: the slot
features are concatenated in slot order, and an addition action names its
slot.

Illegal actions get zero probability. Training and rollouts compute the
logits of the legal actions only (:func:`legal_log_probs`: a position has
about 9 of 3,519), as dot products of the torso output with those actions'
rows of the policy head, and softmax over them per row; the full-width path
(:func:`masked_logits`: every logit, illegal ones replaced by the smallest
float) stays for single moves (``PolicyAgent``) and as the tests' reference.
Both read the same parameters, so checkpoints are the same either way.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import torch
from torch import nn
from torch.distributions import Categorical

from burako_env.actions import NUM_ACTIONS
from burako_env.melds import MELD_FEATURE_SIZE
from burako_env.observation import layout_id, observation_layout, observation_size
from burako_env.rules import Rules


@dataclass(frozen=True)
class NetworkShape:
    """Everything needed to rebuild a network (stored in checkpoints)."""

    num_players: int
    obs_size: int
    layout: str
    hidden: int = 256
    slot_embed: int = 16

    @classmethod
    def for_env(cls, num_players: int, rules: Rules, hidden: int = 256, slot_embed: int = 16) -> NetworkShape:
        return cls(
            num_players=num_players,
            obs_size=observation_size(num_players, rules),
            layout=layout_id(num_players, rules),
            hidden=hidden,
            slot_embed=slot_embed,
        )

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _slot_indices(num_players: int, rules: Rules | None) -> tuple[np.ndarray, np.ndarray]:
    """Flat indices of the meld-shaped features (slots x 60) and of the rest."""
    slot_rows: list[np.ndarray] = []
    for seg in observation_layout(num_players, rules):
        if seg.name in ("melds", "pending_options"):
            n_slots = seg.size // MELD_FEATURE_SIZE
            slot_rows.append(seg.offset + np.arange(n_slots * MELD_FEATURE_SIZE).reshape(n_slots, MELD_FEATURE_SIZE))
    slots = np.concatenate(slot_rows, axis=0)
    rest = np.setdiff1d(np.arange(observation_size(num_players, rules)), slots.reshape(-1))
    return slots, rest


def _runs(indices: np.ndarray) -> list[tuple[int, int]]:
    """Sorted flat indices as ``(start, length)`` runs of consecutive ones, so
    the network reads them as slices (views) instead of a gather, which was
    half of a forward pass (bench/README.md, profile)."""
    flat = indices.reshape(-1)
    breaks = np.flatnonzero(np.diff(flat) != 1) + 1
    return [(int(part[0]), int(part.size)) for part in np.split(flat, breaks) if part.size]


class PolicyNet(nn.Module):
    """Shared-slot-encoder MLP with policy and value heads."""

    def __init__(self, shape: NetworkShape, rules: Rules | None = None) -> None:
        super().__init__()
        self.shape = shape
        slots, rest = _slot_indices(shape.num_players, rules)
        if slots.size + rest.size != shape.obs_size:
            raise ValueError(f"network shape {shape} does not match the observation layout")
        self.register_buffer("slot_index", torch.as_tensor(slots, dtype=torch.long), persistent=False)
        self.register_buffer("rest_index", torch.as_tensor(rest, dtype=torch.long), persistent=False)
        n_slots = slots.shape[0]
        self.slot_runs = _runs(slots)
        self.rest_runs = _runs(rest)
        self.slot_encoder = nn.Sequential(nn.Linear(MELD_FEATURE_SIZE, shape.slot_embed), nn.ReLU())
        torso_in = n_slots * shape.slot_embed + rest.size
        self.torso = nn.Sequential(
            nn.Linear(torso_in, shape.hidden),
            nn.ReLU(),
            nn.Linear(shape.hidden, shape.hidden),
            nn.ReLU(),
        )
        self.policy_head = nn.Linear(shape.hidden, NUM_ACTIONS)
        self.value_head = nn.Linear(shape.hidden, 1)
        # CleanRL-style init: small policy logits (near-uniform start), unit value scale
        nn.init.orthogonal_(self.policy_head.weight, 0.01)
        nn.init.zeros_(self.policy_head.bias)
        nn.init.orthogonal_(self.value_head.weight, 1.0)
        nn.init.zeros_(self.value_head.bias)

    def features(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Torso output (batch, hidden) and values (batch,)."""
        batch = obs.shape[0]
        # each run of slots encoded from a view; only the (small) encodings are concatenated
        encoded = [
            self.slot_encoder(obs[:, start : start + size].reshape(batch, -1, MELD_FEATURE_SIZE)).flatten(1)
            for start, size in self.slot_runs
        ]
        rest = [obs[:, start : start + size] for start, size in self.rest_runs]
        x = torch.cat([*encoded, *rest], dim=1)
        h = self.torso(x)
        return h, self.value_head(h).squeeze(-1)

    def forward(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Raw logits over every action (batch, NUM_ACTIONS) and values (batch,)."""
        h, value = self.features(obs)
        return self.policy_head(h), value


def masked_logits(logits: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Logits with every illegal action at the smallest float (probability 0)."""
    return torch.where(mask, logits, torch.finfo(logits.dtype).min)


def masked_distribution(logits: torch.Tensor, mask: torch.Tensor) -> Categorical:
    return Categorical(logits=masked_logits(logits, mask))


class LegalIndex:
    """The legal (row, action) pairs of a whole batch, found once (one
    ``nonzero`` over the batch's masks) and cut per minibatch by :meth:`pairs`
    (a ``nonzero`` per minibatch was 12% of an update)."""

    def __init__(self, mask: torch.Tensor) -> None:
        self.counts = mask.sum(1)
        self.starts = torch.cumsum(self.counts, 0) - self.counts
        self.cols = mask.nonzero(as_tuple=True)[1]

    def pairs(self, idx: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``(rows, cols)`` of minibatch ``idx`` (rows numbered 0..len(idx)-1)."""
        counts = self.counts[idx]
        rows = torch.repeat_interleave(torch.arange(idx.numel(), device=idx.device), counts)
        first = torch.cumsum(counts, 0) - counts
        within = torch.arange(rows.numel(), device=idx.device) - first[rows]
        return rows, self.cols[self.starts[idx][rows] + within]


def legal_log_probs(
    net: PolicyNet, h: torch.Tensor, mask: torch.Tensor, pairs: tuple[torch.Tensor, torch.Tensor] | None = None
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Log-probabilities of the legal actions only: ``(rows, cols, logp)``, one
    entry per legal (row, action) pair.

    A position has about 9 legal actions of 3,519, so the policy head's
    logits are computed as dot products of the torso output with the head's
    rows of those actions (the head's weights read as action embeddings), and
    the softmax runs per row over them (segment max / sum). The same
    parameters and the same distribution as ``masked_logits(net(obs)[0], mask)``,
    at about 1/400 of the head's arithmetic."""
    rows, cols = mask.nonzero(as_tuple=True) if pairs is None else pairs
    weight, bias = net.policy_head.weight, net.policy_head.bias
    # index_select, not h[rows]: its backward is an index_add, several times
    # faster on CPU than advanced indexing's index_put (bench/README.md, profile)
    logits = (h.index_select(0, rows) * weight.index_select(0, cols)).sum(1) + bias.index_select(0, cols)
    n = h.shape[0]
    top = torch.full((n,), -torch.inf, dtype=logits.dtype, device=logits.device)
    top = top.scatter_reduce(0, rows, logits.detach(), "amax", include_self=True)
    shifted = logits - top[rows]
    total = torch.zeros(n, dtype=logits.dtype, device=logits.device).index_add(0, rows, shifted.exp())
    return rows, cols, shifted - total.log()[rows]


def sample_actions(
    net: PolicyNet, obs: torch.Tensor, mask: torch.Tensor, generator: torch.Generator | None = None
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Sample one legal action per row: (actions, log-probabilities, values).

    Gumbel-max over the legal actions' log-probabilities (an exact sample of
    the masked softmax), so no illegal action can ever be drawn: the
    candidates are the mask's nonzero entries and nothing else."""
    h, values = net.features(obs)
    rows, cols, logp = legal_log_probs(net, h, mask)
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
    mask: torch.Tensor,
    actions: torch.Tensor,
    pairs: tuple[torch.Tensor, torch.Tensor] | None = None,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Log-probabilities and entropies of the given (legal) actions, and values,
    computed over the legal actions only (:func:`legal_log_probs`; ``pairs``:
    the mask's nonzero entries when already known, :class:`LegalIndex`)."""
    h, values = net.features(obs)
    rows, cols, logp_legal = legal_log_probs(net, h, mask, pairs)
    n = h.shape[0]
    chosen = torch.where(cols == actions[rows], logp_legal, torch.zeros_like(logp_legal))
    logp = torch.zeros(n, dtype=logp_legal.dtype, device=logp_legal.device).index_add(0, rows, chosen)
    entropy = -torch.zeros_like(logp).index_add(0, rows, logp_legal.exp() * logp_legal)
    return logp, entropy, values


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
    mask: torch.Tensor,
    actions: torch.Tensor,
    pairs: tuple[torch.Tensor, torch.Tensor] | None = None,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """:func:`evaluate_actions` through all 3,519 logits (the reference path)."""
    logits, values = net(obs)
    logp_all = torch.log_softmax(masked_logits(logits, mask), dim=1)
    logp = logp_all.gather(1, actions.unsqueeze(1)).squeeze(1)
    entropy = -(logp_all.exp() * logp_all).sum(1)
    return logp, entropy, values


def parameter_count(net: nn.Module) -> int:
    return sum(p.numel() for p in net.parameters())
