"""The policy/value network an agent plays with, and its masked logits.

One network serves every seat (and partners, with 4 players). It reads the
env's flat observation (``burako_env.observation``) and splits it by the
layout, so the only facts it owns are its sizes:

| part          | input                                   | output                       |
|---------------|-----------------------------------------|------------------------------|
| slot encoder  | each meld slot (``melds`` segment, and  | ``slot_embed`` features per  |
|               | the two ``pending_options``), 60 each   | slot (shared weights)        |
| unseen counts | (``unseen_input`` only) the meld slots, | per tile kind, the copies    |
|               | hand, pile and known tiles              | the seat cannot locate / 2   |
| torso         | slot features + every other segment     | ``hidden`` (two ReLU layers) |
|               | (+ the unseen counts)                   |                              |
| policy head   | torso                                   | ``NUM_ACTIONS`` logits       |
|               |                                         | (only the legal ones needed) |
| value head    | torso (or, with ``value_torso``, its    | expected hand reward         |
|               | own torso over the same input)          |                              |
| privileged    | (``privileged_value`` only) the value's | the value head's input       |
| value layer   | torso output + what the seat cannot see |                              |
|               | (burako_env/privileged.py), in training |                              |

The meld slots are most of the vector (4,320 of 4,886 floats with 2 players)
and all share one meaning, so a shared slot encoder keeps the network small
(about 1.4 M parameters) without losing which slot is which: the slot
features are concatenated in slot order, and an addition action names its
slot.

Illegal actions get zero probability: :func:`masked_logits` puts every
illegal logit at the smallest float, the path for single moves
(``PolicyAgent``, ``NeuralISMCTSAgent``). Training's batched paths over the
legal actions only (``training/network.py``) read the same parameters, so
checkpoints (``agents/checkpoint.py``) are the same either way.

Rummy (``game: rummy``, burako_env/rummy/observation.py) has no meld slots
(its table is a multiset of tile kinds): the same torso and heads read its
flat observation whole, its counts divided by ``INPUT_SCALES`` (stock and
hand sizes near 1, not 77), and the policy head has Rummy's 56 actions. The game
is part of the :class:`NetworkShape`, so a checkpoint says which game it
plays (shapes stored before the field are Burako's).

The model lives with the agents, not with training, because an agent must
load and play it without the trainer: imports point burako_env <- agents <-
training (docs/architecture.md, layers).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import torch
from torch import nn

from agents.pair_kernel import fused_eligible, fused_pair_logits
from agents.sparse_kernel import sparse_entries, sparse_first_layer, take_rows
from burako_env.actions import MAX_MELD_SLOTS, NUM_ACTIONS
from burako_env.melds import MELD_FEATURE_OFFSETS, MELD_FEATURE_SIZE, MELD_PRESENT
from burako_env.observation import RULE_FEATURES, layout_id, observation_layout, observation_size
from burako_env.privileged import privileged_size
from burako_env.rules import Rules, tile_set_counts
from burako_env.rummy import actions as rummy_actions
from burako_env.rummy import observation as rummy_observation
from burako_env.rummy.rules import RummyRules
from burako_env.tiles import NUM_COLOURS, NUM_KINDS, NUM_NUMBERS, NUM_POSITIONS, NUM_WILD_KINDS, WILD_KINDS

#: the batch size from which :meth:`PolicyNet.features` skips the meld slots no row uses: below it the
#: bookkeeping costs more than it saves (one position: 103 us dense against 198 us, bench/README.md)
SKIP_EMPTY_SLOTS_FROM = 16

#: the games a network can play, and each one's action count
GAME_ACTIONS: dict[str, int] = {"burako": NUM_ACTIONS, "rummy": rummy_actions.NUM_ACTIONS}


def game_of(rules: Rules | RummyRules) -> str:
    """The game a rules value belongs to."""
    return "rummy" if isinstance(rules, RummyRules) else "burako"


@dataclass(frozen=True)
class NetworkShape:
    """Everything needed to rebuild a network (stored in checkpoints)."""

    num_players: int
    obs_size: int
    layout: str
    hidden: int = 256
    slot_embed: int = 16
    #: burako or rummy (GAME_ACTIONS); absent from shapes stored before Rummy: burako
    game: str = "burako"
    #: the value head reads a torso of its own (its own half of a first layer twice as wide, and its
    #: own second layer), so its loss shapes only the shared slot encoder, not the policy's torso;
    #: absent from shapes stored before it: one shared torso
    value_torso: bool = False
    #: the torso also reads, per tile kind, the copies the seat cannot locate (:class:`UnseenCounts`,
    #: derived from the observation, no parameters); absent from shapes stored before it: no
    unseen_input: bool = False
    #: the value reads, through one more layer, what the seat cannot see (burako_env/privileged.py:
    #: other hands, stock, muertos, next draws), given in training only; the policy never reads it;
    #: absent from shapes stored before it: no
    privileged_value: bool = False
    #: the value head learns a hand's result less the seat's side's margin on the table as the hand
    #: stands (training's ``score_potential``), so it is no value on its own; absent from shapes stored
    #: before it: no
    score_potential: bool = False

    @classmethod
    def for_env(
        cls,
        num_players: int,
        rules: Rules | RummyRules,
        hidden: int = 256,
        slot_embed: int = 16,
        value_torso: bool = False,
        unseen_input: bool = False,
        privileged_value: bool = False,
        score_potential: bool = False,
    ) -> NetworkShape:
        if game_of(rules) == "rummy":
            size, layout = rummy_observation.OBSERVATION_SIZE, rummy_observation.layout_id()
        else:
            size, layout = observation_size(num_players, rules), layout_id(num_players, rules)
        return cls(
            num_players=num_players,
            obs_size=size,
            layout=layout,
            hidden=hidden,
            slot_embed=slot_embed,
            game=game_of(rules),
            value_torso=value_torso,
            unseen_input=unseen_input,
            privileged_value=privileged_value,
            score_potential=score_potential,
        )

    @property
    def num_actions(self) -> int:
        return GAME_ACTIONS[self.game]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _slot_indices(shape: NetworkShape, rules: Rules | RummyRules | None) -> tuple[np.ndarray, np.ndarray]:
    """Flat indices of the meld-shaped features (slots x 60) and of the rest (Rummy: no slots)."""
    if shape.game == "rummy":
        return np.zeros((0, MELD_FEATURE_SIZE), dtype=np.int64), np.arange(shape.obs_size)
    slot_rows = [
        start + np.arange(n_slots * MELD_FEATURE_SIZE).reshape(n_slots, MELD_FEATURE_SIZE)
        for start, n_slots in _slot_blocks(shape.num_players, rules)
    ]
    slots = np.concatenate(slot_rows, axis=0)
    rest = np.setdiff1d(np.arange(observation_size(shape.num_players, rules)), slots.reshape(-1))
    return slots, rest


def _slot_blocks(num_players: int, rules: Rules | RummyRules | None) -> list[tuple[int, int]]:
    """``(offset, slots)`` of each side's meld slots and of the two pending options, in slot order.

    A side's melds fill its slots from the first (and never leave), so within a block the
    slots in use are a prefix: :meth:`PolicyNet.features` skips a block's slots past the last
    one in use (correct whatever the order, since an empty slot is all zeros; fast because of it)."""
    blocks: list[tuple[int, int]] = []
    for seg in observation_layout(num_players, rules):
        if seg.name in ("melds", "pending_options"):
            per_block = seg.shape[-2]
            for first in range(0, seg.size // MELD_FEATURE_SIZE, per_block):
                blocks.append((seg.offset + first * MELD_FEATURE_SIZE, per_block))
    return blocks


def _runs(indices: np.ndarray) -> list[tuple[int, int]]:
    """Sorted flat indices as ``(start, length)`` runs of consecutive ones, so
    the network reads them as slices (views) instead of a gather, which was
    half of a forward pass (bench/README.md, profile)."""
    flat = indices.reshape(-1)
    breaks = np.flatnonzero(np.diff(flat) != 1) + 1
    return [(int(part[0]), int(part.size)) for part in np.split(flat, breaks) if part.size]


def slots_in_use(obs: torch.Tensor, start: int, n_slots: int) -> int:
    """How many of a block's meld slots (from ``start``) a batch uses: up to the last whose
    ``present`` feature is set in some row (a block's slots fill from the first, ``_slot_blocks``)."""
    return _prefix_in_use(obs[:, start + MELD_PRESENT : start + n_slots * MELD_FEATURE_SIZE : MELD_FEATURE_SIZE])


def _prefix_in_use(present: torch.Tensor) -> int:
    """Up to the last column of ``present`` (rows x slots) set in some row. On the CPU numpy reads the
    (strided) view in place: half of torch's four ops' time (22 -> 10 us a block; ~4% of a rollout's
    step before)."""
    if present.device.type == "cpu" and present.dtype == torch.float32 and not present.requires_grad:
        columns = np.flatnonzero(present.numpy().any(0))
        return int(columns[-1]) + 1 if columns.size else 0
    in_use = present.ne(0).any(0).nonzero()
    return int(in_use[-1]) + 1 if in_use.numel() else 0


@dataclass(frozen=True)
class CompactRows:
    """A batch of observation rows reduced to what :meth:`PolicyNet.features` multiplies
    (:meth:`PolicyNet.compact`): per meld-slot block, its slots up to the last one any row of the
    batch uses, contiguous, so the slot encoder reads ``(rows x slots, 60)`` views where a full row's
    slots needed a copy; and of the other segments only the columns some row sets (a 2-player batch:
    ~26 of 74 slots, ~320 of 446 other columns, so ~1,900 of 4,886 floats a row). An update builds
    it once and gathers each minibatch's rows from it (:meth:`select`)."""

    #: per block of ``PolicyNet.slot_blocks``: (rows, used slots x 60)
    slots: tuple[torch.Tensor, ...]
    #: (rows, kept columns): the other segments' columns in ``rest_cols``
    rest: torch.Tensor
    #: the kept columns' positions among the other segments' (``PolicyNet.rest_runs`` in order)
    rest_cols: torch.Tensor

    def __len__(self) -> int:
        return self.rest.shape[0]

    def select(self, idx: torch.Tensor, buffers: dict[str, torch.Tensor] | None = None) -> CompactRows:
        """Rows ``idx`` (into ``buffers``' tensors when given: an update's minibatches reuse them)."""
        slots = tuple(
            torch.index_select(part, 0, idx, out=_scratch(buffers, f"slots{i}", idx.numel(), part))
            for i, part in enumerate(self.slots)
        )
        rest = torch.index_select(self.rest, 0, idx, out=_scratch(buffers, "rest", idx.numel(), self.rest))
        return CompactRows(slots, rest, self.rest_cols)


@dataclass(frozen=True)
class SparseRows:
    """A minibatch's rows as what each one sets, for :meth:`PolicyNet.features` through the compiled first
    layer (``agents/sparse_kernel.py``): its used meld slots (row, slot in ``PolicyNet.slot_blocks``' order,
    the slot's 60 features) and its non-zero other columns (row, position among the other columns,
    value). A 2-player row: ~9 slots and ~35 columns, where :class:`CompactRows` multiplies the batch's
    ~26-slot prefix and ~320 columns in every row."""

    n_rows: int
    slot_rows: torch.Tensor
    slot_index: torch.Tensor
    slot_features: torch.Tensor
    rest_rows: torch.Tensor
    rest_cols: torch.Tensor
    rest_values: torch.Tensor

    def __len__(self) -> int:
        return self.n_rows


@dataclass(frozen=True)
class SparseBatch:
    """A whole batch's :class:`SparseRows` entries, row by row (numpy, from
    ``agents.sparse_kernel.sparse_entries``), found once an update (:meth:`PolicyNet.sparse`);
    :meth:`select` cuts a minibatch's."""

    slot_counts: np.ndarray
    slot_starts: np.ndarray
    slot_index: np.ndarray
    slot_features: np.ndarray
    rest_counts: np.ndarray
    rest_starts: np.ndarray
    rest_cols: np.ndarray
    rest_values: np.ndarray

    def __len__(self) -> int:
        return self.slot_counts.shape[0]

    def whole(self) -> SparseRows:
        """Every row, in order, without copying the entries (a rollout's forward pass)."""
        rows = np.arange(len(self))
        return SparseRows(
            len(self),
            torch.from_numpy(np.repeat(rows, self.slot_counts)),
            torch.from_numpy(self.slot_index),
            torch.from_numpy(self.slot_features),
            torch.from_numpy(np.repeat(rows, self.rest_counts)),
            torch.from_numpy(self.rest_cols),
            torch.from_numpy(self.rest_values),
        )

    def select(self, idx: torch.Tensor, buffers: dict[str, torch.Tensor] | None = None) -> SparseRows:
        """Rows ``idx`` (``buffers``: unused, for :class:`CompactRows`' signature)."""
        rows = idx.numpy()
        slot_rows, slot_index, features = take_rows(
            rows, self.slot_counts, self.slot_starts, self.slot_index, self.slot_features
        )
        rest_rows, rest_cols, rest_values = take_rows(
            rows, self.rest_counts, self.rest_starts, self.rest_cols, self.rest_values
        )
        return SparseRows(
            rows.shape[0],
            *(torch.from_numpy(part) for part in (slot_rows, slot_index, features, rest_rows, rest_cols, rest_values)),
        )


def _scratch(
    buffers: dict[str, torch.Tensor] | None, name: str, rows: int, like: torch.Tensor, cols: int | None = None
) -> torch.Tensor | None:
    """A (rows, cols) tensor of ``like``'s dtype kept in ``buffers`` under ``name`` and reused while it is
    large enough (a batch's 100 MB tensor freshly allocated each update costs its page faults each
    time, training/memory.py); None without ``buffers`` (the caller's op allocates)."""
    if buffers is None:
        return None
    cols = like.shape[1] if cols is None else cols
    held = buffers.get(name)
    if held is None or held.numel() < rows * cols or held.dtype != like.dtype:
        held = buffers[name] = like.new_empty(rows * cols)
    return held[: rows * cols].view(rows, cols)


class UnseenCounts(nn.Module):
    """Per tile kind, the copies a seat cannot locate (other hands beyond their known tiles, the
    stock, the untaken muertos), halved: ``GameState.unseen_counts`` read off the seat's own
    observation, so nothing hidden enters (E2).

    The observation holds these counts only spread out: melded tiles sit in the meld slots as a
    run's colour and positions or a set's number and colours, a product of two one-hots that a
    first linear layer cannot add up per kind. Whether a discard can feed the next player or a
    tile may still come turns on them (the planner reads them, ``agents/heuristic``). By E1 they
    are the full set less the seat's hand, the pile, the tiles known in other hands and every
    meld's tiles. A privilege tile (B17) is in the hand already, and a pending addition's tile
    stays in its player's hand until the end is chosen: both are counted as the engine counts
    them, seen by that player, unseen by the others. No parameters."""

    def __init__(self, num_players: int, rules: Rules | RummyRules | None) -> None:
        super().__init__()
        seg = {s.name: s for s in observation_layout(num_players, rules)}
        # segments counted whole, one tile kind per column (several rows for known_in_hands)
        self.seen = [(seg[name].offset, seg[name].size) for name in _SEEN_SEGMENTS]
        #: ``(offset, slots)`` of each side's meld slots, filled from the first (``_slot_blocks``)
        melds = seg["melds"]
        self.blocks = [
            (melds.offset + i * MAX_MELD_SLOTS * MELD_FEATURE_SIZE, MAX_MELD_SLOTS) for i in range(melds.shape[0])
        ]
        self.cards = seg["rules"].offset + [name for name, _ in RULE_FEATURES].index("cards")
        # one product reads what a slot adds up to: [run colour | set colours x 2 | run positions less the
        # wild's | set number | wild kind]; the runs' and sets' tiles are then products of its parts
        off = MELD_FEATURE_OFFSETS
        parts = [
            ("run_colour", NUM_COLOURS, 1.0),
            ("set_colours", NUM_COLOURS, 2.0),
            ("run_positions", NUM_POSITIONS, 1.0),
        ]
        parts += [("set_number", NUM_NUMBERS, 1.0), ("wild_kind", NUM_WILD_KINDS, 1.0)]
        read = torch.zeros(MELD_FEATURE_SIZE, sum(n for _, n, _ in parts))
        col = 0
        for name, n, scale in parts:
            read[off[name] : off[name] + n, col : col + n] = scale * torch.eye(n)
            col += n
        positions = 2 * NUM_COLOURS
        read[
            off["wild_position"] : off["wild_position"] + NUM_POSITIONS, positions : positions + NUM_POSITIONS
        ] = -torch.eye(NUM_POSITIONS)
        self.register_buffer("read", read, persistent=False)
        wild_to_kind = torch.zeros(NUM_WILD_KINDS, NUM_KINDS)
        wild_to_kind[torch.arange(NUM_WILD_KINDS), torch.tensor(WILD_KINDS)] = 1.0
        self.register_buffer("wild_to_kind", wild_to_kind, persistent=False)
        # the full set with tiles (B1), and what cards (V2) take from it: the rules feature "cards" says which
        tiles = torch.as_tensor(tile_set_counts("tiles"), dtype=torch.float32)
        self.register_buffer("full_tiles", tiles, persistent=False)
        self.register_buffer("cards_less", tiles - torch.as_tensor(tile_set_counts("cards")), persistent=False)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        batch = obs.shape[0]
        # only the slots some row uses (a block's used slots are a prefix; an empty slot adds nothing)
        used = []
        for start, n_slots in self.blocks:
            if in_use := slots_in_use(obs, start, n_slots):
                used.append(obs[:, start : start + in_use * MELD_FEATURE_SIZE])
        seen = obs.new_zeros(batch, NUM_KINDS)
        if used:
            slots = torch.cat(used, dim=1).reshape(-1, MELD_FEATURE_SIZE)
            parts = (slots @ self.read).view(batch, -1, self.read.shape[1])
            c, p = 2 * NUM_COLOURS, 2 * NUM_COLOURS + NUM_POSITIONS
            # (run colour, set colours) against (positions, set number): the runs' and the sets' tiles
            products = torch.bmm(parts[:, :, :c].transpose(1, 2), parts[:, :, c : p + NUM_NUMBERS])
            runs = products[:, :NUM_COLOURS, :NUM_POSITIONS]
            numbered = products[:, NUM_COLOURS:, NUM_POSITIONS:] + runs[:, :, :NUM_NUMBERS]
            # position 14 is the high 1 (B6): the number 1's column
            numbered = torch.cat([numbered[:, :, :1] + runs[:, :, NUM_NUMBERS:], numbered[:, :, 1:]], dim=2)
            seen = torch.cat([numbered.reshape(batch, -1), seen[:, :1]], dim=1)
            seen = seen + parts[:, :, p + NUM_NUMBERS :].sum(1) @ self.wild_to_kind
        for start, size in self.seen:
            seen = seen + obs[:, start : start + size].reshape(batch, -1, NUM_KINDS).sum(1)
        full = self.full_tiles.to(obs.dtype) - obs[:, self.cards : self.cards + 1] * self.cards_less.to(obs.dtype)
        return 0.5 * (full - seen)


#: the observation's segments whose tiles a seat sees, one column per kind (UnseenCounts)
_SEEN_SEGMENTS = ("hand", "pile_counts", "known_in_hands")


class PolicyNet(nn.Module):
    """Shared-slot-encoder MLP with policy and value heads."""

    def __init__(self, shape: NetworkShape, rules: Rules | RummyRules | None = None) -> None:
        super().__init__()
        if shape.game not in GAME_ACTIONS:
            raise ValueError(f"network shape names the unknown game {shape.game!r}; games: {sorted(GAME_ACTIONS)}")
        self.shape = shape
        slots, rest = _slot_indices(shape, rules)
        if slots.size + rest.size != shape.obs_size:
            raise ValueError(f"network shape {shape} does not match the observation layout")
        self.register_buffer("slot_index", torch.as_tensor(slots, dtype=torch.long), persistent=False)
        self.register_buffer("rest_index", torch.as_tensor(rest, dtype=torch.long), persistent=False)
        #: Rummy's inputs are multiplied by 1 / its INPUT_SCALES (part of its layout id); Burako's are used as they are
        scale = 1.0 / torch.from_numpy(rummy_observation.input_scale()) if shape.game == "rummy" else None
        self.register_buffer("input_scale", scale, persistent=False)
        n_slots = slots.shape[0]
        self.slot_runs = _runs(slots)
        self.rest_runs = _runs(rest)
        #: ``(offset, slots)`` per block of meld slots (a side's melds, the pending options): Burako only
        self.slot_blocks = [] if shape.game == "rummy" else _slot_blocks(shape.num_players, rules)
        #: the same as a kernel argument: ``(offset, slots, number of the block's first slot)`` rows, by offset
        #: (``sparse``'s compiled passes, the rollout's store copies)
        numbers = np.cumsum([0] + [n for _, n in self.slot_blocks])[:-1]
        self.slot_block_table = np.array(
            [(start, n, first) for (start, n), first in zip(self.slot_blocks, numbers, strict=True)], dtype=np.int64
        ).reshape(-1, 3)
        self.rest_run_table = np.array(self.rest_runs, dtype=np.int64).reshape(-1, 2)
        #: batches from this many rows skip their empty meld slots (None: never; the benchmark's "today" path)
        self.skip_empty_slots_from: int | None = SKIP_EMPTY_SLOTS_FROM
        #: forward passes without gradients (rollouts, evaluations): each block's ``W_slots @ e0`` over its
        #: unused slots by (block, slots used), for the weights whose versions are the key's first entry
        #: (:meth:`_unused_slots_term`)
        self._unused_terms: tuple[tuple[int, ...], dict[tuple[int, int], torch.Tensor]] = ((), {})
        if n_slots:  # Rummy has none
            self.slot_encoder = nn.Sequential(nn.Linear(MELD_FEATURE_SIZE, shape.slot_embed), nn.ReLU())
        if shape.unseen_input and shape.game != "burako":
            raise ValueError(f"unseen_input reads Burako's meld slots; the game {shape.game!r} has none")
        #: the derived unseen counts, the torso input's last NUM_KINDS columns (None: not read)
        self.unseen = UnseenCounts(shape.num_players, rules) if shape.unseen_input else None
        torso_in = n_slots * shape.slot_embed + rest.size + (NUM_KINDS if self.unseen is not None else 0)
        # with a value torso the first layer is twice as wide: the policy's rows, then the value's (one
        # product, so the empty-slot skipping below serves both); each half has its own second layer
        first_width = shape.hidden * (2 if shape.value_torso else 1)
        self.torso = nn.Sequential(
            nn.Linear(torso_in, first_width),
            nn.ReLU(),
            nn.Linear(shape.hidden, shape.hidden),
            nn.ReLU(),
        )
        self.value_torso = (
            nn.Sequential(nn.Linear(shape.hidden, shape.hidden), nn.ReLU()) if shape.value_torso else None
        )
        self.policy_head = nn.Linear(shape.hidden, shape.num_actions)
        if shape.privileged_value and shape.game != "burako":
            raise ValueError(f"privileged_value reads Burako's hidden tiles; the game {shape.game!r} is not supported")
        #: with ``privileged_value``: the layer between the value's torso output (+ the hidden tiles) and its head
        self.privileged_size = privileged_size(shape.num_players) if shape.privileged_value else 0
        self.privileged_value: nn.Sequential | None = None
        if shape.privileged_value:
            self.privileged_value = nn.Sequential(
                nn.Linear(shape.hidden + self.privileged_size, shape.hidden), nn.ReLU()
            )
            # the hidden tiles' columns start at zero: the value starts blind to them (as cloning fits it,
            # giving none) and learns what they add
            nn.init.zeros_(self.privileged_value[0].weight[:, shape.hidden :])
        self.value_head = nn.Linear(shape.hidden, 1)
        # CleanRL-style init: small policy logits (near-uniform start), unit value scale
        nn.init.orthogonal_(self.policy_head.weight, 0.01)
        nn.init.zeros_(self.policy_head.bias)
        nn.init.orthogonal_(self.value_head.weight, 1.0)
        nn.init.zeros_(self.value_head.bias)

    def features(
        self, obs: torch.Tensor | CompactRows | SparseRows, privileged: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Torso output (batch, hidden) and values (batch,) of observation rows, or of a batch's
        :class:`CompactRows` (:meth:`compact`) or :class:`SparseRows` (:meth:`sparse`).

        ``privileged`` (rows of burako_env/privileged.py's layout) feeds a ``privileged_value`` network's
        value only; without it such a value reads zeros there (the value without hidden tiles)."""
        pre_activation = self._pre_activation(obs)
        # under a bfloat16 autocast (training's ``precision``) only the encoder and torso run in bfloat16:
        # the heads read a float32 torso output, so values and logits keep float32 resolution
        if self.value_torso is None:
            h = value_h = self.torso[1:](pre_activation).float()
        else:
            first = self.torso[1](pre_activation)
            width = self.shape.hidden
            h = self.torso[2:](first[:, :width]).float()
            value_h = self.value_torso(first[:, width:]).float()
        with torch.autocast(h.device.type, enabled=False):
            if self.privileged_value is not None:
                hidden = (
                    privileged.float()
                    if privileged is not None
                    else value_h.new_zeros(value_h.shape[0], self.privileged_size)
                )
                value_h = self.privileged_value(torch.cat([value_h, hidden], dim=1))
            return h, self.value_head(value_h).squeeze(-1)

    def _pre_activation(self, obs: torch.Tensor | CompactRows | SparseRows) -> torch.Tensor:
        """The torso's first layer before its ReLU, by the cheapest path that serves ``obs``."""
        if isinstance(obs, SparseRows):
            encoder = self.slot_encoder
            empty = encoder(obs.slot_features.new_zeros(1, MELD_FEATURE_SIZE))[0]
            first = self.torso[0]
            entries = (obs.slot_rows, obs.slot_index, obs.rest_rows, obs.rest_cols, obs.rest_values)
            shape = (obs.n_rows, sum(n for _, n in self.slot_blocks))
            out = sparse_first_layer(first.weight, encoder(obs.slot_features), empty, shape, entries)
            return out + first.bias
        if isinstance(obs, CompactRows):
            return self._first_layer(obs.rest, self._rest_weight().index_select(1, obs.rest_cols), list(obs.slots))
        if self.input_scale is not None:
            obs = obs * self.input_scale
        skip_from = self.skip_empty_slots_from
        if self.slot_blocks and skip_from is not None and obs.shape[0] >= skip_from and self._skips_empty_slots(obs):
            return self._first_layer_skipping_empty_slots(obs)
        return self.torso[0](self._torso_input(obs))

    def _torso_input(self, obs: torch.Tensor) -> torch.Tensor:
        """The torso's input: every slot's encoding in slot order, then the other segments."""
        batch = obs.shape[0]
        # each run of slots encoded from a view, as (rows, 60) so the linear layer is one addmm (a 3-d
        # input adds its bias in a separate pass); only the (small) encodings are concatenated
        encoded = [
            self.slot_encoder(obs[:, start : start + size].reshape(-1, MELD_FEATURE_SIZE)).view(batch, -1)
            for start, size in self.slot_runs
        ]
        rest = [obs[:, start : start + size] for start, size in self.rest_runs]
        if self.unseen is not None:
            rest.append(self.unseen(obs))
        if encoded:  # the same dtype as the encodings (bfloat16 under training's autocast), so cat casts nothing
            rest = [part.to(encoded[0].dtype) for part in rest]
        return torch.cat([*encoded, *rest], dim=1)

    @staticmethod
    def _skips_empty_slots(obs: torch.Tensor) -> bool:
        """Whether :meth:`_first_layer_skipping_empty_slots` serves: float32 on the CPU.

        Its result depends on which slots the batch uses, so it equals the dense product only to
        float rounding: harmless in float32 (~1e-7), but under a bfloat16 autocast a position's
        logits differed by up to 0.25 between a rollout-sized batch and an update's minibatch
        (the dense product gave the same bits in both, measured on this project's CPU); and a
        GPU's products are cheap anyway."""
        return obs.device.type == "cpu" and obs.dtype == torch.float32 and not _cpu_autocast()

    def _first_layer_skipping_empty_slots(self, obs: torch.Tensor) -> torch.Tensor:
        """The torso's first layer (before its ReLU) without multiplying the slots no row of the
        batch uses: the dense product's values and parameter gradients, from the same parameters
        (the skipped inputs get no gradient; nothing asks for one).

        A side's melds fill its slots from the first (``_slot_blocks``), and an empty slot is all
        zeros (``burako_env.melds.encode_meld``), so its encoding is the encoder's output for zeros,
        ``e0``, in every row: past a block's last used slot, the slots' share of the first layer is
        the constant ``W_slots @ e0``, summed once per batch and added to the bias (gradients reach
        those weights and the encoder through it). With 2 players a batch uses ~30 of 74 slots
        (bench/README.md)."""
        rest = [obs[:, start : start + size] for start, size in self.rest_runs]
        if self.unseen is not None:
            rest.append(self.unseen(obs))
        slots = [
            obs[:, start : start + slots_in_use(obs, start, n_slots) * MELD_FEATURE_SIZE]
            for start, n_slots in self.slot_blocks
        ]
        return self._first_layer(torch.cat(rest, dim=1), self._rest_weight(), slots)

    def _rest_weight(self) -> torch.Tensor:
        """The torso's first-layer weights of the inputs that are not meld slots (its last columns)."""
        first = self.torso[0]
        return first.weight[:, sum(n for _, n in self.slot_blocks) * self.shape.slot_embed :]

    def _first_layer(self, rest: torch.Tensor, rest_weight: torch.Tensor, slots: list[torch.Tensor]) -> torch.Tensor:
        """The torso's first layer (before its ReLU) from the other segments ``rest`` (their weights
        ``rest_weight``) and, per slot block, its slots up to the last one in use, ``(rows, used x 60)``:
        each block's slots past those add the constant ``W_slots @ e0``
        (:meth:`_first_layer_skipping_empty_slots`)."""
        first = self.torso[0]
        batch, hidden, embed = rest.shape[0], first.weight.shape[0], self.shape.slot_embed
        out = torch.addmm(first.bias, rest, rest_weight.t())
        col = 0
        for block, ((_, n_slots), part) in enumerate(zip(self.slot_blocks, slots, strict=True)):
            used = part.shape[1] // MELD_FEATURE_SIZE
            weights = first.weight[:, col : col + n_slots * embed]
            if used:
                encoded = self.slot_encoder(part.reshape(-1, MELD_FEATURE_SIZE))
                out = out.addmm(encoded.view(batch, used * embed), weights[:, : used * embed].t())
            if used < n_slots:
                out = out + self._unused_slots_term(block, used, weights[:, used * embed :], hidden, embed)
            col += n_slots * embed
        return out

    def _unused_slots_term(self, block: int, used: int, weights: torch.Tensor, hidden: int, embed: int) -> torch.Tensor:
        """``W_slots @ e0`` over a block's slots from ``used`` on (``weights``: their first-layer columns),
        ``(hidden,)``. With gradients it is computed each call (they reach the weights and the encoder
        through it); without, it is a constant until the weights change, kept by (block, ``used``) for
        the parameters' versions (an optimiser step or ``load_state_dict`` bumps them): its five small ops
        were ~5% of a rollout's step."""
        if torch.is_grad_enabled() or torch.is_autocast_enabled(weights.device.type):
            return self._unused_term(weights, hidden, embed)
        encoder = self.slot_encoder[0]
        params = (self.torso[0].weight, encoder.weight, encoder.bias)
        versions = tuple(x for param in params for x in (param._version, param.data_ptr()))
        kept_versions, terms = self._unused_terms
        if kept_versions != versions:
            terms = {}
            self._unused_terms = (versions, terms)
        term = terms.get((block, used))
        if term is None:
            term = terms[(block, used)] = self._unused_term(weights, hidden, embed)
        return term

    def _unused_term(self, weights: torch.Tensor, hidden: int, embed: int) -> torch.Tensor:
        empty_encoding = self.slot_encoder(weights.new_zeros(1, MELD_FEATURE_SIZE))[0]  # an empty slot's encoding
        return weights.reshape(hidden, -1, embed).sum(1) @ empty_encoding

    @property
    def compacts(self) -> bool:
        """Whether :meth:`compact` serves this network: Burako's meld slots read as they are (no
        derived unseen counts, which read columns a compact batch drops)."""
        return bool(self.slot_blocks) and self.unseen is None and self.input_scale is None

    def compact(
        self, obs: torch.Tensor, rows: torch.Tensor | None = None, buffers: dict[str, torch.Tensor] | None = None
    ) -> CompactRows:
        """Rows ``rows`` of ``obs`` (all of them by default) as :class:`CompactRows` for
        :meth:`features`: the same first layer, to float rounding (the blocks' slots up to the last
        one the whole batch uses are multiplied, each minibatch's empty ones among them as zeros).
        Training reads it in float32 on the CPU only, where the empty-slot skipping serves too
        (:meth:`_skips_empty_slots`); ``buffers`` keeps its tensors between calls."""
        if not self.compacts:
            raise ValueError("compact: only Burako networks without unseen_input read compact rows")
        if rows is None:
            rows = torch.arange(obs.shape[0])
        slots = []
        for index, (start, n_slots) in enumerate(self.slot_blocks):
            present = obs[:, start + MELD_PRESENT : start + n_slots * MELD_FEATURE_SIZE : MELD_FEATURE_SIZE]
            part = obs[:, start : start + _prefix_in_use(present.index_select(0, rows)) * MELD_FEATURE_SIZE]
            slots.append(torch.index_select(part, 0, rows, out=_scratch(buffers, f"slots{index}", len(rows), part)))
        rest = torch.cat([obs[:, start : start + size].index_select(0, rows) for start, size in self.rest_runs], dim=1)
        rest_cols = rest.ne(0).any(0).nonzero().squeeze(1)
        kept = _scratch(buffers, "rest", len(rows), rest, len(rest_cols))
        rest = torch.index_select(rest, 1, rest_cols, out=kept)
        return CompactRows(tuple(slots), rest, rest_cols)

    def sparse(self, obs: torch.Tensor, rows: torch.Tensor | None = None) -> SparseBatch:
        """Rows ``rows`` of ``obs`` (all of them by default) as a :class:`SparseBatch` for
        :meth:`features` (through :meth:`SparseBatch.select`): the same first layer, to float rounding.
        float32 on the CPU, where the compiled first layer runs; the networks :meth:`compact` serves."""
        if not self.compacts:
            raise ValueError("sparse: only Burako networks without unseen_input read sparse rows")
        if obs.dtype != torch.float32 or obs.device.type != "cpu":
            raise ValueError(f"sparse: float32 rows on the CPU only, not {obs.dtype} on {obs.device}")
        indices = np.arange(obs.shape[0]) if rows is None else rows.numpy()
        if indices.size and (indices.min() < 0 or indices.max() >= obs.shape[0]):  # the kernels do not check
            raise IndexError(f"sparse: rows {indices.min()}..{indices.max()} outside the {obs.shape[0]} rows given")
        slot_counts, slot_index, features, rest_counts, rest_cols, rest_values = sparse_entries(
            obs.numpy(), indices, self.slot_block_table, self.rest_run_table, MELD_PRESENT, MELD_FEATURE_SIZE
        )
        return SparseBatch(
            slot_counts,
            np.cumsum(slot_counts) - slot_counts,
            slot_index,
            features,
            rest_counts,
            np.cumsum(rest_counts) - rest_counts,
            rest_cols,
            rest_values,
        )

    def logits_of(self, h: torch.Tensor, rows: torch.Tensor, cols: torch.Tensor) -> torch.Tensor:
        """The logits of the (row, action) pairs only: dot products of the torso
        output with those actions' rows of the policy head (its weights read as
        action embeddings). Equal to ``forward``'s logits at those pairs."""
        return pair_logits(h, rows, *self.head_of_pairs(rows, cols))

    def head_of_pairs(self, rows: torch.Tensor, cols: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """The head the (row, action) pairs read: ``(weight, bias, head rows)``, the head rows the actions."""
        return self.policy_head.weight, self.policy_head.bias, cols

    def forward(self, obs: torch.Tensor, privileged: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """Raw logits over every action (batch, NUM_ACTIONS) and values (batch,)."""
        h, value = self.features(obs, privileged)
        with torch.autocast(h.device.type, enabled=False):
            return self.policy_head(h), value


class StackedTorsos:
    """Networks of one shape whose weights no longer change (a league's snapshots), evaluated
    together: each one's rows through its own torso, in one batched product per layer
    (``torch.baddbmm`` over the stacked weights) instead of one pass per network. A pass over a
    few positions costs ~60 small operations here whatever the batch (~0.6 ms for 7 rows on
    this project's 2-core CPU, bench/README.md), so six snapshots cost six times that per step.

    Same function as :meth:`PolicyNet.features`'s dense product (its policy half; no values),
    to float rounding. The policy heads are stacked too (``head_weight``: network ``i``'s actions
    from row ``i * num_actions``). Built once per set of networks: stacking copies the weights."""

    def __init__(self, nets: list[PolicyNet]) -> None:
        first = nets[0]
        if first.shape.game != "burako" or any(net.shape != first.shape for net in nets):
            raise ValueError("StackedTorsos: Burako networks of one shape only")
        self.slot_runs, self.rest_runs, self.unseen = first.slot_runs, first.rest_runs, first.unseen
        self.num_actions = first.shape.num_actions
        width = first.shape.hidden

        def stack(get: Callable[[PolicyNet], torch.Tensor]) -> torch.Tensor:
            return torch.stack([get(net).detach() for net in nets])

        # the policy's half of the first layer (all of it without a value torso), transposed for baddbmm
        self.encoder_weight = stack(lambda n: n.slot_encoder[0].weight.t())
        self.encoder_bias = stack(lambda n: n.slot_encoder[0].bias).unsqueeze(1)
        self.first_weight = stack(lambda n: n.torso[0].weight[:width].t())
        self.first_bias = stack(lambda n: n.torso[0].bias[:width]).unsqueeze(1)
        self.second_weight = stack(lambda n: n.torso[2].weight.t())
        self.second_bias = stack(lambda n: n.torso[2].bias).unsqueeze(1)
        self.head_weight = torch.cat([net.policy_head.weight.detach() for net in nets])
        self.head_bias = torch.cat([net.policy_head.bias.detach() for net in nets])

    def __len__(self) -> int:
        return len(self.first_weight)

    def features(self, obs: torch.Tensor, members: list[int], sizes: list[int]) -> torch.Tensor:
        """Torso outputs (rows, hidden) of ``obs``, whose first ``sizes[0]`` rows belong to network
        ``members[0]``, the next ``sizes[1]`` to ``members[1]``, ... (each network once). Every
        stacked network runs, on zeros if it has no rows here: cheaper than gathering weights."""
        stacked, longest = len(self), max(sizes)
        # row j of network m at m * longest + j of the padded (networks, longest, observation) input
        place = torch.cat([torch.arange(size) + m * longest for m, size in zip(members, sizes, strict=True)])
        place = place.to(obs.device)
        x = obs.new_zeros(stacked * longest, obs.shape[1]).index_copy_(0, place, obs).view(stacked, longest, -1)
        parts = []
        for start, size in self.slot_runs:
            slots = x[:, :, start : start + size].reshape(stacked, -1, MELD_FEATURE_SIZE)
            encoded = torch.baddbmm(self.encoder_bias, slots, self.encoder_weight).relu_()
            parts.append(encoded.view(stacked, longest, -1))
        parts += [x[:, :, start : start + size] for start, size in self.rest_runs]
        if self.unseen is not None:
            parts.append(self.unseen(x.view(stacked * longest, -1)).view(stacked, longest, -1))
        h = torch.baddbmm(self.first_bias, torch.cat(parts, dim=2), self.first_weight).relu_()
        h = torch.baddbmm(self.second_bias, h, self.second_weight).relu_()
        return h.view(stacked * longest, -1).index_select(0, place).float()  # float32 heads, as in features


def pair_logits(
    h: torch.Tensor, rows: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, cols: torch.Tensor
) -> torch.Tensor:
    """Logits of (row, head row) pairs: row ``rows`` of the torso output ``h``
    dotted with row ``cols`` of a policy head's ``weight``, plus its ``bias``.

    float32 on the CPU: one compiled loop (``agents/pair_kernel.py``, 4x the torch ops below,
    the same values up to float rounding); elsewhere the torch ops."""
    if fused_eligible(h, weight, bias):
        return fused_pair_logits(h, rows, weight, bias, cols)
    return torch_pair_logits(h, rows, weight, bias, cols)


def torch_pair_logits(
    h: torch.Tensor, rows: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, cols: torch.Tensor
) -> torch.Tensor:
    """:func:`pair_logits` in torch ops (off the CPU, other dtypes, ``BURAKO_PAIR_KERNEL=0``)."""
    # index_select, not h[rows]: its backward is an index_add, several times
    # faster on CPU than advanced indexing's index_put (bench/README.md, profile)
    return (h.index_select(0, rows) * weight.index_select(0, cols)).sum(1) + bias.index_select(0, cols)


def _cpu_autocast() -> bool:
    """Whether a CPU autocast is on (torch before 2.4 has no device argument)."""
    try:
        return torch.is_autocast_enabled("cpu")
    except TypeError:
        return torch.is_autocast_cpu_enabled()


def masked_logits(logits: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Logits with every illegal action at the smallest float (probability 0)."""
    return torch.where(mask, logits, torch.finfo(logits.dtype).min)


def parameter_count(net: nn.Module) -> int:
    return sum(p.numel() for p in net.parameters())
