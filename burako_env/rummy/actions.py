"""Rummy actions: one turn as a sequence of masked decisions over a fixed ``Discrete(56)``.

| id      | action                                                              |
|---------|---------------------------------------------------------------------|
| 0..52   | put one tile of that kind from the hand into the pending play       |
| 53      | put the closing tile into the pending play (R8)                     |
| 54      | commit the pending play: it goes to the table, the turn ends        |
| 55      | end the turn without playing (only with nothing pending)            |

Why this design:

* The table is a multiset and rearrangement is free (R6, R7 decision), so a
  play is fully described by *which tiles leave the hand*: the engine never
  needs the player to say how the table is rearranged, only that some
  arrangement exists (the exact DP of :mod:`burako_env.rummy.partition`).
  That makes the action space small and fixed (56) whatever the table holds.
* A play is built one tile kind at a time, so a policy chooses among at most
  56 options per decision instead of among the exponentially many subsets of
  the hand. The mask is exact (E3): a tile may be put in only when some legal
  play contains the pending tiles plus it (checked for all kinds at once by
  one forward/backward pass of the DP), so every unmasked action can still
  lead to a legal play, every legal play is reachable (add its tiles in any
  order, then commit), and the player always has an action (end the turn with
  nothing pending, or commit a play the mask has kept reachable).
* There is no "take back" action: nothing is gained by it, and without it a
  turn has at most hand size + 2 decisions, so every episode is finite.
* The draw is not a decision (R4: always draw when the stock has tiles), so
  the engine draws when a turn starts.
"""

from __future__ import annotations

from burako_env.scenario import tile_text
from burako_env.tiles import NUM_KINDS

ADD_TILE = 0  # + kind
ADD_CLOSING = NUM_KINDS  # 53
COMMIT = NUM_KINDS + 1  # 54
END_TURN = NUM_KINDS + 2  # 55
NUM_ACTIONS = NUM_KINDS + 3  # 56


def describe_action(action: int) -> str:
    """A short human description of an action id."""
    if not 0 <= action < NUM_ACTIONS:
        raise ValueError(f"action {action} is out of range 0..{NUM_ACTIONS - 1}")
    if action < NUM_KINDS:
        return f"put {tile_text(action)} into the play"
    if action == ADD_CLOSING:
        return "put the closing tile into the play"
    if action == COMMIT:
        return "commit the play"
    return "end the turn"
