"""A slow, independent legality and scoring oracle, written straight from docs/rules.md.

It shares with the engine only the *naming* of things: the action layout
(``burako_env.actions``: offsets and encoders), the list ``melds.PATTERNS``
read as "what meld action p means", the ``Meld`` value type of the state's
melds, and the raw fields of a ``GameState``. Every decision (is this meld
valid, where can this tile go, may the hand be emptied, what is a hand worth)
is made again here from the rules text, with none of the engine's legality
code (no ``legal_mask``, ``add_outcomes``, ``is_valid_meld``, pattern
matrices, ``score_sides`` ...).

A meld is represented explicitly as a list of ``(tile kind, run position)``
pairs; the position is ``None`` for a set. Whether a tile is wild is decided
from its place, as B9 says: a 2 of the run's own colour on position 2 is
natural, every other 2 and every joker is wild.

Rule ids: B6 runs, B7 sets, B8 one wild / two naturals, B9 natural 2s,
B10-B12 wild moves, B13 own melds only, B14 canastas, B16-B18 the turn,
B19-B23 muerto and closing, B24 empty stock, B25-B27 scoring; E3 "the player
to act is never stuck" (a hand of one tile that can neither be discarded nor
melded must not be reachable).

V3 (``pile_top_must_be_melded``, [decision]): the pile may be taken, and a
play made while its top tile is unmelded, only if some sequence of legal plays
within the turn (new melds, additions, B10/B11 moves) then melds that tile and
leaves an allowed situation; no discard until it is melded. See
:func:`v3_meldable` for how the whole turn is searched.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any

import numpy as np

from burako_env import actions as A
from burako_env.melds import PATTERNS, Meld

# --------------------------------------------------------------------------- tiles (B1, B2)

JOKER = 52
NUM_KINDS = 53
NUM_COLOURS = 4
HIGH_ONE = 14  # run position of the 1 above the 13 (B6)
MAX_WILDS = 1  # B8
MIN_NATURALS = 2  # B8
CANASTA = 7  # B14

Tile = tuple[int, Any]  # (kind, run position 1..14, or None in a set)
Canon = tuple[bool, tuple[tuple[int, int], ...]]


def colour_of(kind: int) -> int:
    return kind // 13


def number_of(kind: int) -> int:
    return kind % 13 + 1


def natural_kind(colour: int, position: int) -> int:
    """The tile whose natural place is ``position`` in a run of ``colour`` (B6)."""
    number = 1 if position == HIGH_ONE else position
    return colour * 13 + number - 1


def copies(kind: int, rules: Any) -> int:
    """How many tiles of a kind exist (B1; V2: no jokers with cards)."""
    if kind == JOKER:
        return 0 if rules.tile_set == "cards" else 2
    return 2


# --------------------------------------------------------------------------- melds (B6-B9)


def is_run(tiles: list[Tile]) -> bool:
    return tiles[0][1] is not None


def run_colour(tiles: list[Tile]) -> int:
    """The colour of a run: that of its naturals that are not 2s (a valid run
    has at least one: two naturals, and only position 2 holds a natural 2)."""
    colours = {colour_of(k) for k, _ in tiles if k != JOKER and number_of(k) != 2}
    if len(colours) != 1:
        return -1
    return colours.pop()


def wild_in_run(kind: int, colour: int, position: int) -> bool:
    """B2, B9: jokers are wild; a 2 is natural only as the 2 of the run's colour on position 2."""
    if kind == JOKER:
        return True
    if number_of(kind) == 2:
        return not (colour_of(kind) == colour and position == 2)
    return False


def wild_in_set(kind: int) -> bool:
    """B2: jokers and every 2 are wild in a set (and sets of 2s do not exist, B7)."""
    return kind == JOKER or number_of(kind) == 2


def count_wilds(tiles: list[Tile]) -> int:
    if is_run(tiles):
        colour = run_colour(tiles)
        return sum(wild_in_run(k, colour, p) for k, p in tiles)
    return sum(wild_in_set(k) for k, _ in tiles)


def valid_meld(tiles: list[Tile], rules: Any) -> bool:
    """Whether an explicit meld is legal under ``rules`` (B6-B9, table rules)."""
    if len(tiles) < 3:
        return False
    counts = Counter(k for k, _ in tiles)
    if any(not 0 <= k < NUM_KINDS or n > copies(k, rules) for k, n in counts.items()):
        return False
    positions = [p for _, p in tiles]
    if all(p is None for p in positions):
        return _valid_set(tiles, rules)
    if any(p is None for p in positions):
        return False
    return _valid_run(tiles)


def _valid_run(tiles: list[Tile]) -> bool:
    positions = sorted(p for _, p in tiles)
    lo = positions[0]
    if lo < 1 or positions[-1] > HIGH_ONE:  # B6: positions 1..14, no wrap
        return False
    if positions != list(range(lo, lo + len(positions))):  # consecutive, one tile each
        return False
    colour = run_colour(tiles)
    if colour < 0:
        return False
    wilds = naturals = 0
    for kind, pos in tiles:
        if wild_in_run(kind, colour, pos):
            wilds += 1
        elif kind != natural_kind(colour, pos):
            return False
        else:
            naturals += 1
    return wilds <= MAX_WILDS and naturals >= MIN_NATURALS


def _valid_set(tiles: list[Tile], rules: Any) -> bool:
    if not rules.sets_allowed:
        return False
    naturals = [k for k, _ in tiles if not wild_in_set(k)]
    wilds = len(tiles) - len(naturals)
    if wilds > MAX_WILDS or len(naturals) < MIN_NATURALS:
        return False
    if len({number_of(k) for k in naturals}) != 1:  # one number (never 2: 2s are wild)
        return False
    # distinct colours: one tile per colour, a wild standing for a missing one, so at most 4 tiles
    distinct = len({colour_of(k) for k in naturals}) == len(naturals) and len(tiles) <= 4
    return not (rules.set_colours_distinct and not distinct)


def is_clean(tiles: list[Tile]) -> bool:
    return count_wilds(tiles) == 0


def qualifies_to_close(tiles: list[Tile], rules: Any) -> bool:
    """The canasta a side needs to close (B22; ``close_requires_clean_canasta``)."""
    return len(tiles) >= CANASTA and (is_clean(tiles) or not rules.close_requires_clean_canasta)


def canon(tiles: Iterable[Tile]) -> Canon:
    """A hashable form of an explicit meld (a meld is its tiles and their places)."""
    tiles = list(tiles)
    run = is_run(tiles)
    return run, tuple(sorted((p if run else 0, k) for k, p in tiles))


def uncanon(c: Canon) -> list[Tile]:
    run, items = c
    return [(k, p if run else None) for p, k in items]


def tiles_of(meld: Meld) -> list[Tile]:
    """The explicit tiles of an engine ``Meld`` value (its documented fields)."""
    if meld.is_run:
        out = []
        for pos in range(meld.lo, meld.hi + 1):
            if meld.wild_kind >= 0 and pos == meld.wild_pos:
                out.append((meld.wild_kind, pos))
            else:
                out.append((natural_kind(meld.colour, pos), pos))
        return out
    out = []
    for colour in range(NUM_COLOURS):
        out.extend([(colour * 13 + meld.number - 1, None)] * meld.set_colours[colour])
    if meld.wild_kind >= 0:
        out.append((meld.wild_kind, None))
    return out


_TILES_CACHE: dict[Meld, Canon] = {}


def canon_of(meld: Meld) -> Canon:
    found = _TILES_CACHE.get(meld)
    if found is None:
        found = canon(tiles_of(meld))
        _TILES_CACHE[meld] = found
    return found


def rules_key(rules: Any) -> tuple:
    return (rules.tile_set, rules.sets_allowed, rules.set_colours_distinct, rules.close_requires_clean_canasta)


# --------------------------------------------------------------------------- adding one tile (B6-B12)

_PLACE_CACHE: dict[tuple, frozenset] = {}


def placements(meld: Canon, kind: int, rules: Any) -> frozenset:
    """Every valid meld reached by adding one tile of ``kind`` to ``meld``.

    Runs: the tile goes one past either end; or (B10) it is the natural of the
    position a wild stands for, takes that position, and the wild moves one
    past the low or the high end (within 1..14). A moved 2 that lands on
    position 2 of its own colour is then natural (B11): ``valid_meld`` decides
    wildness from the place. Sets: the tile joins the set. A result counts
    only if it is a valid meld. Wilds never leave a meld (B12).
    """
    key = (meld, kind, rules_key(rules))
    found = _PLACE_CACHE.get(key)
    if found is not None:
        return found
    tiles = uncanon(meld)
    candidates: list[list[Tile]] = []
    if is_run(tiles):
        lo = min(p for _, p in tiles)
        hi = max(p for _, p in tiles)
        ends = [q for q in (lo - 1, hi + 1) if 1 <= q <= HIGH_ONE]
        for q in ends:
            candidates.append([*tiles, (kind, q)])
        colour = run_colour(tiles)
        for i, (wk, wp) in enumerate(tiles):
            if not wild_in_run(wk, colour, wp):
                continue
            if kind == JOKER or kind != natural_kind(colour, wp):
                continue  # B10: only the natural tile of that position
            replaced = [*tiles[:i], (kind, wp), *tiles[i + 1 :]]
            for q in ends:
                candidates.append([*replaced, (wk, q)])
    else:
        candidates.append([*tiles, (kind, None)])
    found = frozenset(canon(t) for t in candidates if valid_meld(t, rules))
    _PLACE_CACHE[key] = found
    return found


# --------------------------------------------------------------------------- after an action (B20-B23, E3)


def after_ok(
    state: Any,
    player: int,
    hand: Counter,
    side_melds: list[Canon],
    by_discard: bool,
) -> bool:
    """Whether the situation after a PLAY action is allowed.

    ``hand``: the player's tiles after it; ``side_melds``: his side's melds
    after it. B22/B23: with the muerto taken, the hand may be emptied only by
    a side with a (qualifying) canasta. E3: after a meld or an addition (the
    turn goes on), a player left with one tile, muerto taken and no
    qualifying canasta could neither discard it (B23) nor meld it unless it
    makes such a canasta, so that is allowed only if it can.
    """
    rules = state.rules
    side = state.side_of[player]
    if not state.muerto_taken[side]:
        return True  # emptying the hand takes the muerto (B20/B21)
    left = sum(hand.values())
    ready = any(qualifies_to_close(uncanon(m), rules) for m in side_melds)
    if left == 0:
        return ready  # B22 / B23
    if left == 1 and not by_discard and not ready:
        (last,) = [k for k, n in hand.items() if n > 0]
        return any(qualifies_to_close(uncanon(o), rules) for m in side_melds for o in placements(m, last, rules))
    return True


def hand_counter(state: Any, player: int) -> Counter:
    row = state.hands[player]
    return Counter({k: int(row[k]) for k in range(NUM_KINDS) if row[k] > 0})


_PATTERN_TILES: list[list[Tile]] = [tiles_of(m) for m in PATTERNS]
_PATTERN_NEEDS: list[Counter] = [Counter(k for k, _ in t) for t in _PATTERN_TILES]
_PATTERN_CANON: list[Canon] = [canon(t) for t in _PATTERN_TILES]
_PATTERN_VALID: dict[tuple, list[bool]] = {}


def pattern_valid(rules: Any) -> list[bool]:
    key = rules_key(rules)
    if key not in _PATTERN_VALID:
        _PATTERN_VALID[key] = [valid_meld(t, rules) for t in _PATTERN_TILES]
    return _PATTERN_VALID[key]


def v3_meldable(state: Any, player: int, hand: Counter, side_melds: list[Canon], required: int) -> bool:
    """V3 [decision]: some sequence of legal plays within this turn melds the
    taken pile's top tile ``required`` and leaves an allowed situation
    (B22/B23/E3 via :func:`after_ok`).

    The tile ends in one meld: one of ``side_melds`` or a new one. A play that
    does not build that meld uses other tiles and another meld, so it can be
    made after the tile is melded instead of before (the hand holds the tile
    until then, so no play before it can empty the hand, and the melds and
    the hand at the end are the same). So the search covers, for each meld
    that could hold the tile (each of ``side_melds``, and each valid 3-tile
    meld from the hand, with or without the tile), every sequence of
    additions to that meld alone, each reachable meld once.
    """
    rules = state.rules
    valid = pattern_valid(rules)
    seen: set[tuple[int, Canon]] = set()
    starts: list[tuple[int, list[Canon], Counter]] = [(slot, side_melds, hand) for slot in range(len(side_melds))]
    for index, needs in enumerate(_PATTERN_NEEDS):
        if not valid[index] or any(hand[k] < n for k, n in needs.items()):
            continue
        after = hand - needs
        melds = [*side_melds, _PATTERN_CANON[index]]
        if needs[required] > 0:
            if after_ok(state, player, after, melds, by_discard=False):
                return True
        else:
            starts.append((len(side_melds), melds, after))

    def grows_to_hold(slot: int, melds: list[Canon], left: Counter) -> bool:
        for kind in [k for k, n in left.items() if n > 0]:
            after = left.copy()
            after[kind] -= 1
            for outcome in placements(melds[slot], kind, rules):
                new_melds = [*melds]
                new_melds[slot] = outcome
                if kind == required:
                    if after_ok(state, player, after, new_melds, by_discard=False):
                        return True
                elif (slot, outcome) not in seen:
                    seen.add((slot, outcome))
                    if grows_to_hold(slot, new_melds, after):
                        return True
        return False

    return any(grows_to_hold(slot, melds, left) for slot, melds, left in starts)


def play_ok(state: Any, player: int, used: int, after: Counter, new_melds: list[Canon]) -> bool:
    """A meld or addition that used one tile kind ``used`` (-1: several, see
    the caller) is allowed: V3 first (a pending top tile that this action
    does not meld must stay meldable within the turn), else B22/B23/E3."""
    required = state.pile_top_required
    if required >= 0 and used != required:
        return v3_meldable(state, player, after, new_melds, required)
    return after_ok(state, player, after, new_melds, by_discard=False)


def allowed_add_outcomes(state: Any, slot: int, kind: int, constrained: bool = True) -> set[Canon]:
    """The melds that adding ``kind`` from the current player's hand to his
    side's meld ``slot`` may legally produce (PLAY or CHOOSE_END)."""
    p = state.current
    side = state.side_of[p]
    melds = [canon_of(m) for m in state.melds[side]]
    hand = hand_counter(state, p)
    if not 0 <= slot < len(melds) or hand[kind] <= 0:
        return set()
    out = set()
    after_hand = hand.copy()
    after_hand[kind] -= 1
    for outcome in placements(melds[slot], kind, state.rules):
        new_melds = [*melds]
        new_melds[slot] = outcome
        if not constrained or play_ok(state, p, kind, after_hand, new_melds):
            out.add(outcome)
    return out


# --------------------------------------------------------------------------- the oracle


def oracle_legal_actions(state: Any, constrained: bool = True) -> set[int]:
    """The set of legal action ids in ``state``, from docs/rules.md (B15-B24, E3).

    ``constrained=False`` skips the B22/B23/E3 look-ahead (for measuring how
    often it matters); the real answer is ``constrained=True``.
    """
    from burako_env.engine import Phase  # the phase names only

    rules = state.rules
    phase = state.phase
    legal: set[int] = set()
    if phase == Phase.DRAW:
        if state.stock:  # B24: an empty stock ends the hand before the draw
            legal.add(A.DRAW_STOCK)
            if state.pile:  # B16
                p = state.current
                if not rules.pile_top_must_be_melded:
                    legal.add(A.TAKE_PILE)
                else:  # V3: only if the top tile can then be melded
                    hand = hand_counter(state, p) + Counter(state.pile)
                    melds = [canon_of(m) for m in state.melds[state.side_of[p]]]
                    if v3_meldable(state, p, hand, melds, state.pile[-1]):
                        legal.add(A.TAKE_PILE)
        return legal
    if phase == Phase.PRIVILEGE:  # B17
        legal.add(A.KEEP)
        if state.stock:
            legal.add(A.REJECT)
        return legal
    if phase == Phase.CHOOSE_END:
        slot, kind, outcomes = state.pending
        allowed = allowed_add_outcomes(state, slot, kind, constrained)
        for i, meld in enumerate(outcomes[: A.NUM_CHOICES]):
            if canon_of(meld) in allowed:
                legal.add(A.CHOOSE_BASE + i)
        return legal
    if phase != Phase.PLAY:
        return legal
    p = state.current
    side = state.side_of[p]
    hand = hand_counter(state, p)
    melds = [canon_of(m) for m in state.melds[side]]
    # discard (B18): any held tile; emptying the hand is checked (B21-B23)
    for kind in hand:
        if state.pile_top_required >= 0:
            break  # V3: no discard before the top tile is melded
        after = hand.copy()
        after[kind] -= 1
        if not constrained or after_ok(state, p, after, melds, by_discard=True):
            legal.add(A.discard_action(kind))
    # new 3-tile melds (B6-B9), from the hand only
    valid = pattern_valid(rules)
    for index, needs in enumerate(_PATTERN_NEEDS):
        if not valid[index] or any(hand[k] < n for k, n in needs.items()):
            continue
        after = hand - needs
        used = state.pile_top_required if needs[state.pile_top_required] > 0 else -2
        if not constrained or play_ok(state, p, used, after, [*melds, _PATTERN_CANON[index]]):
            legal.add(A.meld_action(index))
    # additions to the own side's melds only (B13)
    for slot in range(len(melds)):
        for kind in hand:
            if allowed_add_outcomes(state, slot, kind, constrained):
                legal.add(A.add_action(slot, kind))
    return legal


# --------------------------------------------------------------------------- every 3-tile meld


def all_three_tile_melds(rules: Any) -> set[Canon]:
    """Every valid 3-tile meld, enumerated from B6-B9 by brute force."""
    out: set[Canon] = set()
    wild_kinds = [JOKER, *(c * 13 + 1 for c in range(NUM_COLOURS))]
    for colour in range(NUM_COLOURS):
        for lo in range(1, HIGH_ONE - 1):
            options = [[natural_kind(colour, p), *wild_kinds] for p in range(lo, lo + 3)]
            for a in options[0]:
                for b in options[1]:
                    for c in options[2]:
                        tiles = [(a, lo), (b, lo + 1), (c, lo + 2)]
                        if valid_meld(tiles, rules):
                            out.add(canon(tiles))
    for number in range(1, 14):
        kinds = [c * 13 + number - 1 for c in range(NUM_COLOURS)] + wild_kinds
        for i, a in enumerate(kinds):
            for j in range(i, len(kinds)):
                for k in range(j, len(kinds)):
                    tiles = [(a, None), (kinds[j], None), (kinds[k], None)]
                    if valid_meld(tiles, rules):
                        out.add(canon(tiles))
    return out


# --------------------------------------------------------------------------- scoring (B25-B27)


def tile_value(kind: int, rules: Any) -> int:
    """B25 (values from the rules object's table, default 50/20/15/10/5)."""
    values = rules.tile_values
    if kind == JOKER:
        return values["joker"]
    number = number_of(kind)
    if number == 2:
        return values["two"]
    if number == 1:
        return values["ace"]
    return values["high"] if number >= 8 else values["low"]


def canasta_bonus(tiles: list[Tile], rules: Any) -> int:
    """B14 (and V1: a special clean-run bonus replaces the clean one)."""
    if len(tiles) < CANASTA:
        return 0
    bonus = rules.canasta_bonus
    if not is_clean(tiles):
        return bonus["dirty"]
    if is_run(tiles):
        if len(tiles) == 14 and bonus["ace_to_ace"]:
            return bonus["ace_to_ace"]
        if len(tiles) == 13 and bonus["real"]:
            return bonus["real"]
    return bonus["clean"]


def oracle_score(state: Any) -> list[dict[str, int]]:
    """Per-side hand score breakdown (B25-B27), in ``SideScore.to_dict`` form."""
    rules = state.rules
    out = []
    for s in range(state.num_sides):
        melded = bonus = 0
        for meld in state.melds[s]:
            tiles = tiles_of(meld)
            melded += sum(tile_value(k, rules) for k, _ in tiles)
            bonus += canasta_bonus(tiles, rules)
        untaken = not state.muerto_taken[s]
        in_hands = 0
        for p in range(state.num_players):
            if state.side_of[p] != s:
                continue
            if state.muerto_unplayed[p] and rules.unplayed_indirect_muerto_counts_as_untaken:
                untaken = True  # Part 2 table: as if not taken, its tiles not counted
                continue
            in_hands += sum(tile_value(k, rules) * int(state.hands[p][k]) for k in range(NUM_KINDS))
        closing = rules.closing_bonus if state.closer >= 0 and state.side_of[state.closer] == s else 0
        muerto = rules.muerto_penalty if untaken else 0
        out.append(
            {
                "melded": melded,
                "canasta_bonus": bonus,
                "closing_bonus": closing,
                "hand_penalty": -in_hands,
                "muerto_penalty": -muerto,
                "total": melded + bonus + closing - in_hands - muerto,
            }
        )
    return out


def tile_locations(state: Any) -> Counter:
    """Every tile counted where it lies (E1): hands, melds, pile, stock, untaken muertos."""
    counts: Counter = Counter()
    for p in range(state.num_players):
        for k in range(NUM_KINDS):
            if state.hands[p][k]:
                counts[k] += int(state.hands[p][k])
    counts.update(state.pile)
    counts.update(state.stock)
    for muerto in state.muertos:
        counts.update(muerto)
    for side in state.melds:
        for meld in side:
            counts.update(k for _, k in canon_of(meld)[1])
    return counts


def visible_counts(state: Any, player: int) -> np.ndarray:
    """The tiles ``player`` can locate (E2's public part), per kind, from the
    raw fields: his hand, the pile, every meld and the tiles the others are
    known to hold from the pile. The full set less this is what he cannot see."""
    seen = [*state.pile, *(k for side in state.melds for meld in side for k, _ in tiles_of(meld))]
    counts = np.bincount(seen, minlength=state.hands.shape[1]) + state.hands[player]
    for q in range(state.num_players):
        if q != player:
            counts += state.known[q]
    return counts
