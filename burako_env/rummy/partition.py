"""Exact partition of tiles into Rummy melds (docs/rules.md R3, R6, R7): a DP over numbers.

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
C(4+3, 3)^4 * 3 = 35^4 * 3 states per layer; each state has at most
``prod_c 6 * 15`` transitions (copies <= 2, jokers <= 2), so a query is
O(13 * S * T) with S, T constants independent of the hand size: polynomial
(linear in the numbers) and exact. Compiled with numba. Measured on random
Rummy games: the median mask query takes about 0.05 ms (a few hundred
states); the worst cases are dense tables holding both jokers with a large
hand (up to ~10^5 live states, ~2 s): jokers let far more run/set shapes
survive each column. A tighter normal form for jokers is the known next step.

The same layered graph gives, from one forward and one backward pass, the
answer to every "can one more tile of kind k be placed?" question at once
(:meth:`PlayGraph.addable`), which is how the Rummy action mask is computed.

Tile kinds are those of :mod:`burako_env.tiles` (``c * 13 + n - 1``, joker 52).
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Sequence

import numba
import numpy as np

from burako_env.tiles import JOKER, NUM_COLOURS, NUM_KINDS, NUM_NUMBERS

NEG = -(10**9)


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


_jit = functools.partial(numba.njit, cache=True, nogil=True)

#: GROUP_OK as a lookup array [g0, g1, g2, g3, jokers]
GROUP_OK_ARRAY = np.zeros((3, 3, 3, 3, 3), dtype=np.bool_)
for _naturals, _jokers in GROUP_OK:
    GROUP_OK_ARRAY[(*_naturals, _jokers)] = True
#: joker placements as rows (jokers in the runs of colour 0..3, jokers in sets, total)
SPLITS_ARRAY = np.array([(*split, total) for total in range(3) for split in _JOKER_SPLITS[total]], dtype=np.int64)
#: a state is one int: per colour c, (len-1 runs + 5 len-2 runs + 25 len-3+ runs) * 125**c,
#: then jokers used * 125**4
COLOUR_BASE = np.array([1, 125, 125**2, 125**3, 125**4], dtype=np.int64)


@_jit
def _build(mand, opt, weight, joker_at_number, joker_weight, free_jokers, jokers_max, group_ok, splits, base):
    """Forward pass: the layered graph's states, best values so far and edges (see PlayGraph)."""
    cap_states = 1024
    cap_edges = 4096
    states = np.empty(cap_states, np.int64)
    forward = np.empty(cap_states, np.int64)
    layer_start = np.zeros(NUM_NUMBERS + 2, np.int64)
    e_src = np.empty(cap_edges, np.int64)
    e_dst = np.empty(cap_edges, np.int64)
    e_used = np.empty((cap_edges, 5), np.int64)
    e_value = np.empty(cap_edges, np.int64)
    edge_start = np.zeros(NUM_NUMBERS + 1, np.int64)
    states[0] = 0
    forward[0] = 0
    n_states = 1
    n_edges = 0
    layer_start[1] = 1
    opt_u = np.empty((4, 9), np.int64)
    opt_g = np.empty((4, 9), np.int64)
    opt_code = np.empty((4, 9), np.int64)
    opt_n = np.empty(4, np.int64)
    for number in range(1, NUM_NUMBERS + 1):
        lo = layer_start[number - 1]
        hi = layer_start[number]
        index = dict()
        edge_start[number - 1] = n_edges
        last = number == NUM_NUMBERS
        for si in range(lo, hi):
            state = states[si]
            used_jokers = state // base[4]
            for row in range(splits.shape[0]):
                placed = splits[row, 5]
                if used_jokers + placed > jokers_max:
                    continue
                ok = True
                for c in range(4):
                    code = (state // base[c]) % 125
                    ones = code % 5
                    twos = (code // 5) % 5
                    full = code // 25
                    kind = c * NUM_NUMBERS + number - 1
                    count = 0
                    for used in range(mand[kind], mand[kind] + opt[kind] + 1):
                        for in_sets in range(min(used, 2) + 1):
                            tiles = used - in_sets + splits[row, c]
                            short = ones + twos
                            if tiles < short:
                                continue
                            # extending a 3+ run dominates ending it and starting a new one
                            extended = min(full, tiles - short)
                            new_ones = tiles - short - extended
                            if last and (new_ones > 0 or ones > 0):
                                continue
                            if new_ones > 4 or twos + extended > 4:
                                continue
                            opt_u[c, count] = used
                            opt_g[c, count] = in_sets
                            opt_code[c, count] = new_ones + 5 * ones + 25 * (twos + extended)
                            count += 1
                    opt_n[c] = count
                    if count == 0:
                        ok = False
                        break
                if not ok:
                    continue
                joker_value = 0
                if placed > 0:
                    if joker_at_number:
                        free = min(placed, max(0, free_jokers - used_jokers))
                        joker_value = number * (placed - free)
                    else:
                        joker_value = joker_weight * placed
                for i0 in range(opt_n[0]):
                    for i1 in range(opt_n[1]):
                        for i2 in range(opt_n[2]):
                            for i3 in range(opt_n[3]):
                                if not group_ok[opt_g[0, i0], opt_g[1, i1], opt_g[2, i2], opt_g[3, i3], splits[row, 4]]:
                                    continue
                                nxt = (
                                    opt_code[0, i0]
                                    + base[1] * opt_code[1, i1]
                                    + base[2] * opt_code[2, i2]
                                    + base[3] * opt_code[3, i3]
                                    + base[4] * (used_jokers + placed)
                                )
                                if not last:
                                    # look-ahead: the short runs must be extended at the next number
                                    # (and the length-1 runs at the one after)
                                    deficit = 0
                                    for c in range(4):
                                        code = opt_code[c, i0 if c == 0 else (i1 if c == 1 else (i2 if c == 2 else i3))]
                                        short = code % 5 + (code // 5) % 5
                                        kind = c * NUM_NUMBERS + number
                                        deficit += max(0, short - mand[kind] - opt[kind])
                                        if number + 1 < NUM_NUMBERS:
                                            deficit += max(0, code % 5 - mand[kind + 1] - opt[kind + 1])
                                        elif code % 5:
                                            deficit += 100  # a run of 1 at 12 cannot reach 3 tiles
                                    if deficit > jokers_max - used_jokers - placed:
                                        continue
                                value = joker_value
                                value += opt_u[0, i0] * weight[number - 1]
                                value += opt_u[1, i1] * weight[NUM_NUMBERS + number - 1]
                                value += opt_u[2, i2] * weight[2 * NUM_NUMBERS + number - 1]
                                value += opt_u[3, i3] * weight[3 * NUM_NUMBERS + number - 1]
                                if nxt in index:
                                    di = index[nxt]
                                else:
                                    if n_states == states.shape[0]:
                                        states = np.concatenate((states, np.empty(n_states, np.int64)))
                                        forward = np.concatenate((forward, np.empty(n_states, np.int64)))
                                    di = n_states
                                    index[nxt] = di
                                    states[di] = nxt
                                    forward[di] = NEG
                                    n_states += 1
                                total = forward[si] + value
                                if total > forward[di]:
                                    forward[di] = total
                                if n_edges == e_src.shape[0]:
                                    e_src = np.concatenate((e_src, np.empty(n_edges, np.int64)))
                                    e_dst = np.concatenate((e_dst, np.empty(n_edges, np.int64)))
                                    e_used = np.concatenate((e_used, np.empty((n_edges, 5), np.int64)))
                                    e_value = np.concatenate((e_value, np.empty(n_edges, np.int64)))
                                e_src[n_edges] = si
                                e_dst[n_edges] = di
                                e_used[n_edges, 0] = opt_u[0, i0]
                                e_used[n_edges, 1] = opt_u[1, i1]
                                e_used[n_edges, 2] = opt_u[2, i2]
                                e_used[n_edges, 3] = opt_u[3, i3]
                                e_used[n_edges, 4] = placed
                                e_value[n_edges] = value
                                n_edges += 1
        layer_start[number + 1] = n_states
    edge_start[NUM_NUMBERS] = n_edges
    return (
        states[:n_states],
        forward[:n_states],
        layer_start,
        e_src[:n_edges],
        e_dst[:n_edges],
        e_used[:n_edges],
        e_value[:n_edges],
        edge_start,
    )


@_jit
def _backward(states, layer_start, e_src, e_dst, e_value, jokers_min, base):
    """Best value still to come from each state (NEG when no valid end is reachable)."""
    backward = np.full(states.shape[0], NEG, np.int64)
    for si in range(layer_start[NUM_NUMBERS], layer_start[NUM_NUMBERS + 1]):
        state = states[si]
        open_short = False
        for c in range(4):
            if ((state // base[c]) % 125) % 25 != 0:
                open_short = True
        if not open_short and state // base[4] >= jokers_min:
            backward[si] = 0
    for e in range(e_src.shape[0] - 1, -1, -1):
        ahead = backward[e_dst[e]]
        if ahead != NEG and ahead + e_value[e] > backward[e_src[e]]:
            backward[e_src[e]] = ahead + e_value[e]
    return backward


@_jit
def _addable(forward, backward, e_src, e_dst, e_used, e_value, edge_start, mand, minimum):
    result = np.zeros(NUM_KINDS, np.bool_)
    for number in range(1, NUM_NUMBERS + 1):
        for e in range(edge_start[number - 1], edge_start[number]):
            ahead = backward[e_dst[e]]
            if ahead == NEG or forward[e_src[e]] + e_value[e] + ahead < minimum:
                continue
            for c in range(4):
                kind = c * NUM_NUMBERS + number - 1
                if e_used[e, c] > mand[kind]:
                    result[kind] = True
    return result


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
        mand = np.asarray(mandatory, dtype=np.int64)
        opt = np.zeros(NUM_KINDS, np.int64) if optional is None else np.asarray(optional, dtype=np.int64)
        if mand.shape != (NUM_KINDS,) or opt.shape != (NUM_KINDS,):
            raise ValueError(f"tile counts must have {NUM_KINDS} entries")
        if mand.min() < 0 or opt.min() < 0:
            raise ValueError("tile counts must be non-negative")
        weight = np.zeros(NUM_KINDS, np.int64) if weights is None else np.asarray(weights, dtype=np.int64)
        self.mandatory, self.optional = mand, opt
        self.jokers_min = int(mand[JOKER])
        self.jokers_max = int(min(mand[JOKER] + opt[JOKER], 2))
        if self.jokers_min > 2:
            raise ValueError("at most 2 jokers can be placed")
        (
            self.states,
            self.forward,
            self.layer_start,
            self.e_src,
            self.e_dst,
            self.e_used,
            self.e_value,
            self.edge_start,
        ) = _build(
            mand,
            opt,
            weight,
            joker_at_number,
            int(joker_weight),
            int(free_jokers),
            self.jokers_max,
            GROUP_OK_ARRAY,
            SPLITS_ARRAY,
            COLOUR_BASE,
        )
        self.backward = _backward(
            self.states, self.layer_start, self.e_src, self.e_dst, self.e_value, self.jokers_min, COLOUR_BASE
        )

    @property
    def feasible(self) -> bool:
        """Whether the mandatory tiles (with some optional ones) can all be placed."""
        return bool(self.backward[0] != NEG)

    @property
    def best_value(self) -> int | None:
        """The best objective over every feasible placement (None when infeasible)."""
        return int(self.backward[0]) if self.feasible else None

    def best_placement(self) -> np.ndarray | None:
        """Counts per kind of one placement reaching :attr:`best_value` (None when infeasible)."""
        if not self.feasible:
            return None
        counts = np.zeros(NUM_KINDS, dtype=np.int64)
        state = 0
        for number in range(1, NUM_NUMBERS + 1):
            for e in range(self.edge_start[number - 1], self.edge_start[number]):
                if self.e_src[e] != state:
                    continue
                ahead = self.backward[self.e_dst[e]]
                if ahead != NEG and ahead + self.e_value[e] == self.backward[state]:
                    for colour in range(NUM_COLOURS):
                        counts[colour * NUM_NUMBERS + number - 1] += self.e_used[e, colour]
                    counts[JOKER] += self.e_used[e, 4]
                    state = self.e_dst[e]
                    break
        return counts

    def addable(self, minimum_value: int = NEG) -> np.ndarray:
        """For each kind: can a placement use one more than the mandatory count, reaching ``minimum_value``?

        One forward/backward pass answers all 53 kinds (the Rummy action mask).
        """
        result = _addable(
            self.forward,
            self.backward,
            self.e_src,
            self.e_dst,
            self.e_used,
            self.e_value,
            self.edge_start,
            self.mandatory,
            int(minimum_value),
        )
        if self.optional[JOKER] and self.jokers_min < self.jokers_max:
            final = slice(self.layer_start[NUM_NUMBERS], self.layer_start[NUM_NUMBERS + 1])
            jokers = self.states[final] // COLOUR_BASE[4]
            alive = (self.backward[final] == 0) & (jokers > self.jokers_min) & (self.forward[final] >= minimum_value)
            result[JOKER] = bool(alive.any())
        return result


def can_partition(counts: Sequence[int] | np.ndarray) -> bool:
    """Whether exactly these tiles (counts per kind) split into valid melds (R3)."""
    return PlayGraph(counts).feasible


def max_tiles_placed(table: Sequence[int] | np.ndarray, rack: Sequence[int] | np.ndarray) -> int | None:
    """Most rack tiles that can join the table so that everything splits into melds (None: table invalid)."""
    best = PlayGraph(table, rack, [1] * NUM_KINDS, joker_weight=1).best_value
    return None if best is None else best - int(np.sum(table))
