"""Runs and sets: validity, adding one tile, wild moves, canasta class.

A meld is an immutable :class:`Meld` value, so a state copies its meld lists
shallowly (copy-on-write) and results can be cached by meld.

Run (escalera, B6): colour ``colour``, every position ``lo..hi`` (1..14)
filled; the tile on ``wild_pos`` (0 = none) is the wild ``wild_kind`` (B10),
every other position holds its natural tile. A 2 of the run's colour standing
on position 2 is natural (B9), so such a meld is stored with no wild (B11).

Set (pierna, B7): ``number``, ``set_colours[c]`` naturals of colour ``c``,
and at most one wild ``wild_kind`` (B8).

The *patterns* are every 3-tile meld (the cores from which every longer meld
is reached by single additions, DESIGN.md 3); the action layout enumerates
them in :data:`PATTERNS` order.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import numpy as np

from burako_env.rules import Rules
from burako_env.tiles import (
    COLOUR_NAMES,
    IS_WILD,
    JOKER,
    KIND_COLOUR_LIST,
    KIND_NUMBER_LIST,
    NUM_COLOURS,
    NUM_KINDS,
    NUM_POSITIONS,
    TWO_KINDS,
    WILD_INDEX,
    WILD_KINDS,
    kind_at,
    kind_of,
    run_positions,
    short_name,
    tile_name,
)

CANASTA_LENGTH = 7  # B14


class Meld(NamedTuple):
    is_run: bool
    colour: int = -1  # run colour; -1 for a set
    number: int = 0  # set number; 0 for a run
    lo: int = 0  # run: lowest position
    hi: int = 0  # run: highest position
    wild_kind: int = -1  # -1: no wild
    wild_pos: int = 0  # run: the position the wild stands for
    set_colours: tuple[int, int, int, int] = (0, 0, 0, 0)  # set: naturals per colour

    @property
    def length(self) -> int:
        if self.is_run:
            return self.hi - self.lo + 1
        return sum(self.set_colours) + (self.wild_kind >= 0)

    @property
    def clean(self) -> bool:
        return self.wild_kind < 0

    @property
    def is_canasta(self) -> bool:
        return self.length >= CANASTA_LENGTH


def make_run(colour: int, lo: int, hi: int, wild_kind: int = -1, wild_pos: int = 0) -> Meld:
    """A run, normalised by B11 (a 2 of its colour on position 2 is natural)."""
    if wild_kind == TWO_KINDS[colour] and wild_pos == 2:
        wild_kind, wild_pos = -1, 0
    return Meld(True, colour, 0, lo, hi, wild_kind, wild_pos if wild_kind >= 0 else 0)


def make_set(number: int, set_colours: tuple[int, int, int, int], wild_kind: int = -1) -> Meld:
    return Meld(False, -1, number, 0, 0, wild_kind, 0, tuple(set_colours))  # type: ignore[arg-type]


def is_natural_addition(meld: Meld, outcome: Meld) -> bool:
    """Whether ``outcome`` (an :func:`add_outcomes` result for ``meld``)
    adds its tile as a natural: the meld keeps the wild it had (a 2 on its
    own place, B9/B11, counts as natural; a wild the natural displaces,
    B10, stays the meld's wild)."""
    return outcome.wild_kind == meld.wild_kind


@functools.cache
def meld_kinds(meld: Meld) -> tuple[int, ...]:
    """The tile kinds that make up a meld (with repeats); cached, as a meld is a value (the
    readable engine asks at every meld, scoring and tile count)."""
    kinds: list[int] = []
    if meld.is_run:
        for pos in range(meld.lo, meld.hi + 1):
            kinds.append(meld.wild_kind if pos == meld.wild_pos else kind_at(meld.colour, pos))
    else:
        for colour in range(NUM_COLOURS):
            kinds.extend([kind_of(colour, meld.number)] * meld.set_colours[colour])
        if meld.wild_kind >= 0:
            kinds.append(meld.wild_kind)
    return tuple(kinds)


def is_valid_meld(meld: Meld, rules: Rules) -> bool:
    """Whether a meld value is a legal meld under ``rules`` (B6-B9, table rules)."""
    naturals = meld.length - (meld.wild_kind >= 0)
    if meld.length < 3 or naturals < 2:
        return False
    if meld.wild_kind >= 0 and (not IS_WILD[meld.wild_kind] or (meld.wild_kind == JOKER and rules.num_jokers == 0)):
        return False
    if meld.is_run:
        if not (1 <= meld.lo <= meld.hi <= NUM_POSITIONS) or not 0 <= meld.colour < NUM_COLOURS:
            return False
        if meld.wild_kind >= 0 and not meld.lo <= meld.wild_pos <= meld.hi:
            return False
        return not (meld.wild_kind == TWO_KINDS[meld.colour] and meld.wild_pos == 2)
    if not rules.sets_allowed or meld.number == 2 or not 1 <= meld.number <= 13:
        return False
    if max(meld.set_colours) > 2 or min(meld.set_colours) < 0:
        return False
    return not (rules.set_colours_distinct and (max(meld.set_colours) > 1 or meld.length > NUM_COLOURS))


def add_outcomes(meld: Meld, kind: int, rules: Rules) -> tuple[Meld, ...]:
    """Every distinct meld that adding one tile of ``kind`` can make (B6-B11).

    At most two: a 1 that fits both ends, where a displaced wild goes (B10),
    a wild added at either end, or a 2 of the run's colour as natural or wild.
    """
    if kind == JOKER and rules.num_jokers == 0:
        return ()
    out: list[Meld] = []
    if meld.is_run:
        colour, lo, hi, wk, wp = meld.colour, meld.lo, meld.hi, meld.wild_kind, meld.wild_pos
        if KIND_COLOUR_LIST[kind] == colour:
            for pos in run_positions(kind):
                if pos == lo - 1:
                    out.append(make_run(colour, pos, hi, wk, wp))
                elif pos == hi + 1:
                    out.append(make_run(colour, lo, pos, wk, wp))
                elif wk >= 0 and pos == wp:  # B10: the natural takes the wild's place
                    if lo > 1:
                        out.append(make_run(colour, lo - 1, hi, wk, lo - 1))
                    if hi < NUM_POSITIONS:
                        out.append(make_run(colour, lo, hi + 1, wk, hi + 1))
        if IS_WILD[kind] and wk < 0:
            for pos in (lo - 1, hi + 1):
                if 1 <= pos <= NUM_POSITIONS:
                    out.append(make_run(colour, min(lo, pos), max(hi, pos), kind, pos))
    else:
        number = meld.number
        # distinct colours: a set holds at most one tile per colour, so at most 4 tiles; a wild stands
        # for a colour the set lacks (table "sets allowed" of burako_casual)
        full = rules.set_colours_distinct and meld.length >= NUM_COLOURS
        if kind != JOKER and KIND_NUMBER_LIST[kind] == number:
            colour = KIND_COLOUR_LIST[kind]
            if not (rules.set_colours_distinct and (meld.set_colours[colour] or full)):
                colours = list(meld.set_colours)
                colours[colour] += 1
                out.append(make_set(number, tuple(colours), meld.wild_kind))  # type: ignore[arg-type]
        elif IS_WILD[kind] and meld.wild_kind < 0 and not full:
            out.append(make_set(number, meld.set_colours, kind))
    # Deduplicate, keep a fixed order (lower placement first) for CHOOSE_END.
    unique = sorted(set(out), key=lambda m: (m.lo, m.wild_pos, m.hi))
    return tuple(unique)


# --------------------------------------------------------------------------- scoring


def canasta_bonus(meld: Meld, rules: Rules) -> int:
    """Bonus of a meld at the end of a hand (B14, V1: a special bonus replaces
    the clean one)."""
    length = meld.length
    if length < CANASTA_LENGTH:
        return 0
    bonus = rules.canasta_bonus
    if not meld.clean:
        return bonus["dirty"]
    if meld.is_run:
        if length == 14 and bonus["ace_to_ace"]:
            return bonus["ace_to_ace"]
        if length == 13 and bonus["real"]:
            return bonus["real"]
    return bonus["clean"]


def meld_value(meld: Meld, values: np.ndarray) -> int:
    """Sum of the tile values in a meld (B25: a tile keeps its value in any role)."""
    return int(sum(int(values[k]) for k in meld_kinds(meld)))


def qualifies_to_close(meld: Meld, rules: Rules) -> bool:
    """Whether this meld is the canasta a side needs to close (B22, table rule)."""
    return meld.is_canasta and (meld.clean or not rules.close_requires_clean_canasta)


# --------------------------------------------------------------------------- description


def describe_meld(meld: Meld, cards: bool = False) -> str:
    """``"red 3-4-5"``, ``"red 3-★-5"``, ``"set of 7 (2 red, black, ★)"``."""
    if meld.is_run:
        colour = meld.colour
        parts = []
        for pos in range(meld.lo, meld.hi + 1):
            if pos == meld.wild_pos:
                parts.append("★" if meld.wild_kind == JOKER else f"[{short_name(meld.wild_kind, cards)}]")
            else:
                label = short_name(kind_at(colour, pos), cards)
                parts.append(label if cards else label[1:])
        if cards:
            return "run " + "-".join(parts)
        return f"{COLOUR_NAMES[colour]} " + "-".join(parts)
    names = []
    for colour in range(NUM_COLOURS):
        names.extend([short_name(kind_of(colour, meld.number), cards)] * meld.set_colours[colour])
    if meld.wild_kind >= 0:
        names.append(short_name(meld.wild_kind, cards))
    label = "A" if cards and meld.number == 1 else str(meld.number)
    if cards and meld.number > 10:
        label = "JQK"[meld.number - 11]
    return f"set of {label}s ({' '.join(names)})"


def describe_tile(kind: int, cards: bool = False) -> str:
    return tile_name(kind, cards)


# --------------------------------------------------------------------------- patterns


def _enumerate_patterns() -> list[Meld]:
    patterns: list[Meld] = []
    for colour in range(NUM_COLOURS):
        for lo in range(1, NUM_POSITIONS - 1):
            patterns.append(make_run(colour, lo, lo + 2))
            for offset in range(3):
                for wild in WILD_KINDS:
                    meld = make_run(colour, lo, lo + 2, wild, lo + offset)
                    if meld.wild_kind >= 0:  # skip the natural 2-on-2 duplicates (B9)
                        patterns.append(meld)
    for number in [1, *range(3, 14)]:
        combos3 = []
        combos2 = []
        for a in range(NUM_COLOURS):
            for b in range(a, NUM_COLOURS):
                combos2.append((a, b))
                for c in range(b, NUM_COLOURS):
                    if not (a == b == c):  # only two copies of each tile
                        combos3.append((a, b, c))
        for combo in combos3:
            colours = [0] * NUM_COLOURS
            for c in combo:
                colours[c] += 1
            patterns.append(make_set(number, tuple(colours)))  # type: ignore[arg-type]
        for wild in WILD_KINDS:
            for combo in combos2:
                colours = [0] * NUM_COLOURS
                for c in combo:
                    colours[c] += 1
                patterns.append(make_set(number, tuple(colours), wild))  # type: ignore[arg-type]
    return patterns


#: every 3-tile meld, in action order
PATTERNS: tuple[Meld, ...] = tuple(_enumerate_patterns())
NUM_PATTERNS = len(PATTERNS)
PATTERN_INDEX: dict[Meld, int] = {m: i for i, m in enumerate(PATTERNS)}


def _pattern_requirements() -> tuple[np.ndarray, np.ndarray]:
    """(kinds, needs): each pattern's up-to-3 distinct kinds (padded with
    NUM_KINDS, whose count is always large) and how many of each it needs."""
    kinds = np.full((NUM_PATTERNS, 3), NUM_KINDS, dtype=np.intp)
    needs = np.zeros((NUM_PATTERNS, 3), dtype=np.int8)
    for i, meld in enumerate(PATTERNS):
        counts: dict[int, int] = {}
        for k in meld_kinds(meld):
            counts[k] = counts.get(k, 0) + 1
        for j, (k, n) in enumerate(sorted(counts.items())):
            kinds[i, j] = k
            needs[i, j] = n
    return kinds, needs


PATTERN_KINDS, PATTERN_NEEDS = _pattern_requirements()
#: kind-count matrix of each pattern, (NUM_PATTERNS, NUM_KINDS)
PATTERN_COUNTS = np.zeros((NUM_PATTERNS, NUM_KINDS), dtype=np.int8)
for _i, _m in enumerate(PATTERNS):
    for _k in meld_kinds(_m):
        PATTERN_COUNTS[_i, _k] += 1


# Pattern i is available iff HAVE[I0[i]] & HAVE[I1[i]] & HAVE[I2[i]], where
# HAVE = [count >= 1 (53 kinds), count >= 2 (53), True] and I* index it by
# (need - 1) * 53 + kind; unused slots point at the final True.
_HAVE_SIZE = 2 * NUM_KINDS + 1
_PATTERN_INDEX3 = np.where(
    PATTERN_KINDS < NUM_KINDS, (PATTERN_NEEDS.astype(np.intp) - 1) * NUM_KINDS + PATTERN_KINDS, _HAVE_SIZE - 1
)
assert PATTERN_NEEDS.max() <= 2
_I0, _I1, _I2 = (np.ascontiguousarray(_PATTERN_INDEX3[:, j]) for j in range(3))


def patterns_available(hand: np.ndarray) -> np.ndarray:
    """Bool per pattern: the hand (counts per kind) holds its tiles."""
    have = np.empty(_HAVE_SIZE, dtype=bool)
    np.greater_equal(hand, 1, out=have[:NUM_KINDS])
    np.greater_equal(hand, 2, out=have[NUM_KINDS : 2 * NUM_KINDS])
    have[-1] = True
    out = have[_I0]
    out &= have[_I1]
    out &= have[_I2]
    return out


def candidate_kinds(meld: Meld) -> list[int]:
    """The kinds that could possibly be added to a meld (the rest never can):
    its colour's tiles and the wilds for a run, its number's tiles and the
    wilds for a set."""
    if meld.is_run:
        kinds = [kind_of(meld.colour, n) for n in range(1, 14)]
    else:
        kinds = [kind_of(c, meld.number) for c in range(NUM_COLOURS)]
    return kinds + [k for k in WILD_KINDS if k not in kinds]


def allowed_patterns(rules: Rules) -> np.ndarray:
    """Which patterns the table rules allow at all (sets, colours, jokers)."""
    return np.array([is_valid_meld(m, rules) for m in PATTERNS], dtype=bool)


# --------------------------------------------------------------------------- encoding

#: per-meld feature layout of the observation (one meld slot)
MELD_FEATURES: tuple[tuple[str, int], ...] = (
    ("present", 1),
    ("is_run", 1),
    ("is_set", 1),
    ("run_colour", NUM_COLOURS),
    ("set_number", 13),
    ("run_positions", NUM_POSITIONS),
    ("set_colours", NUM_COLOURS),  # naturals per colour / 2
    ("wild_kind", len(WILD_KINDS)),
    ("wild_position", NUM_POSITIONS),
    ("length", 1),  # / 14
    ("canasta", 1),
    ("clean", 1),
)
MELD_FEATURE_SIZE = sum(n for _, n in MELD_FEATURES)
#: where each feature of :data:`MELD_FEATURES` starts in a slot's encoding
MELD_FEATURE_OFFSETS: dict[str, int] = {}
_acc = 0
for _name, _n in MELD_FEATURES:
    MELD_FEATURE_OFFSETS[_name] = _acc
    _acc += _n
#: the feature that says a meld slot holds a meld (1) or is empty (0, and then every feature is 0)
MELD_PRESENT = MELD_FEATURE_OFFSETS["present"]


def encode_meld(meld: Meld) -> np.ndarray:
    """The observation features of one meld (see :data:`MELD_FEATURES`)."""
    out = np.zeros(MELD_FEATURE_SIZE, dtype=np.float32)
    out[MELD_FEATURE_OFFSETS["present"]] = 1.0
    if meld.is_run:
        out[MELD_FEATURE_OFFSETS["is_run"]] = 1.0
        out[MELD_FEATURE_OFFSETS["run_colour"] + meld.colour] = 1.0
        out[MELD_FEATURE_OFFSETS["run_positions"] + meld.lo - 1 : MELD_FEATURE_OFFSETS["run_positions"] + meld.hi] = 1.0
        if meld.wild_kind >= 0:
            out[MELD_FEATURE_OFFSETS["wild_position"] + meld.wild_pos - 1] = 1.0
    else:
        out[MELD_FEATURE_OFFSETS["is_set"]] = 1.0
        out[MELD_FEATURE_OFFSETS["set_number"] + meld.number - 1] = 1.0
        for c in range(NUM_COLOURS):
            out[MELD_FEATURE_OFFSETS["set_colours"] + c] = meld.set_colours[c] / 2.0
    if meld.wild_kind >= 0:
        out[MELD_FEATURE_OFFSETS["wild_kind"] + WILD_INDEX[meld.wild_kind]] = 1.0
    out[MELD_FEATURE_OFFSETS["length"]] = meld.length / 14.0
    out[MELD_FEATURE_OFFSETS["canasta"]] = float(meld.is_canasta)
    out[MELD_FEATURE_OFFSETS["clean"]] = float(meld.clean)
    return out
