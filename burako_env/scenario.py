"""Readable game states for tests and notebooks: :func:`build_state`.

A scenario names only what matters (hands, melds, the pile, what the stock
will give next); every other tile is placed automatically so tile
conservation (E1) always holds, and every derived field of the engine's
:class:`~burako_env.engine.GameState` is set consistently.

Tile notation: a colour letter and a number, ``K`` black, ``R`` red, ``B``
blue, ``Y`` yellow (``R5``, ``B12``, ``Y1``), and ``*`` (or ``★``) for the
joker; tiles are separated by spaces or commas, letters are case-insensitive.
Runs are written with :func:`run` on positions 1..14 (14 is the high 1, as in
12-13-1, docs/rules.md B6) and sets with :func:`pierna`::

    from burako_env.engine import Phase
    from burako_env.scenario import build_state, hand_of, pierna, run

    state = build_state(
        num_players=2,
        rules="burako",
        hands={0: "R3 R4 R5 K7 *", 1: "Y1 Y1"},
        melds={0: [run("red", 6, 9), pierna(9, "R K B", wild="K2")]},
        pile="K5 Y9",            # bottom to top: Y9 is the top tile
        stock="B7 Y13",          # draw order: B7 is drawn first, then Y13,
                                 # then every tile not placed anywhere
        current=0,
        phase=Phase.PLAY,
        muerto_taken={0: True},  # side 0 has its muerto; side 1's is set aside
    )
    assert hand_of(state, 0) == "K7 R3 R4 R5 *"  # canonical order: K, R, B, Y, then *

Where the unplaced tiles go:

* every side whose muerto is not taken gets a muerto: the tiles given in
  ``muertos`` (any number), or by default ``rules.muerto_size`` tiles taken
  from the front of the remaining tiles in kind order (black 1, black 1,
  black 2, ...);
* every other tile goes to the bottom of the stock (drawn after the tiles
  named in ``stock``, in kind order), or, with ``leftover="pile"``, to the
  bottom of the discard pile (below the tiles named in ``pile``). The pile
  is the only place where extra tiles score for nobody and change no hand, so
  ``leftover="pile"`` is how a scenario gets a short or empty stock (B24).

Asking for more copies of a tile than the tile set holds (three red 5s, a
joker with cards) raises a :class:`ValueError` naming the tile. The state is
checked with :meth:`GameState.check_conservation` before it is returned, and
its cached action mask is cleared.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from burako_env.actions import MAX_MELD_SLOTS
from burako_env.engine import GameState, Phase, check_seat
from burako_env.melds import Meld, describe_meld, is_valid_meld, make_run, make_set, meld_kinds
from burako_env.rules import Rules, load_rules
from burako_env.safe_yaml import is_integer
from burako_env.tiles import (
    COLOUR_NAMES,
    IS_WILD,
    JOKER,
    KIND_COLOUR_LIST,
    KIND_NUMBER_LIST,
    NUM_COLOURS,
    NUM_KINDS,
    NUM_NUMBERS,
    NUM_POSITIONS,
    kind_of,
    tile_name,
)

#: tiles as text (``"R3 R4 *"``) or as a sequence of tile kinds
TileSpec = str | Iterable[int]

COLOUR_LETTERS = "KRBY"
JOKER_SYMBOLS = ("*", "★")
LEFTOVER_PLACES = ("stock", "pile")

_TOKEN = re.compile(r"^([KRBY])(\d{1,2})$")


# --------------------------------------------------------------------------- tile notation


def tile(text: str) -> int:
    """The kind of one tile: ``tile("R5")``, ``tile("B12")``, ``tile("*")``."""
    token = text.strip()
    if token in JOKER_SYMBOLS:
        return JOKER
    match = _TOKEN.match(token.upper())
    if match is None:
        raise ValueError(
            f"bad tile {text!r}: expected a colour letter K (black), R (red), B (blue) or Y (yellow) "
            f"followed by a number 1..13 (like 'R5' or 'B12'), or '*' for the joker"
        )
    number = int(match.group(2))
    if not 1 <= number <= NUM_NUMBERS:
        raise ValueError(f"bad tile {text!r}: the number must be 1..13, got {number}")
    return kind_of(COLOUR_LETTERS.index(match.group(1)), number)


def tiles(spec: TileSpec) -> list[int]:
    """Tile kinds in the given order: ``tiles("R3 R4, *") == [15, 16, 52]``.
    A sequence of ints is checked and returned as a list."""
    if isinstance(spec, str):
        return [tile(token) for token in re.split(r"[\s,]+", spec.strip()) if token]
    return [tile_kind(k) for k in spec]


def tile_kind(value: str | int, what: str = "tile kind") -> int:
    """One tile given as text (``"R5"``) or as a kind (an integer 0..52), checked: a float,
    a bool or a kind out of range is refused by ``what``, not truncated or wrapped."""
    if isinstance(value, str):
        return tile(value)
    if not is_integer(value) or not 0 <= int(value) < NUM_KINDS:
        raise ValueError(f"bad {what} {value!r}: expected a tile like 'R5' or a kind 0..{NUM_KINDS - 1}")
    return int(value)


def counts(spec: TileSpec) -> np.ndarray:
    """Count of each of the 53 tile kinds (int8, the engine's hand layout)."""
    return np.bincount(np.asarray(tiles(spec), dtype=np.int64), minlength=NUM_KINDS).astype(np.int8)


def tile_text(kind: int) -> str:
    """One tile in this module's notation: ``"R5"``, ``"*"``."""
    if kind == JOKER:
        return "*"
    return f"{COLOUR_LETTERS[KIND_COLOUR_LIST[kind]]}{KIND_NUMBER_LIST[kind]}"


def tiles_text(spec: TileSpec | np.ndarray) -> str:
    """Tiles in canonical order (by kind: black, red, blue, yellow, each by
    number, then jokers); a length-53 array is read as counts."""
    if isinstance(spec, np.ndarray) and spec.shape == (NUM_KINDS,):
        kinds = np.repeat(np.arange(NUM_KINDS), spec.astype(np.int64)).tolist()
    else:
        kinds = sorted(tiles(spec))  # type: ignore[arg-type]
    return " ".join(tile_text(k) for k in kinds)


def canonical(spec: TileSpec) -> str:
    """``canonical("R3 K7 *") == "K7 R3 *"``: compare a hand with :func:`hand_of`."""
    return tiles_text(spec)


def hand_of(state: GameState, player: int) -> str:
    """A player's hand in canonical notation (``""`` when empty)."""
    return tiles_text(state.hands[player])


# --------------------------------------------------------------------------- melds


def _colour(colour: int | str) -> int:
    if isinstance(colour, (int, np.integer)) and not isinstance(colour, bool):
        if 0 <= colour < NUM_COLOURS:
            return int(colour)
    elif isinstance(colour, str):
        name = colour.strip().lower()
        if name in COLOUR_NAMES:
            return COLOUR_NAMES.index(name)
        if len(name) == 1 and name.upper() in COLOUR_LETTERS:
            return COLOUR_LETTERS.index(name.upper())
    raise ValueError(f"bad colour {colour!r}: expected one of {list(COLOUR_NAMES)}, a letter K/R/B/Y or 0..3")


def _wild(wild: str | int) -> int:
    kind = tile(wild) if isinstance(wild, str) else int(wild)
    if not 0 <= kind < NUM_KINDS or not IS_WILD[kind]:
        raise ValueError(f"{wild!r} is not a wild: wilds are the joker '*' and the 2s (K2, R2, B2, Y2) (B2)")
    return kind


def run(colour: int | str, lo: int, hi: int, wild: str | int | None = None, at: int | None = None) -> Meld:
    """A run (B6) of ``colour`` over positions ``lo..hi`` (1..14; 14 is the
    high 1). ``wild`` (``"*"``, ``"K2"``, ...) stands on position ``at``;
    a 2 of the run's colour on position 2 is stored as natural (B9, B11).

    ``run("red", 12, 14)`` is red 12-13-1; ``run("K", 3, 5, wild="*", at=4)``
    is black 3-★-5. Validity under a rules object is checked by
    :func:`build_state`.
    """
    c = _colour(colour)
    if not 1 <= lo <= hi <= NUM_POSITIONS:
        raise ValueError(f"bad run positions {lo}..{hi}: need 1 <= lo <= hi <= {NUM_POSITIONS}")
    if wild is None:
        if at is not None:
            raise ValueError("run: 'at' given without a wild")
        return make_run(c, lo, hi)
    if at is None or not lo <= at <= hi:
        raise ValueError(f"run: the wild needs a position 'at' within {lo}..{hi}, got {at!r}")
    return make_run(c, lo, hi, _wild(wild), at)


def pierna(number: int, colours: str | Sequence[int | str], wild: str | int | None = None) -> Meld:
    """A set (B7) of ``number`` with one natural per colour letter listed
    (repeats allowed: ``pierna(9, "R R K")``) and at most one ``wild``."""
    if not 1 <= number <= NUM_NUMBERS:
        raise ValueError(f"bad set number {number}: expected 1..13")
    letters = [x for x in re.split(r"[\s,]+", colours.strip()) if x] if isinstance(colours, str) else list(colours)
    if (
        isinstance(colours, str)
        and len(letters) == 1
        and len(letters[0]) > 1
        and letters[0].lower() not in COLOUR_NAMES
    ):
        letters = list(letters[0])  # "RRK"
    per_colour = [0] * NUM_COLOURS
    for letter in letters:
        per_colour[_colour(letter)] += 1
    wild_kind = -1 if wild is None else _wild(wild)
    return make_set(number, tuple(per_colour), wild_kind)  # type: ignore[arg-type]


# --------------------------------------------------------------------------- the state


def build_state(
    num_players: int = 2,
    rules: Rules | str | Path | Mapping[str, Any] = "burako",
    *,
    overrides: Mapping[str, Any] | None = None,
    hands: Mapping[int, TileSpec] | None = None,
    melds: Mapping[int, Sequence[Meld]] | None = None,
    pile: TileSpec = "",
    stock: TileSpec | None = None,
    leftover: str = "stock",
    muertos: Mapping[int, TileSpec] | None = None,
    muerto_taken: Mapping[int, bool] | None = None,
    muerto_unplayed: Mapping[int, bool] | None = None,
    known: Mapping[int, TileSpec] | None = None,
    current: int = 0,
    phase: Phase = Phase.PLAY,
    mano: int = 0,
    turn: int = 0,
    privilege_tile: str | int | None = None,
    pile_top_required: str | int | None = None,
    match_scores: Sequence[int] | None = None,
    hand_number: int = 0,
) -> GameState:
    """A consistent :class:`GameState` from a readable description.

    Args:
        num_players: seats; with 4, seats 0 and 2 are side 0 (B3).
        rules: a preset name, YAML path, mapping or :class:`Rules`;
            ``overrides`` are applied on top (V5).
        hands: tiles per *player*; players not named hold nothing.
        melds: melds per *side*, in slot order; each is checked with
            :func:`melds.is_valid_meld` under ``rules``.
        pile: the discard pile, bottom to top (the last tile is the top).
        stock: the tiles the stock gives next, in draw order; the leftover
            tiles follow them (``leftover="stock"``), or with
            ``leftover="pile"`` the stock is exactly these tiles (``None``:
            empty) and the leftovers go under the pile.
        muertos: tiles of the untaken muerto per *side*; default
            ``rules.muerto_size`` leftover tiles each.
        muerto_taken: per *side*; a taken muerto is empty.
        muerto_unplayed: per *player*: he took his muerto by discarding and
            has not played since (B21).
        known: per *player*, tiles the others saw him take with the pile
            (must be in his hand).
        current, phase, mano, turn, hand_number, match_scores: as in the engine.
            ``Phase.CHOOSE_END`` cannot be built (it needs a pending addition:
            reach it with ``state.apply``).
        privilege_tile: in ``Phase.PRIVILEGE`` (B17), the tile the mano just
            drew; it must be in his hand.
        pile_top_required: V3, the taken pile's top tile still to be melded.

    Raises:
        ValueError: a bad or inconsistent description; too many copies of a
            tile name that tile.
    """
    resolved = load_rules(rules, overrides)
    state = GameState(resolved, num_players)
    num_sides = state.num_sides
    hands = dict(hands or {})
    melds = dict(melds or {})
    muertos = dict(muertos or {})
    taken = dict(muerto_taken or {})
    unplayed = dict(muerto_unplayed or {})
    known = dict(known or {})

    def check_keys(name: str, mapping: Mapping[int, Any], limit: int, what: str) -> None:
        for key in mapping:
            if not is_integer(key) or not 0 <= key < limit:
                raise ValueError(f"{name}: key {key!r} is not a {what} (0..{limit - 1})")

    check_keys("hands", hands, num_players, "player")
    check_keys("known", known, num_players, "player")
    check_keys("muerto_unplayed", unplayed, num_players, "player")
    check_keys("melds", melds, num_sides, "side")
    check_keys("muertos", muertos, num_sides, "side")
    check_keys("muerto_taken", taken, num_sides, "side")
    current, mano = check_seat(current, num_players, "current"), check_seat(mano, num_players, "mano")
    if not is_integer(turn) or not 0 <= turn < resolved.max_turns:
        raise ValueError(
            f"turn must be a whole number in 0..{resolved.max_turns - 1} (max_turns ends the hand), got {turn!r}"
        )
    if not is_integer(hand_number) or hand_number < 0:
        raise ValueError(f"hand_number must be a whole number >= 0, got {hand_number!r}")
    if leftover not in LEFTOVER_PLACES:
        raise ValueError(f"leftover={leftover!r}: expected one of {list(LEFTOVER_PLACES)}")
    phase = Phase(phase)
    if phase == Phase.CHOOSE_END:
        raise ValueError("phase CHOOSE_END needs a pending addition: build the PLAY state and apply the addition")
    if phase == Phase.HAND_OVER:
        raise ValueError("phase HAND_OVER is a finished hand (its result and scores): build a live state and play it")
    if phase == Phase.PRIVILEGE and (not resolved.mano_privilege or turn != 0):
        raise ValueError(
            "phase PRIVILEGE is the mano's first draw (B17): it needs the rule mano_privilege and turn 0, "
            f"got mano_privilege={resolved.mano_privilege}, turn={turn}"
        )
    if match_scores is not None:
        if len(match_scores) != num_sides:
            raise ValueError(f"match_scores: expected {num_sides} values (one per side), got {len(match_scores)}")
        if not all(is_integer(v) for v in match_scores):
            raise ValueError(f"match_scores: expected whole numbers, got {list(match_scores)!r}")

    # -- what the caller placed, and whether the tile set holds it
    hand_kinds = {p: tiles(hands.get(p, "")) for p in range(num_players)}
    side_melds: list[list[Meld]] = [list(melds.get(s, [])) for s in range(num_sides)]
    pile_kinds = tiles(pile)
    stock_kinds = tiles(stock) if stock is not None else []
    taken_list = [bool(taken.get(s, False)) for s in range(num_sides)]
    muerto_kinds: dict[int, list[int]] = {}
    for s, spec in muertos.items():
        if taken_list[s]:
            raise ValueError(f"muertos: side {s} has taken its muerto (muerto_taken), so it has no muerto tiles")
        muerto_kinds[s] = tiles(spec)
        if len(muerto_kinds[s]) < 2:  # as muerto_size (rules.py): one tile would make a play's legality hidden (E2)
            raise ValueError(
                f"muertos: side {s}'s muerto holds {len(muerto_kinds[s])} tile(s); an untaken muerto holds at "
                "least 2 (with one, whether melding the whole hand may take it would depend on that hidden tile)"
            )
    for s, side in enumerate(side_melds):
        if len(side) > MAX_MELD_SLOTS:
            raise ValueError(f"melds: side {s} has {len(side)} melds, more than the {MAX_MELD_SLOTS} slots")
        for meld in side:
            if not isinstance(meld, Meld):
                raise ValueError(f"melds: side {s}: {meld!r} is not a Meld (use run() or pierna())")
            if not is_valid_meld(meld, resolved):
                raise ValueError(
                    f"melds: side {s}: {describe_meld(meld)} is not a valid meld under rules {resolved.name!r}"
                )

    used = np.zeros(NUM_KINDS, dtype=np.int64)
    places: list[tuple[str, list[int]]] = [(f"hand of player {p}", k) for p, k in hand_kinds.items()]
    places += [(f"melds of side {s}", [k for m in side for k in meld_kinds(m)]) for s, side in enumerate(side_melds)]
    places += [("pile", pile_kinds), ("stock", stock_kinds)]
    places += [(f"muerto of side {s}", k) for s, k in muerto_kinds.items()]
    for _, kinds in places:
        np.add.at(used, np.asarray(kinds, dtype=np.intp), 1)
    full = resolved.full_counts()
    for kind in np.flatnonzero(used > full).tolist():
        where = ", ".join(f"{name} {kinds.count(kind)}" for name, kinds in places if kind in kinds)
        raise ValueError(
            f"too many copies of {tile_name(kind)} ({tile_text(kind)}): {int(used[kind])} asked for "
            f"({where}), the tile set under rules {resolved.name!r} has {int(full[kind])}"
        )

    # -- the leftovers: untaken muertos first, then the stock or the pile
    pool = np.repeat(np.arange(NUM_KINDS), full - used).tolist()
    for s in range(num_sides):
        if taken_list[s] or s in muerto_kinds:
            continue
        size = resolved.muerto_size
        if len(pool) < size:
            raise ValueError(
                f"muertos: only {len(pool)} tiles are left for the muerto of side {s}, which needs {size}; "
                f"place fewer tiles or give muertos explicitly"
            )
        muerto_kinds[s], pool = pool[:size], pool[size:]
    if leftover == "stock":
        stock_kinds = stock_kinds + pool
    else:
        pile_kinds = pool + pile_kinds

    # -- fill the engine state
    for p, kinds in hand_kinds.items():
        np.add.at(state.hands[p], np.asarray(kinds, dtype=np.intp), 1)
    state.hand_size = [int(n) for n in state.hands.sum(axis=1)]
    state.stock = list(reversed(stock_kinds))  # the engine draws from the end
    state.pile = list(pile_kinds)
    state.pile_counts = counts(pile_kinds)
    state.muertos = [[] if taken_list[s] else list(muerto_kinds[s]) for s in range(num_sides)]
    state.muerto_taken = taken_list
    state.muerto_unplayed = [bool(unplayed.get(p, False)) for p in range(num_players)]
    for p, flag in enumerate(state.muerto_unplayed):
        if flag and not taken_list[state.side_of[p]]:
            raise ValueError(f"muerto_unplayed: player {p}'s side has not taken its muerto")
    state.melds = side_melds
    state.meld_enc[:] = 0
    state.close_ready = [False] * num_sides
    for s, side in enumerate(side_melds):
        for slot, meld in enumerate(side):
            state._meld_changed(s, slot, meld)  # the slot's encoding and the side's close_ready
    for p, spec in known.items():
        k = counts(spec)
        if np.any(k > state.hands[p]):
            raise ValueError(f"known: player {p} does not hold {tiles_text(spec)!r} (hand {hand_of(state, p)!r})")
        state.known[p] = k

    state.phase = phase
    state.current = current
    state.mano = mano
    state.turn = turn
    state.hand_number = hand_number
    state.match_scores = [int(v) for v in match_scores] if match_scores is not None else [0] * num_sides
    state.pending = None
    state.privilege_tile = -1
    if phase == Phase.PRIVILEGE:
        if current != mano:
            raise ValueError(f"phase PRIVILEGE is the mano's first draw (B17): current={current} but mano={mano}")
        if privilege_tile is None:
            raise ValueError("phase PRIVILEGE needs privilege_tile, the tile the mano just drew (in his hand)")
        kind = tile_kind(privilege_tile, "privilege_tile")
        if state.hands[current, kind] <= 0:
            raise ValueError(f"privilege_tile {tile_text(kind)} is not in the hand of player {current}")
        if not state.stock:
            raise ValueError("phase PRIVILEGE needs a stock tile to draw after a reject (B17)")
        state.privilege_tile = kind
    elif privilege_tile is not None:
        raise ValueError(f"privilege_tile is only meaningful in phase PRIVILEGE, not {phase.name}")
    if phase == Phase.DRAW and not state.stock:
        raise ValueError("phase DRAW with an empty stock cannot happen: the hand ends before that draw (B24)")
    if phase == Phase.PLAY and state.hand_size[current] == 0:
        raise ValueError(f"phase PLAY with an empty hand for player {current} cannot happen (B20-B23)")
    for p in range(num_players):
        if state.hand_size[p] == 0 and state.muerto_taken[state.side_of[p]]:
            raise ValueError(
                f"player {p} has an empty hand and his side has taken its muerto: he closed, the hand is over (B22)"
            )
    state.pile_top_required = -1
    if pile_top_required is not None:
        kind = tile_kind(pile_top_required, "pile_top_required")
        if not resolved.pile_top_must_be_melded or phase != Phase.PLAY:
            raise ValueError(
                "pile_top_required is the taken pile's top tile still to meld: it needs the rule "
                f"pile_top_must_be_melded and phase PLAY, got {resolved.pile_top_must_be_melded} and {phase.name}"
            )
        if state.hands[current, kind] <= 0:
            raise ValueError(f"pile_top_required {tile_text(kind)} is not in the hand of player {current}")
        state.pile_top_required = kind
    state.end_reason = None
    state.closer = -1
    state.hand_scores = None
    state.match_winner = -1
    state._mask = None
    state.check_conservation()
    if state.pile_top_required >= 0 and not state.legal_actions():
        state._mask = None
        raise ValueError(
            f"pile_top_required {tile_text(state.pile_top_required)} cannot be melded from this position: "
            f"player {current} would have no legal action (the pile is taken only when its top can be melded)"
        )
    return state
