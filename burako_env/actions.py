"""The action layout: one fixed ``Discrete(NUM_ACTIONS)`` space for every rules object.

A turn is a sequence of single decisions (DESIGN.md 3). The layout is the
same for every variant so agents move between them; what a variant lacks is
simply never legal.

| offset                  | count          | action                                           | phase      |
|-------------------------|----------------|--------------------------------------------------|------------|
| ``DRAW_STOCK`` = 0      | 1              | draw the top tile of the stock (B16)             | DRAW       |
| ``TAKE_PILE`` = 1       | 1              | take the whole discard pile (B16)                | DRAW       |
| ``KEEP`` = 2            | 1              | mano keeps the privilege tile (B17)              | PRIVILEGE  |
| ``REJECT`` = 3          | 1              | mano rejects it to the pile, draws again (B17)   | PRIVILEGE  |
| ``CHOOSE_BASE`` = 4     | 2              | pick placement 0 (lower) or 1 (higher) of a      | CHOOSE_END |
|                         |                | pending ambiguous addition (B10, 1 at both ends) |            |
| ``DISCARD_BASE`` = 6    | 53             | discard a tile of kind k (B15, B18)              | PLAY       |
| ``MELD_BASE`` = 59      | NUM_PATTERNS   | meld the 3-tile pattern p (melds.PATTERNS)       | PLAY       |
| ``ADD_BASE``            | 36 x 53        | add a tile of kind k to own meld slot j:         | PLAY       |
|                         |                | ``ADD_BASE + j * 53 + k``                        |            |

Meld slots are a side's melds in the order they were made; 36 slots exceed
the most melds a side can ever hold (106 // 3 = 35), so no cap hides a move.
"""

from __future__ import annotations

from burako_env.melds import NUM_PATTERNS, PATTERNS, describe_meld
from burako_env.safe_yaml import action_id_problem
from burako_env.tiles import NUM_KINDS, tile_name

DRAW_STOCK = 0
TAKE_PILE = 1
KEEP = 2
REJECT = 3
CHOOSE_BASE = 4
NUM_CHOICES = 2
DISCARD_BASE = CHOOSE_BASE + NUM_CHOICES
MELD_BASE = DISCARD_BASE + NUM_KINDS
MAX_MELD_SLOTS = 36
ADD_BASE = MELD_BASE + NUM_PATTERNS
NUM_ACTIONS = ADD_BASE + MAX_MELD_SLOTS * NUM_KINDS

#: action kinds returned by :func:`decode`
DRAW, TAKE, KEEP_PRIVILEGE, REJECT_PRIVILEGE, CHOOSE, DISCARD, MELD, ADD = (
    "draw",
    "take_pile",
    "keep",
    "reject",
    "choose",
    "discard",
    "meld",
    "add",
)


def discard_action(kind: int) -> int:
    return DISCARD_BASE + kind


def meld_action(pattern: int) -> int:
    return MELD_BASE + pattern


def add_action(slot: int, kind: int) -> int:
    return ADD_BASE + slot * NUM_KINDS + kind


class IllegalActionError(ValueError):
    """An action that is out of range or not legal now; the state is unchanged."""


def action_id(action: object) -> int:
    """``action`` as a Python int if it is an action id (a whole number in range; not a bool,
    a float or a string), else :class:`IllegalActionError` saying which it is not."""
    problem = action_id_problem(action, NUM_ACTIONS)
    if problem is not None:
        raise IllegalActionError(problem)
    return int(action)  # type: ignore[call-overload]


def decode(action: int) -> tuple[str, int, int]:
    """``(kind, a, b)``: discard (tile, -), meld (pattern, -), add (slot, tile),
    choose (option, -); draw/take/keep/reject have no arguments."""
    action = action_id(action)
    if action == DRAW_STOCK:
        return DRAW, -1, -1
    if action == TAKE_PILE:
        return TAKE, -1, -1
    if action == KEEP:
        return KEEP_PRIVILEGE, -1, -1
    if action == REJECT:
        return REJECT_PRIVILEGE, -1, -1
    if action < DISCARD_BASE:
        return CHOOSE, action - CHOOSE_BASE, -1
    if action < MELD_BASE:
        return DISCARD, action - DISCARD_BASE, -1
    if action < ADD_BASE:
        return MELD, action - MELD_BASE, -1
    slot, kind = divmod(action - ADD_BASE, NUM_KINDS)
    return ADD, slot, kind


def describe_action(action: int, cards: bool = False) -> str:
    """A context-free human text for an action id. ``GameState.describe``
    adds the context (pile size, the meld in a slot, the pending choice)."""
    what, a, b = decode(action)
    if what == DRAW:
        return "draw from the stock"
    if what == TAKE:
        return "take the discard pile"
    if what == KEEP_PRIVILEGE:
        return "keep the privilege tile"
    if what == REJECT_PRIVILEGE:
        return "reject the privilege tile and draw again"
    if what == CHOOSE:
        return "place at the low end" if a == 0 else "place at the high end"
    if what == DISCARD:
        return f"discard {tile_name(a, cards)}"
    if what == MELD:
        return f"meld {describe_meld(PATTERNS[a], cards)}"
    return f"add {tile_name(b, cards)} to meld {a}"
