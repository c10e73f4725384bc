"""Tile kinds, colours, run positions and wilds (docs/rules.md B1, B2, B6, B9).

Every tile is identified by its *kind*, an int in ``0..52``:

| kind            | meaning                                   |
|-----------------|-------------------------------------------|
| ``c * 13 + n-1``| number ``n`` (1..13) of colour ``c`` (0..3)|
| ``52``          | joker (mulita, ★)                          |

Colours: 0 black, 1 red, 2 blue, 3 yellow (with cards: ♠ ♥ ♦ ♣).

Runs live on *positions* 1..14 of one colour; position 14 is the high 1
(12-13-1), so ``position_number(14) == 1`` (B6).

Wilds are numbered 0..4 for encodings: 0 the joker, 1 + c the 2 of colour c.
This module owns these facts; every other module imports them from here.
"""

from __future__ import annotations

import numpy as np

NUM_COLOURS = 4
NUM_NUMBERS = 13
NUM_KINDS = 53
JOKER = 52
NUM_POSITIONS = 14
NUM_WILD_KINDS = 5

COLOUR_NAMES = ("black", "red", "blue", "yellow")
#: one letter per colour, as in the scenario notation (``R5``)
COLOUR_LETTERS = "KRBY"
SUIT_SYMBOLS = ("♠", "♥", "♦", "♣")
CARD_RANKS = ("A", "2", "3", "4", "5", "6", "7", "8", "9", "10", "J", "Q", "K")


def kind_of(colour: int, number: int) -> int:
    """The kind of number ``number`` (1..13) in colour ``colour``."""
    return colour * NUM_NUMBERS + number - 1


def position_number(position: int) -> int:
    """The number shown by the tile that stands on run position 1..14."""
    return 1 if position == NUM_POSITIONS else position


def kind_at(colour: int, position: int) -> int:
    """The natural tile kind for ``position`` of a run of ``colour``."""
    return kind_of(colour, position_number(position))


def run_positions(kind: int) -> tuple[int, ...]:
    """The run positions a natural tile of ``kind`` stands on: its number,
    and both 1 and 14 for a 1 (B6: a 1 is low or high); none for the joker."""
    if kind == JOKER:
        return ()
    number = kind % NUM_NUMBERS + 1
    return (1, NUM_POSITIONS) if number == 1 else (number,)


#: colour of each kind (-1 for the joker)
KIND_COLOUR = np.array([k // NUM_NUMBERS for k in range(52)] + [-1], dtype=np.int64)
#: number of each kind (0 for the joker)
KIND_NUMBER = np.array([k % NUM_NUMBERS + 1 for k in range(52)] + [0], dtype=np.int64)
KIND_COLOUR_LIST: tuple[int, ...] = tuple(int(c) for c in KIND_COLOUR)
KIND_NUMBER_LIST: tuple[int, ...] = tuple(int(n) for n in KIND_NUMBER)

#: the four 2s
TWO_KINDS: tuple[int, ...] = tuple(kind_of(c, 2) for c in range(NUM_COLOURS))
#: wild kinds in encoding order (B2): joker, then the 2 of each colour
WILD_KINDS: tuple[int, ...] = (JOKER, *TWO_KINDS)
#: index 0..4 of each wild kind, -1 for non-wild kinds
WILD_INDEX: tuple[int, ...] = tuple(WILD_KINDS.index(k) if k in WILD_KINDS else -1 for k in range(NUM_KINDS))
IS_WILD: tuple[bool, ...] = tuple(k in WILD_KINDS for k in range(NUM_KINDS))


def _tile_text(kind: int, cards: bool, joker: str, numbered: str) -> str:
    """A tile kind as text: ``joker`` for the joker, the card (``"5♥"``) with
    cards, else ``numbered`` filled with the kind's ``colour`` name, colour
    ``letter`` and ``number``."""
    if kind == JOKER:
        return joker
    colour, number = KIND_COLOUR_LIST[kind], KIND_NUMBER_LIST[kind]
    if cards:
        return f"{CARD_RANKS[number - 1]}{SUIT_SYMBOLS[colour]}"
    return numbered.format(colour=COLOUR_NAMES[colour], letter=COLOUR_LETTERS[colour], number=number)


def tile_name(kind: int, cards: bool = False) -> str:
    """Human name of a tile kind: ``"red 5"``, ``"joker"``, or ``"5♥"`` with cards."""
    return _tile_text(kind, cards, "joker", "{colour} {number}")


def short_name(kind: int, cards: bool = False) -> str:
    """Compact name for tables: ``"R5"``, ``"★"``, or ``"5♥"`` with cards."""
    return _tile_text(kind, cards, "★", "{letter}{number}")
