"""The Rummy observation: one float32 vector per player, nothing hidden (E2).

Seats are relative to the observer (index 0 is the observer, 1 the next
player to his left, ...); absent seats (fewer than 4 players) are 0.

| segment        | size | contents                                               |
|----------------|------|--------------------------------------------------------|
| hand           | 53   | the observer's tile counts per kind                    |
| pending        | 53   | his pending play (0 unless he is the player to act)    |
| pending_closing| 1    | the closing tile is in his pending play                |
| table          | 53   | the table's tiles (a multiset: rearrangement is free)  |
| closing_tile   | 53   | one-hot kind of the face-up closing tile (0 once placed)|
| hand_sizes     | 4    | tiles in each seat's hand                              |
| first_play     | 4    | each seat has made his first play (R5)                 |
| match_scores   | 4    | each seat's match total, / 100 (R10)                   |
| to_act         | 4    | one-hot seat of the player to act                      |
| seats          | 4    | 1 for each seat at the table                           |
| stock_size     | 1    | tiles in the stock                                     |
| hand_number    | 1    | hands finished in the match                            |
| blocked_turns  | 1    | turns in a row with an empty stock and no play (R11e)  |
| started_empty  | 1    | the current turn began with the stock empty            |

Not observed (hidden, E2): the other hands, the stock order, and another
player's pending play (still in his hand).
"""

from __future__ import annotations

import numpy as np

from burako_env.rummy.actions import NUM_ACTIONS
from burako_env.rummy.engine import NO_TILE, RummyState
from burako_env.tiles import NUM_KINDS

MAX_SEATS = 4
SEGMENTS: tuple[tuple[str, int], ...] = (
    ("hand", NUM_KINDS),
    ("pending", NUM_KINDS),
    ("pending_closing", 1),
    ("table", NUM_KINDS),
    ("closing_tile", NUM_KINDS),
    ("hand_sizes", MAX_SEATS),
    ("first_play", MAX_SEATS),
    ("match_scores", MAX_SEATS),
    ("to_act", MAX_SEATS),
    ("seats", MAX_SEATS),
    ("stock_size", 1),
    ("hand_number", 1),
    ("blocked_turns", 1),
    ("started_empty", 1),
)
OBSERVATION_SIZE = sum(size for _, size in SEGMENTS)
OFFSETS: dict[str, slice] = {}
_start = 0
for _name, _size in SEGMENTS:
    OFFSETS[_name] = slice(_start, _start + _size)
    _start += _size
SCORE_SCALE = 100.0
#: what a learner divides a segment by to bring it near [0, 1] (agents/network.py; the observation itself
#: keeps counts, which agents read); part of :func:`layout_id`. Segments not named are 0/1 or tile counts <= 2.
INPUT_SCALES: dict[str, float] = {"hand_sizes": 14.0, "stock_size": 77.0, "hand_number": 4.0, "blocked_turns": 4.0}


_HAND = OFFSETS["hand"]
_PENDING = OFFSETS["pending"]
_PENDING_CLOSING = OFFSETS["pending_closing"].start
_TABLE = OFFSETS["table"]
_CLOSING = OFFSETS["closing_tile"].start
_HAND_SIZES = OFFSETS["hand_sizes"].start
_FIRST_PLAY = OFFSETS["first_play"].start
_MATCH_SCORES = OFFSETS["match_scores"].start
_TO_ACT = OFFSETS["to_act"].start
_SEATS = OFFSETS["seats"].start
_TAIL = OFFSETS["stock_size"].start  # stock_size, hand_number, blocked_turns, started_empty


def encode(state: RummyState, observer: int) -> np.ndarray:
    """The observation of ``observer`` (float32, :data:`OBSERVATION_SIZE`)."""
    obs = np.zeros(OBSERVATION_SIZE, dtype=np.float32)
    n = state.num_players
    seats = [(observer + i) % n for i in range(n)]
    obs[_HAND] = state.hands[observer]
    if state.current == observer:
        obs[_PENDING] = state.pending
        obs[_PENDING_CLOSING] = state.pending_closing
    obs[_TABLE] = state.table
    if state.closing_tile != NO_TILE:
        obs[_CLOSING + state.closing_tile] = 1.0
    obs[_HAND_SIZES : _HAND_SIZES + n] = state.hands.sum(axis=1)[seats]
    obs[_FIRST_PLAY : _FIRST_PLAY + n] = [state.first_play_done[p] for p in seats]
    obs[_MATCH_SCORES : _MATCH_SCORES + n] = [state.match_scores[p] / SCORE_SCALE for p in seats]
    obs[_SEATS : _SEATS + n] = 1.0
    if not state.hand_over:
        obs[_TO_ACT + (state.current - observer) % n] = 1.0
    obs[_TAIL : _TAIL + 4] = (len(state.stock), state.hand_number, state.blocked_turns, state.turn_started_empty)
    return obs


def layout_id() -> str:
    """A string naming the Rummy observation and action layout: the game, every
    segment's name and size, and the action count. Trained policies store it
    (agents/checkpoint.py); a policy made for another layout cannot play. The
    same for 2 to 4 players (absent seats are zeros)."""
    segments = ",".join(
        f"{name}[{size}]" + (f"/{INPUT_SCALES[name]:g}" if name in INPUT_SCALES else "") for name, size in SEGMENTS
    )
    return f"rummy;obs[{segments}];actions[{NUM_ACTIONS}]"


def input_scale() -> np.ndarray:
    """Per-element divisors of an observation (:data:`INPUT_SCALES`, 1 elsewhere)."""
    scale = np.ones(OBSERVATION_SIZE, dtype=np.float32)
    for name, value in INPUT_SCALES.items():
        scale[OFFSETS[name]] = value
    return scale


def split_observation(obs: np.ndarray) -> dict[str, np.ndarray]:
    """The named segments of an observation."""
    return {name: obs[part] for name, part in OFFSETS.items()}


def observation_bounds() -> tuple[np.ndarray, np.ndarray]:
    low = np.zeros(OBSERVATION_SIZE, dtype=np.float32)
    high = np.full(OBSERVATION_SIZE, 106.0, dtype=np.float32)
    high[OFFSETS["match_scores"]] = 10_000.0
    return low, high
