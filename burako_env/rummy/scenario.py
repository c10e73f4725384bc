"""Readable Rummy states for tests and notebooks: :func:`build_rummy_state`.

Same tile notation as Burako's scenarios (:mod:`burako_env.scenario`: ``R5``,
``B12``, ``*`` for the joker). The table is written as melds (one string per
meld) for readability, but kept as a multiset, as the engine does; it is
checked to split into valid melds. Every tile not named goes to the bottom of
the stock, or with ``leftover=N`` into player N's hand, which is how a
scenario gets an empty stock::

    state = build_rummy_state(
        hands={0: "R3 R4 R5 K7", 1: "Y1 Y1"},
        table=["B1 B2 B3", "K9 R9 B9"],
        closing="K13",
        stock="B7 Y13",       # B7 is drawn first
        current=0,
        first_play={0: True},
    )

The state is the one *after* the current player's draw (his turn has
started); ``turn_started_empty`` says whether the stock was empty then.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from burako_env.rummy.engine import FULL_COUNTS, NO_TILE, Phase, RummyState
from burako_env.rummy.partition import can_partition
from burako_env.rummy.rules import RummyRules, load_rummy_rules
from burako_env.safe_yaml import is_integer
from burako_env.scenario import counts, tile_text, tiles, tiles_text
from burako_env.tiles import NUM_KINDS


def build_rummy_state(
    num_players: int = 2,
    rules: str | RummyRules = "rummy",
    hands: Mapping[int, str] | None = None,
    table: Sequence[str] | str = (),
    closing: str | None = None,
    stock: str = "",
    current: int = 0,
    first_play: Mapping[int, bool] | None = None,
    leftover: str | int = "stock",
    turn_started_empty: bool | None = None,
    blocked_turns: int = 0,
    match_scores: Sequence[int] | None = None,
    hand_number: int = 0,
) -> RummyState:
    """A consistent Rummy state (E1 holds) from the parts that matter."""
    state = RummyState(load_rummy_rules(rules), num_players)
    used = np.zeros(NUM_KINDS, dtype=np.int64)
    for player, spec in (hands or {}).items():
        if not 0 <= player < num_players:
            raise ValueError(f"hands: no player {player} at a table of {num_players}")
        state.hands[player] = counts(spec)
        used += state.hands[player]
    melds = [table] if isinstance(table, str) else list(table)
    for meld in melds:
        meld_counts = counts(meld).astype(np.int64)
        if meld and not can_partition(meld_counts):
            raise ValueError(f"table: {meld!r} is not a valid meld (R3)")
        state.table += meld_counts
    used += state.table
    if closing is not None:
        state.closing_tile = tiles(closing)[0]
        used[state.closing_tile] += 1
    named_stock = tiles(stock)
    used += np.bincount(np.asarray(named_stock, dtype=np.int64), minlength=NUM_KINDS)
    over = np.flatnonzero(used > FULL_COUNTS)
    if over.size:
        raise ValueError(f"too many copies of {', '.join(tile_text(int(k)) for k in over)} (2 of each tile, 2 jokers)")
    rest = np.repeat(np.arange(NUM_KINDS), FULL_COUNTS - used).tolist()
    if leftover == "stock":
        state.stock = rest + list(reversed(named_stock))
    elif isinstance(leftover, int) and 0 <= leftover < num_players:
        state.hands[leftover] += np.bincount(np.asarray(rest, dtype=np.int64), minlength=NUM_KINDS)
        state.stock = list(reversed(named_stock))
    else:
        raise ValueError(f"leftover must be 'stock' or a player number, got {leftover!r}")
    for name, value in (("current", current), ("blocked_turns", blocked_turns), ("hand_number", hand_number)):
        if not is_integer(value):
            raise ValueError(f"{name} must be a whole number, got {value!r}")
    if match_scores is not None and not all(is_integer(v) for v in match_scores):
        raise ValueError(f"match_scores: expected whole numbers, got {list(match_scores)!r}")
    state.current = state.starter = current
    state.first_play_done = [bool((first_play or {}).get(p, False)) for p in range(num_players)]
    state.turn_started_empty = (not state.stock) if turn_started_empty is None else turn_started_empty
    state.blocked_turns = blocked_turns
    state.match_scores = list(match_scores) if match_scores is not None else [0] * num_players
    state.hand_number = hand_number
    state.phase = Phase.PLAY
    problems = state.consistency_problems()  # seats, counts and list lengths in range, as from_dict
    if problems:
        raise ValueError("; ".join(problems))
    state.check_conservation()
    return state


def rummy_hand(state: RummyState, player: int) -> str:
    """A hand in canonical order (``"K7 R3 R4 *"``)."""
    return tiles_text(state.hands[player])


def table_text(state: RummyState) -> str:
    return tiles_text(state.table)


def play(state: RummyState, spec: str, closing: bool = False) -> None:
    """Put the tiles of ``spec`` (and the closing tile) into the pending play and commit (tests, notebooks)."""
    from burako_env.rummy import actions as A

    for kind in tiles(spec):
        state.step(A.ADD_TILE + kind)
    if closing:
        state.step(A.ADD_CLOSING)
    state.step(A.COMMIT)


__all__ = ["NO_TILE", "build_rummy_state", "play", "rummy_hand", "table_text"]
