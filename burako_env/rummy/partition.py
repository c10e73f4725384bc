"""Exact partition of tiles into Rummy melds (RULES.md R3, R6, R7): a DP over numbers.

The question every Rummy rule reduces to (R6/R7 decision: a play is legal when
the table's tiles plus the tiles played can be arranged into valid melds) is:

    given *mandatory* tiles (all must be placed) and *optional* tiles (any
    subset may be placed), which choices of optional tiles let everything
    placed be partitioned into runs and sets, and what is the best objective?

It is answered by a dynamic program over the numbers 1..13, after van Rijn,
Takes and Vis, "The Complexity of Rummikub Problems" (BNAIC 2015/2016). Runs
are read left to right; a run that passes number ``n`` in colour ``c`` is
only summarised by its length so far, capped at 3 ("3 or more": it may end
here). The state after number ``n`` is, per colour, how many open runs have
length 1, 2 and 3+, plus how many jokers are used so far. At number ``n``
each colour's tiles (naturals and jokers standing for that colour) are split
between runs and sets of number ``n``; open runs of length 1 or 2 *must* be
extended, and extending a 3+ run always dominates ending it and starting a
new run (a 3+ run can still stop at any later number), so a colour's run part
is fixed by how many of its tiles go to runs. The tiles sent to sets must form
sets of 3 or 4 tiles of distinct colours, jokers filling the missing colours
(a precomputed table over the 3^4 x 3 small cases).

Cost: at most 4 open runs per colour (2 naturals + 2 jokers), so at most
C(4+3, 3)^4 * 3 = 35^4 * 3 states per layer in theory; in play the reachable
layers hold a few dozen states. Each state has at most
``prod_c (copies_c + 1)^2 * 15`` transitions (copies <= 2, jokers <= 2), so a
query is O(13 * S * T) with S, T constants independent of the hand size:
polynomial (linear in the number of numbers) and exact. Transition lists are
memoised by (state, column), which is what makes repeated mask queries cheap.

The same layered graph gives, from one forward and one backward pass, the
answer to every "can one more tile of kind k be placed?" question at once
(:meth:`PlayGraph.addable`), which is how the Rummy action mask is computed.

Tile kinds are those of :mod:`burako_env.tiles` (``c * 13 + n - 1``, joker 52).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from functools import lru_cache

import numpy as np

from burako_env.tiles import JOKER, NUM_COLOURS, NUM_KINDS, NUM_NUMBERS

NEG = -(10**9)

#: a layer state: 4 colours x (runs of length 1, 2, 3+), then jokers used
State = tuple[int, ...]
_START: State = (0,) * (3 * NUM_COLOURS + 1)


def _group_table() -> frozenset[tuple[tuple[int, ...], int]]:
    """Every (naturals per colour, jokers) that splits into sets of one number (R3).

    A set holds 3 or 4 tiles, naturals of distinct colours, jokers for the rest.
    """
    ok: set[tuple[tuple[int, ...], int]] = set()
    # every set is (subset of colours, jokers) with 3 <= size <= 4 and at least one natural
    shapes = [
        (colours, jokers)
        for size in (1, 2, 3, 4)
        for colours in itertools.combinations(range(NUM_COLOURS), size)
        for jokers in range(0, 3)
        if 3 <= size + jokers <= 4
    ]
    ok.add(((0, 0, 0, 0), 0))
    for count in (1, 2, 3, 4):
        for combo in itertools.combinations_with_replacement(range(len(shapes)), count):
            naturals = [0] * NUM_COLOURS
            jokers = 0
            for index in combo:
                colours, used = shapes[index]
                for colour in colours:
                    naturals[colour] += 1
                jokers += used
            if max(naturals) <= 2 and jokers <= 2:
                ok.add((tuple(naturals), jokers))
    return frozenset(ok)


GROUP_OK = _group_table()

#: joker placements at one number: jokers per colour's runs (4) and jokers in sets (1)
_JOKER_SPLITS: tuple[tuple[tuple[int, ...], ...], ...] = tuple(
    tuple(split for split in itertools.product(range(total + 1), repeat=NUM_COLOURS + 1) if sum(split) == total)
    for total in range(3)
)


def _colour_runs(runs: tuple[int, int, int], tiles: int) -> tuple[int, int, int] | None:
    """The colour's (len 1, len 2, len 3+) open runs after ``tiles`` run tiles at the next number."""
    ones, twos, full = runs
    short = ones + twos
    if tiles < short:
        return None
    extended_full = min(full, tiles - short)
    return (tiles - short - extended_full, ones, twos + extended_full)


@lru_cache(maxsize=200_000)
def _transitions(
    state: State, number: int, low: tuple[int, ...], high: tuple[int, ...], jokers_left: int
) -> tuple[tuple[State, tuple[int, ...], int], ...]:
    """Every (next state, naturals used per colour, jokers placed) at ``number``.

    ``low``/``high``: fewest/most naturals of each colour that may be used here.
    """
    out: dict[tuple[State, tuple[int, ...], int], None] = {}
    last = number == NUM_NUMBERS
    for placed in range(jokers_left + 1):
        for split in _JOKER_SPLITS[placed]:
            per_colour: list[list[tuple[int, int, tuple[int, int, int]]]] = []
            for colour in range(NUM_COLOURS):
                runs = state[3 * colour : 3 * colour + 3]
                options = []
                for used in range(low[colour], high[colour] + 1):
                    for in_sets in range(min(used, 2) + 1):
                        after = _colour_runs(runs, used - in_sets + split[colour])
                        if after is None or (last and (after[0] or after[1])):
                            continue
                        options.append((used, in_sets, after))
                if not options:
                    break
                per_colour.append(options)
            else:
                for combo in itertools.product(*per_colour):
                    if (tuple(option[1] for option in combo), split[NUM_COLOURS]) not in GROUP_OK:
                        continue
                    nxt = (*(v for option in combo for v in option[2]), state[-1] + placed)
                    out[(nxt, tuple(option[0] for option in combo), placed)] = None
    return tuple(out)


class PlayGraph:
    """The layered graph of one query: every way to place mandatory + some optional tiles.

    ``mandatory``/``optional``: counts per tile kind (length 53). ``weights``:
    the objective value of each placed tile kind (naturals); ``joker_at_number``:
    a placed joker is worth the number it stands for (R5, R11a), else
    ``joker_weight`` each. ``free_jokers``: that many placed jokers are worth
    nothing (the closing tile when it is a joker, R11b); the DP gives them the
    lowest numbers, the best for the player.
    """

    def __init__(
        self,
        mandatory: Sequence[int] | np.ndarray,
        optional: Sequence[int] | np.ndarray | None = None,
        weights: Sequence[int] | np.ndarray | None = None,
        *,
        joker_at_number: bool = False,
        joker_weight: int = 0,
        free_jokers: int = 0,
    ) -> None:
        mand = [int(x) for x in mandatory]
        opt = [0] * NUM_KINDS if optional is None else [int(x) for x in optional]
        if len(mand) != NUM_KINDS or len(opt) != NUM_KINDS:
            raise ValueError(f"tile counts must have {NUM_KINDS} entries")
        if min(mand) < 0 or min(opt) < 0:
            raise ValueError("tile counts must be non-negative")
        weight = [0] * NUM_KINDS if weights is None else [int(x) for x in weights]
        self.mandatory, self.optional = mand, opt
        self.jokers_min = mand[JOKER]
        self.jokers_max = min(mand[JOKER] + opt[JOKER], 2)
        if self.jokers_min > 2:
            raise ValueError("at most 2 jokers can be placed")
        # forward: best value per state, and the edges of each layer
        self.forward: list[dict[State, int]] = [{_START: 0}]
        self.edges: list[list[tuple[State, State, tuple[int, ...], int, int]]] = []
        for number in range(1, NUM_NUMBERS + 1):
            kinds = [colour * NUM_NUMBERS + number - 1 for colour in range(NUM_COLOURS)]
            low = tuple(mand[k] for k in kinds)
            high = tuple(mand[k] + opt[k] for k in kinds)
            layer: dict[State, int] = {}
            edges = []
            for state, best in self.forward[-1].items():
                for nxt, used, placed in _transitions(state, number, low, high, self.jokers_max - state[-1]):
                    value = sum(used[c] * weight[kinds[c]] for c in range(NUM_COLOURS))
                    if placed:
                        if joker_at_number:
                            free = max(0, min(placed, free_jokers - state[-1]))
                            value += number * (placed - free)
                        else:
                            value += joker_weight * placed
                    edges.append((state, nxt, used, placed, value))
                    if best + value > layer.get(nxt, NEG):
                        layer[nxt] = best + value
            self.forward.append(layer)
            self.edges.append(edges)
        # backward: best value still to come from each state (NEG when dead)
        final = {
            state: 0
            for state in self.forward[-1]
            if not any(state[3 * c] or state[3 * c + 1] for c in range(NUM_COLOURS)) and state[-1] >= self.jokers_min
        }
        self.backward: list[dict[State, int]] = [dict() for _ in range(NUM_NUMBERS + 1)]
        self.backward[NUM_NUMBERS] = final
        for number in range(NUM_NUMBERS, 0, -1):
            ahead = self.backward[number]
            here: dict[State, int] = {}
            for state, nxt, _used, _placed, value in self.edges[number - 1]:
                if nxt in ahead and ahead[nxt] + value > here.get(state, NEG):
                    here[state] = ahead[nxt] + value
            self.backward[number - 1] = here

    @property
    def feasible(self) -> bool:
        """Whether the mandatory tiles (with some optional ones) can all be placed."""
        return _START in self.backward[0]

    @property
    def best_value(self) -> int | None:
        """The best objective over every feasible placement (None when infeasible)."""
        return self.backward[0].get(_START)

    def best_placement(self) -> np.ndarray | None:
        """Counts per kind of one placement reaching :attr:`best_value` (None when infeasible)."""
        if not self.feasible:
            return None
        counts = np.zeros(NUM_KINDS, dtype=np.int64)
        state = _START
        for number in range(1, NUM_NUMBERS + 1):
            ahead = self.backward[number]
            target = self.backward[number - 1][state]
            for source, nxt, used, placed, value in self.edges[number - 1]:
                if source == state and nxt in ahead and ahead[nxt] + value == target:
                    for colour in range(NUM_COLOURS):
                        counts[colour * NUM_NUMBERS + number - 1] += used[colour]
                    counts[JOKER] += placed
                    state = nxt
                    break
        return counts

    def addable(self, minimum_value: int = NEG) -> np.ndarray:
        """For each kind: can a placement use one more than the mandatory count, reaching ``minimum_value``?

        One forward/backward pass answers all 53 kinds (the Rummy action mask).
        """
        result = np.zeros(NUM_KINDS, dtype=bool)
        for number in range(1, NUM_NUMBERS + 1):
            before, ahead = self.forward[number - 1], self.backward[number]
            for state, nxt, used, _placed, value in self.edges[number - 1]:
                if nxt not in ahead or before[state] + value + ahead[nxt] < minimum_value:
                    continue
                for colour in range(NUM_COLOURS):
                    kind = colour * NUM_NUMBERS + number - 1
                    if used[colour] > self.mandatory[kind]:
                        result[kind] = True
        if self.optional[JOKER] and self.jokers_min < self.jokers_max:
            result[JOKER] = any(
                state[-1] > self.jokers_min and value >= minimum_value
                for state, value in self.forward[-1].items()
                if state in self.backward[NUM_NUMBERS]
            )
        return result


def can_partition(counts: Sequence[int] | np.ndarray) -> bool:
    """Whether exactly these tiles (counts per kind) split into valid melds (R3)."""
    return PlayGraph(counts).feasible


def max_tiles_placed(table: Sequence[int] | np.ndarray, rack: Sequence[int] | np.ndarray) -> int | None:
    """Most rack tiles that can join the table so that everything splits into melds (None: table invalid)."""
    best = PlayGraph(table, rack, [1] * NUM_KINDS, joker_weight=1).best_value
    return None if best is None else best - int(np.sum(table))
