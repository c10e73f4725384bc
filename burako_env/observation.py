"""The observation layout: named segments concatenated into one float32 vector.

Everything is relative to the observing seat: players are listed from the
observer round the table to his left (``self, next, ...``), sides from his own
side (``own, next, ...``). With 4 players there are 2 sides (partnerships).

| segment            | shape              | contents                                                   |
|--------------------|--------------------|------------------------------------------------------------|
| hand               | (53,)              | own tile counts per kind (0..2)                            |
| privilege_tile     | (53,)              | the tile mano drew under B17, while he decides (own only)  |
| melds              | (sides, 36, 60)    | every side's meld slots, ``melds.MELD_FEATURES`` each      |
| pile_counts        | (53,)              | discard pile counts per kind                               |
| pile_top           | (53,)              | one-hot top tile of the pile                               |
| pile_size          | (1,)               | tiles in the pile / 106                                    |
| known_in_hands     | (players-1, 53)    | tiles each other player took with the pile, not yet played |
| hand_sizes         | (players,)         | tiles in each hand / 30                                    |
| stock_size         | (1,)               | tiles in the stock / 106                                   |
| muerto_taken       | (sides,)           | 1 once the side took its muerto                            |
| muerto_unplayed    | (players,)         | took the muerto indirectly, has not drawn since (B21)      |
| close_ready        | (sides,)           | the side holds the canasta it needs to close (B22)         |
| phase              | (4,)               | one-hot DRAW, PRIVILEGE, PLAY, CHOOSE_END                  |
| pending_tile       | (53,)              | CHOOSE_END: the tile being added                           |
| pending_slot       | (36,)              | CHOOSE_END: the own meld slot it goes to                   |
| pending_options    | (2, 60)            | CHOOSE_END: the meld after option 0 / option 1             |
| pile_top_required  | (53,)              | V3: the taken pile's top tile that must still be melded    |
| mano               | (players,)         | one-hot: who is mano this hand                             |
| turn               | (1,)               | turns played this hand / max_turns                         |
| match_scores       | (sides,)           | match totals / target (can be negative)                    |
| rules              | (20,)              | the table rules that change play (``RULE_FEATURES``)       |

Nothing a seat cannot know is encoded (E2): other hands only through their
sizes and the tiles they took with the pile; stock order and untaken muertos
never.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import numpy as np

from burako_env.actions import MAX_MELD_SLOTS, NUM_ACTIONS
from burako_env.engine import GameState, Phase
from burako_env.melds import MELD_FEATURE_SIZE
from burako_env.rules import Rules
from burako_env.tiles import NUM_KINDS

TOTAL_TILES_SCALE = 106.0
HAND_SIZE_SCALE = 30.0


#: the rules segment: (name, how to read it from a Rules and a player count)
RULE_FEATURES: tuple[tuple[str, Callable[[Rules, int], float]], ...] = (
    ("cards", lambda r, n: float(r.cards)),
    ("sets_allowed", lambda r, n: float(r.sets_allowed)),
    ("set_colours_distinct", lambda r, n: float(r.set_colours_distinct)),
    ("close_requires_clean_canasta", lambda r, n: float(r.close_requires_clean_canasta)),
    ("pile_top_must_be_melded", lambda r, n: float(r.pile_top_must_be_melded)),
    ("unplayed_indirect_muerto_counts_as_untaken", lambda r, n: float(r.unplayed_indirect_muerto_counts_as_untaken)),
    ("mano_privilege", lambda r, n: float(r.mano_privilege)),
    ("value_joker", lambda r, n: r.tile_values["joker"] / 50.0),
    ("value_two", lambda r, n: r.tile_values["two"] / 50.0),
    ("value_ace", lambda r, n: r.tile_values["ace"] / 50.0),
    ("value_high", lambda r, n: r.tile_values["high"] / 50.0),
    ("value_low", lambda r, n: r.tile_values["low"] / 50.0),
    ("bonus_clean", lambda r, n: r.canasta_bonus["clean"] / 1000.0),
    ("bonus_dirty", lambda r, n: r.canasta_bonus["dirty"] / 1000.0),
    ("bonus_real", lambda r, n: r.canasta_bonus["real"] / 1000.0),
    ("bonus_ace_to_ace", lambda r, n: r.canasta_bonus["ace_to_ace"] / 1000.0),
    ("closing_bonus", lambda r, n: r.closing_bonus / 100.0),
    ("muerto_penalty", lambda r, n: r.muerto_penalty / 100.0),
    ("hand_size", lambda r, n: r.hand_size[n] / HAND_SIZE_SCALE),
    ("target", lambda r, n: r.target / 3000.0),
)


def rule_features(rules: Rules, num_players: int) -> np.ndarray:
    """The rules segment's values for a table (constant over a game)."""
    return np.array([read(rules, num_players) for _, read in RULE_FEATURES], dtype=np.float32)


class Segment(NamedTuple):
    name: str
    offset: int
    shape: tuple[int, ...]

    @property
    def size(self) -> int:
        return int(np.prod(self.shape))


def _segment_shapes(num_players: int, num_sides: int) -> list[tuple[str, tuple[int, ...]]]:
    return [
        ("hand", (NUM_KINDS,)),
        ("privilege_tile", (NUM_KINDS,)),
        ("melds", (num_sides, MAX_MELD_SLOTS, MELD_FEATURE_SIZE)),
        ("pile_counts", (NUM_KINDS,)),
        ("pile_top", (NUM_KINDS,)),
        ("pile_size", (1,)),
        ("known_in_hands", (num_players - 1, NUM_KINDS)),
        ("hand_sizes", (num_players,)),
        ("stock_size", (1,)),
        ("muerto_taken", (num_sides,)),
        ("muerto_unplayed", (num_players,)),
        ("close_ready", (num_sides,)),
        ("phase", (4,)),
        ("pending_tile", (NUM_KINDS,)),
        ("pending_slot", (MAX_MELD_SLOTS,)),
        ("pending_options", (2, MELD_FEATURE_SIZE)),
        ("pile_top_required", (NUM_KINDS,)),
        ("mano", (num_players,)),
        ("turn", (1,)),
        ("match_scores", (num_sides,)),
        ("rules", (len(RULE_FEATURES),)),
    ]


def observation_layout(num_players: int, rules: Rules | None = None) -> list[Segment]:
    """The segment table (name, offset, shape) for a player count."""
    num_sides = 2 if num_players == 4 else num_players
    if rules is not None:
        num_sides = rules.num_sides(num_players)
    segments = []
    offset = 0
    for name, shape in _segment_shapes(num_players, num_sides):
        seg = Segment(name, offset, shape)
        segments.append(seg)
        offset += seg.size
    return segments


def observation_size(num_players: int, rules: Rules | None = None) -> int:
    last = observation_layout(num_players, rules)[-1]
    return last.offset + last.size


def layout_id(num_players: int, rules: Rules | None = None) -> str:
    """A string naming the observation and action layout for a player count:
    every segment's name and shape, and the action count. Trained policies
    store it; a policy whose layout differs from the env's cannot be used."""
    segments = ",".join(f"{s.name}{list(s.shape)}" for s in observation_layout(num_players, rules))
    return f"obs[{segments}];actions[{NUM_ACTIONS}]"


def split_observation(obs: np.ndarray, num_players: int, rules: Rules | None = None) -> dict[str, np.ndarray]:
    """Read a flat observation by segment name (views, reshaped)."""
    return {s.name: obs[s.offset : s.offset + s.size].reshape(s.shape) for s in observation_layout(num_players, rules)}


def observation_bounds(num_players: int, rules: Rules | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Per-element low/high bounds for the gymnasium Box."""
    size = observation_size(num_players, rules)
    low = np.zeros(size, dtype=np.float32)
    high = np.ones(size, dtype=np.float32)
    for seg in observation_layout(num_players, rules):
        sl = slice(seg.offset, seg.offset + seg.size)
        if seg.name in ("hand", "pile_counts", "known_in_hands"):
            high[sl] = 2.0
        elif seg.name == "hand_sizes":
            high[sl] = TOTAL_TILES_SCALE / HAND_SIZE_SCALE
        elif seg.name == "match_scores":
            low[sl] = -np.inf
            high[sl] = np.inf
        elif seg.name == "rules":
            high[sl] = np.inf
    return low, high


class Observer:
    """Fills observations for one (rules, player count) into preallocated arrays."""

    def __init__(self, num_players: int, rules: Rules) -> None:
        self.num_players = num_players
        self.num_sides = rules.num_sides(num_players)
        self.layout = observation_layout(num_players, rules)
        self.size = observation_size(num_players, rules)
        self.off = {s.name: s.offset for s in self.layout}
        self.max_turns = float(rules.max_turns)
        self.target = float(rules.target)
        self.meld_block = MAX_MELD_SLOTS * MELD_FEATURE_SIZE
        self.rules_values = rule_features(rules, num_players)

    def encode(self, state: GameState, player: int, out: np.ndarray | None = None) -> np.ndarray:
        """The observation of ``player``. ``out`` (float32, zeroed here) is reused if given."""
        if out is None:
            out = np.zeros(self.size, dtype=np.float32)
        else:
            out.fill(0.0)
        off = self.off
        n, sides = self.num_players, self.num_sides
        own_side = state.side_of[player]
        out[off["hand"] : off["hand"] + NUM_KINDS] = state.hands[player]
        if state.phase == Phase.PRIVILEGE and player == state.current and state.privilege_tile >= 0:
            out[off["privilege_tile"] + state.privilege_tile] = 1.0
        block = self.meld_block
        base = off["melds"]
        if own_side == 0:
            out[base : base + sides * block] = state.meld_enc.reshape(-1)
        else:
            enc = state.meld_enc.reshape(sides, block)
            for i in range(sides):
                out[base + i * block : base + (i + 1) * block] = enc[(own_side + i) % sides]
        out[off["pile_counts"] : off["pile_counts"] + NUM_KINDS] = state.pile_counts
        if state.pile:
            out[off["pile_top"] + state.pile[-1]] = 1.0
        out[off["pile_size"]] = len(state.pile) / TOTAL_TILES_SCALE
        known = off["known_in_hands"]
        for i in range(1, n):
            q = (player + i) % n
            out[known + (i - 1) * NUM_KINDS : known + i * NUM_KINDS] = state.known[q]
        hs, mu = off["hand_sizes"], off["muerto_unplayed"]
        for i in range(n):
            q = (player + i) % n
            out[hs + i] = state.hand_size[q] / HAND_SIZE_SCALE
            out[mu + i] = state.muerto_unplayed[q]
        out[off["stock_size"]] = len(state.stock) / TOTAL_TILES_SCALE
        mt, cr, ms = off["muerto_taken"], off["close_ready"], off["match_scores"]
        for i in range(sides):
            s = (own_side + i) % sides
            out[mt + i] = state.muerto_taken[s]
            out[cr + i] = state.close_ready[s]
            out[ms + i] = state.match_scores[s] / self.target
        if state.phase < Phase.HAND_OVER:
            out[off["phase"] + int(state.phase)] = 1.0
        if state.pending is not None:
            slot, kind, outcomes = state.pending
            out[off["pending_tile"] + kind] = 1.0
            out[off["pending_slot"] + slot] = 1.0
            po = off["pending_options"]
            for i, meld in enumerate(outcomes):
                out[po + i * MELD_FEATURE_SIZE : po + (i + 1) * MELD_FEATURE_SIZE] = state.t.encoded(meld)
        if state.pile_top_required >= 0:
            out[off["pile_top_required"] + state.pile_top_required] = 1.0
        out[off["mano"] + (state.mano - player) % n] = 1.0
        out[off["turn"]] = state.turn / self.max_turns
        out[off["rules"] : off["rules"] + self.rules_values.size] = self.rules_values
        return out
