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
hand (up to ~10^5 live states, seconds): jokers let far more run/set shapes
survive each column, and there nearly every state is alive. Exact reductions
applied: a joker in a colour's runs while a natural of the same kind sits in
a set is the same edge as the swapped pair (kept once); 3+ runs beyond what
the next number can extend are capped (same future); only the natural splits
that make valid sets are enumerated. For those worst cases the engine's
queries without an objective (after the first play) use depth-first searches
(:func:`addable_kinds`, :func:`fits`) over the same transitions
(:func:`_successors`): a dense table has a split, and a search finds one in a
few hundred nodes; past a node budget the whole graph answers, so every
answer stays exact.

The same layered graph gives, from one forward and one backward pass, the
answer to every "can one more tile of kind k be placed?" question at once
(:meth:`PlayGraph.addable`), which is how the Rummy action mask is computed.

Two more exact reductions serve the engine. Before any graph is built, the
optional tiles that no meld drawn from the whole pool could hold (no two
other colours of their number, no 3-number window of their colour, jokers
filling gaps) are dropped, and a mandatory such tile answers "does not split"
at once (:func:`_prune`): most random hands end there before the first play.
After the first play, a turn's questions all read one graph
(:func:`turn_graph`: the table mandatory, the hand and the closing tile
optional), because an edge of number ``n`` fixes how many naturals of number
``n`` a path places and a state counts the jokers: the pending play's graph is
that graph with the paths placing at least table + pending, and "does this
exact multiset split" is a path placing exactly it (:func:`bounded_paths`,
one forward and one backward pass over the edges, about 0.02 ms). So a turn
builds one graph (about 0.3-0.8 ms) instead of one per decision plus one for
the closing test.

Tile kinds are those of :mod:`burako_env.tiles` (``c * 13 + n - 1``, joker 52).
"""

from __future__ import annotations

import functools
import itertools
import threading
from collections.abc import Sequence

import numba
import numpy as np

from burako_env.tiles import JOKER, NUM_COLOURS, NUM_KINDS, NUM_NUMBERS, tile_name

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

# The tables below are module constants that the compiled functions read as globals (numba
# freezes them into the compiled code), so no call passes them.
#: GROUP_OK as a lookup array [g0, g1, g2, g3, jokers]
GROUP_OK_ARRAY = np.zeros((3, 3, 3, 3, 3), dtype=np.bool_)
for _naturals, _jokers in GROUP_OK:
    GROUP_OK_ARRAY[(*_naturals, _jokers)] = True
#: GROUP_OK by joker count: the rows (g0, g1, g2, g3) of naturals per colour that make valid sets
VALID_SETS = np.zeros((3, 81, 4), dtype=np.int64)
VALID_SETS_COUNT = np.zeros(3, dtype=np.int64)
for _naturals, _jokers in sorted(GROUP_OK):
    VALID_SETS[_jokers, VALID_SETS_COUNT[_jokers]] = _naturals
    VALID_SETS_COUNT[_jokers] += 1
#: joker placements as rows (jokers in the runs of colour 0..3, jokers in sets, total)
SPLITS_ARRAY = np.array([(*split, total) for total in range(3) for split in _JOKER_SPLITS[total]], dtype=np.int64)
#: a state is one int: per colour c, (len-1 runs + 5 len-2 runs + 25 len-3+ runs) * 125**c,
#: then jokers used * 125**4
COLOUR_BASE = np.array([1, 125, 125**2, 125**3, 125**4], dtype=np.int64)
NO_TILES = np.zeros(NUM_KINDS, dtype=np.int64)
UNLIMITED = 2**62
#: states the layered graph may build for the engine's queries after the first play before the
#: depth-first searches take over (a dense table holding jokers can need 10^5)
GRAPH_BUDGET = 3000


@_jit
def _successors(
    number,
    state,
    mand,
    opt,
    weight,
    joker_at_number,
    joker_weight,
    free_jokers,
    jokers_max,
    out_code,
    out_used,
    out_value,
    opt_u,
    opt_code,
    opt_def,
    opt_n,
):
    """The transitions out of ``state`` (a layer-``number - 1`` state) through the tiles of ``number``.

    Written to ``out_code`` (next state), ``out_used`` (naturals per colour, jokers placed) and
    ``out_value``; returns how many, or -1 when they do not fit (the caller grows the buffers).
    The one home of the transition rules, shared by the layered graph and the depth-first search.
    """
    last = number == NUM_NUMBERS
    count_out = 0
    used_jokers = state // COLOUR_BASE[4]
    for row in range(SPLITS_ARRAY.shape[0]):
        placed = SPLITS_ARRAY[row, 5]
        if used_jokers + placed > jokers_max:
            continue
        jokers_left = jokers_max - used_jokers - placed
        ok = True
        for c in range(4):
            code = (state // COLOUR_BASE[c]) % 125
            ones = code % 5
            twos = (code // 5) % 5
            full = code // 25
            kind = c * NUM_NUMBERS + number - 1
            ahead1 = 0
            ahead2 = 0
            if not last:
                ahead1 = mand[kind + 1] + opt[kind + 1]
                ahead2 = mand[kind + 2] + opt[kind + 2] if number + 1 < NUM_NUMBERS else 0
            count = 0
            opt_n[c, 0] = 0
            opt_n[c, 1] = 0
            opt_n[c, 2] = 0
            for used in range(mand[kind], mand[kind] + opt[kind] + 1):
                for in_sets in range(min(used, 2) + 1):
                    if in_sets and SPLITS_ARRAY[row, c]:
                        # a joker in this colour's runs while a natural of the same kind is
                        # in a set: swapping the two gives the same edge (kept once)
                        continue
                    tiles = used - in_sets + SPLITS_ARRAY[row, c]
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
                    new_full = twos + extended
                    deficit = 0
                    if last:
                        new_full = 0  # nothing follows: every run ends here
                    else:
                        # look-ahead: the short runs must be extended at the next number
                        # (and the length-1 runs at the one after)
                        deficit = max(0, new_ones + ones - ahead1)
                        if number + 1 < NUM_NUMBERS:
                            deficit += max(0, new_ones - ahead2)
                        elif new_ones:
                            deficit += 100  # a run of 1 at 12 cannot reach 3 tiles
                        # 3+ runs beyond what the next number can extend just end here:
                        # capping them merges states with the same future (exact)
                        new_full = min(new_full, max(0, ahead1 + jokers_left - new_ones - ones))
                    if deficit > jokers_left:
                        continue
                    k = opt_n[c, in_sets]
                    opt_u[c, in_sets, k] = used
                    opt_code[c, in_sets, k] = new_ones + 5 * ones + 25 * new_full
                    opt_def[c, in_sets, k] = deficit
                    opt_n[c, in_sets] = k + 1
                    count += 1
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
        in_sets_jokers = SPLITS_ARRAY[row, 4]
        # only the splits of naturals between sets that make valid sets (R3) are enumerated
        for t in range(VALID_SETS_COUNT[in_sets_jokers]):
            g0 = VALID_SETS[in_sets_jokers, t, 0]
            g1 = VALID_SETS[in_sets_jokers, t, 1]
            g2 = VALID_SETS[in_sets_jokers, t, 2]
            g3 = VALID_SETS[in_sets_jokers, t, 3]
            if opt_n[0, g0] == 0 or opt_n[1, g1] == 0 or opt_n[2, g2] == 0 or opt_n[3, g3] == 0:
                continue
            for i0 in range(opt_n[0, g0]):
                d0 = opt_def[0, g0, i0]
                if d0 > jokers_left:
                    continue
                for i1 in range(opt_n[1, g1]):
                    d1 = d0 + opt_def[1, g1, i1]
                    if d1 > jokers_left:
                        continue
                    for i2 in range(opt_n[2, g2]):
                        d2 = d1 + opt_def[2, g2, i2]
                        if d2 > jokers_left:
                            continue
                        for i3 in range(opt_n[3, g3]):
                            if d2 + opt_def[3, g3, i3] > jokers_left:
                                continue
                            u0 = opt_u[0, g0, i0]
                            u1 = opt_u[1, g1, i1]
                            u2 = opt_u[2, g2, i2]
                            u3 = opt_u[3, g3, i3]
                            nxt = (
                                opt_code[0, g0, i0]
                                + COLOUR_BASE[1] * opt_code[1, g1, i1]
                                + COLOUR_BASE[2] * opt_code[2, g2, i2]
                                + COLOUR_BASE[3] * opt_code[3, g3, i3]
                                + COLOUR_BASE[4] * (used_jokers + placed)
                            )
                            value = joker_value
                            value += u0 * weight[number - 1]
                            value += u1 * weight[NUM_NUMBERS + number - 1]
                            value += u2 * weight[2 * NUM_NUMBERS + number - 1]
                            value += u3 * weight[3 * NUM_NUMBERS + number - 1]
                            if count_out == out_code.shape[0]:
                                return -1
                            out_code[count_out] = nxt
                            out_used[count_out, 0] = u0
                            out_used[count_out, 1] = u1
                            out_used[count_out, 2] = u2
                            out_used[count_out, 3] = u3
                            out_used[count_out, 4] = placed
                            out_value[count_out] = value
                            count_out += 1
    return count_out


@_jit
def _build(
    mand,
    opt,
    weight,
    joker_at_number,
    joker_weight,
    free_jokers,
    jokers_max,
    max_states,
):
    """Forward pass: the layered graph's states, best values so far and edges (see PlayGraph).

    Past ``max_states`` states it stops early and sets ``layer_start[-1] = -1`` (the caller asked for a
    cheap answer or none)."""
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
    # a colour's options at this number, by how many of its naturals go to sets (0..2)
    opt_u = np.empty((4, 3, 3), np.int64)
    opt_code = np.empty((4, 3, 3), np.int64)
    opt_def = np.empty((4, 3, 3), np.int64)
    opt_n = np.zeros((4, 3), np.int64)
    out_code = np.empty(1024, np.int64)
    out_used = np.empty((1024, 5), np.int64)
    out_value = np.empty(1024, np.int64)
    hash_mask = 1023
    hash_stamp = np.zeros(hash_mask + 1, np.int64)
    hash_index = np.empty(hash_mask + 1, np.int64)
    for number in range(1, NUM_NUMBERS + 1):
        lo = layer_start[number - 1]
        hi = layer_start[number]
        stamp = number  # slots of the hash table written in this layer (no clearing between layers)
        edge_start[number - 1] = n_edges
        for si in range(lo, hi):
            state = states[si]
            count = -1
            while count < 0:
                count = _successors(
                    number,
                    state,
                    mand,
                    opt,
                    weight,
                    joker_at_number,
                    joker_weight,
                    free_jokers,
                    jokers_max,
                    out_code,
                    out_used,
                    out_value,
                    opt_u,
                    opt_code,
                    opt_def,
                    opt_n,
                )
                if count < 0:
                    out_code = np.empty(2 * out_code.shape[0], np.int64)
                    out_used = np.empty((out_code.shape[0], 5), np.int64)
                    out_value = np.empty(out_code.shape[0], np.int64)
            for t in range(count):
                nxt = out_code[t]
                value = out_value[t]
                # open-addressing hash of this layer's states (faster than a typed dict)
                slot = (nxt * 2654435761) & hash_mask
                while hash_stamp[slot] == stamp and states[hash_index[slot]] != nxt:
                    slot = (slot + 1) & hash_mask
                if hash_stamp[slot] == stamp:
                    di = hash_index[slot]
                else:
                    if n_states == states.shape[0]:
                        states = np.concatenate((states, np.empty(n_states, np.int64)))
                        forward = np.concatenate((forward, np.empty(n_states, np.int64)))
                    di = n_states
                    hash_stamp[slot] = stamp
                    hash_index[slot] = di
                    states[di] = nxt
                    forward[di] = NEG
                    n_states += 1
                    if 2 * (n_states - hi) > hash_mask:
                        # grow and re-insert this layer's states
                        hash_mask = 2 * hash_mask + 1
                        hash_stamp = np.zeros(hash_mask + 1, np.int64)
                        hash_index = np.empty(hash_mask + 1, np.int64)
                        for dj in range(hi, n_states):
                            slot = (states[dj] * 2654435761) & hash_mask
                            while hash_stamp[slot] == stamp:
                                slot = (slot + 1) & hash_mask
                            hash_stamp[slot] = stamp
                            hash_index[slot] = dj
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
                e_used[n_edges, 0] = out_used[t, 0]
                e_used[n_edges, 1] = out_used[t, 1]
                e_used[n_edges, 2] = out_used[t, 2]
                e_used[n_edges, 3] = out_used[t, 3]
                e_used[n_edges, 4] = out_used[t, 4]
                e_value[n_edges] = value
                n_edges += 1
        layer_start[number + 1] = n_states
        if n_states > max_states:
            layer_start[NUM_NUMBERS + 1] = -1
            break
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
def _dfs(mand, opt, budget, proven, codes, used, order, dead_keys, dead_stamp):
    """Depth-first search for one complete placement (no objective): 1 found, 0 none, -1 over ``budget`` nodes.

    Successors are tried with the most tiles first, so the placement found tends to use many optional
    tiles; each optional kind it uses is marked in ``proven`` (it can join a legal placement), the
    joker too when it places more than the mandatory jokers. Dead states are remembered in an
    open-addressing set (``dead_keys``/``dead_stamp``, reused between calls: ``dead_stamp[-1]`` counts
    the calls, so nothing is cleared). ``codes``/``used``/``order`` are per-depth successor buffers.
    """
    cap = codes.shape[1]
    counts = np.zeros(NUM_NUMBERS, np.int64)
    position = np.zeros(NUM_NUMBERS, np.int64)
    path = np.zeros(NUM_NUMBERS + 1, np.int64)
    out_code = np.empty(cap, np.int64)
    out_used = np.empty((cap, 5), np.int64)
    out_value = np.empty(cap, np.int64)
    tiles = np.empty(cap, np.int64)
    opt_u = np.empty((4, 3, 3), np.int64)
    opt_code = np.empty((4, 3, 3), np.int64)
    opt_def = np.empty((4, 3, 3), np.int64)
    opt_n = np.zeros((4, 3), np.int64)
    weight = np.zeros(NUM_KINDS, np.int64)
    jokers_max = min(mand[JOKER] + opt[JOKER], 2)
    jokers_min = mand[JOKER]
    table_mask = dead_keys.shape[0] - 2  # the last slot holds the call counter
    dead_stamp[-1] += 1
    stamp = dead_stamp[-1]
    nodes = 0
    depth = 0  # expanding the state path[depth] of layer depth through number depth + 1
    expand = True
    while True:
        if expand:
            nodes += 1
            if nodes > budget:
                return -1
            count = _successors(
                depth + 1,
                path[depth],
                mand,
                opt,
                weight,
                False,
                0,
                0,
                jokers_max,
                out_code,
                out_used,
                out_value,
                opt_u,
                opt_code,
                opt_def,
                opt_n,
            )
            if count < 0:
                return -1
            for t in range(count):
                codes[depth, t] = out_code[t]
                tiles[t] = out_used[t, 0] + out_used[t, 1] + out_used[t, 2] + out_used[t, 3] + out_used[t, 4]
                for k in range(4):
                    used[depth, t, k] = out_used[t, k]
                # insertion by tile count, most tiles first (stable)
                j = t
                while j > 0 and tiles[order[depth, j - 1]] < tiles[t]:
                    order[depth, j] = order[depth, j - 1]
                    j -= 1
                order[depth, j] = t
            counts[depth] = count
            position[depth] = 0
            expand = False
        if position[depth] == counts[depth]:
            key = depth * 1_000_000_000 + path[depth]
            slot = (key * 2654435761) & table_mask
            while dead_stamp[slot] == stamp:
                slot = (slot + 1) & table_mask
            dead_stamp[slot] = stamp
            dead_keys[slot] = key
            if depth == 0:
                return 0
            depth -= 1
            continue
        t = order[depth, position[depth]]
        position[depth] += 1
        nxt = codes[depth, t]
        if depth == NUM_NUMBERS - 1:
            if nxt // COLOUR_BASE[4] < jokers_min:
                continue
            # found: mark the optional kinds this placement uses
            for d in range(NUM_NUMBERS):
                chosen = order[d, position[d] - 1]
                for c in range(4):
                    kind = c * NUM_NUMBERS + d
                    if used[d, chosen, c] > mand[kind]:
                        proven[kind] = True
            if nxt // COLOUR_BASE[4] > jokers_min:
                proven[JOKER] = True
            return 1
        key = (depth + 1) * 1_000_000_000 + nxt
        slot = (key * 2654435761) & table_mask
        known_dead = False
        while dead_stamp[slot] == stamp:
            if dead_keys[slot] == key:
                known_dead = True
                break
            slot = (slot + 1) & table_mask
        if known_dead:
            continue
        depth += 1
        path[depth] = nxt
        expand = True


@_jit
def _backward(states, layer_start, e_src, e_dst, e_value, jokers_min):
    """Best value still to come from each state (NEG when no valid end is reachable)."""
    backward = np.full(states.shape[0], NEG, np.int64)
    for si in range(layer_start[NUM_NUMBERS], layer_start[NUM_NUMBERS + 1]):
        state = states[si]
        open_short = False
        for c in range(4):
            if ((state // COLOUR_BASE[c]) % 125) % 25 != 0:
                open_short = True
        if not open_short and state // COLOUR_BASE[4] >= jokers_min:
            backward[si] = 0
    for e in range(e_src.shape[0] - 1, -1, -1):
        ahead = backward[e_dst[e]]
        if ahead != NEG and ahead + e_value[e] > backward[e_src[e]]:
            backward[e_src[e]] = ahead + e_value[e]
    return backward


@_jit
def _addable(states, forward, backward, layer_start, e_src, e_dst, e_used, e_value, edge_start, mand, opt, minimum):
    """For each kind: does a complete placement reaching ``minimum`` use more than the mandatory count?"""
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
    jokers_min = mand[JOKER]
    if opt[JOKER] > 0 and jokers_min < 2:
        for si in range(layer_start[NUM_NUMBERS], layer_start[NUM_NUMBERS + 1]):
            if backward[si] == 0 and states[si] // COLOUR_BASE[4] > jokers_min and forward[si] >= minimum:
                result[JOKER] = True
    return result


@_jit
def _mask_query(mand, opt, weight, joker_at_number, free_jokers, minimum, max_states):
    """The Rummy mask's two questions in one call: which kinds can still join (``addable``) and the best
    value of the mandatory tiles alone (NEG: they do not split); ``ok`` False: over ``max_states``."""
    jokers_max = min(mand[JOKER] + opt[JOKER], 2)
    states, forward, layer_start, e_src, e_dst, e_used, e_value, edge_start = _build(
        mand, opt, weight, joker_at_number, 0, free_jokers, jokers_max, max_states
    )
    if layer_start[NUM_NUMBERS + 1] < 0:
        return np.zeros(NUM_KINDS, np.bool_), NEG, False
    backward = _backward(states, layer_start, e_src, e_dst, e_value, mand[JOKER])
    addable = _addable(
        states, forward, backward, layer_start, e_src, e_dst, e_used, e_value, edge_start, mand, opt, minimum
    )
    alone = _mandatory_only(states, layer_start, e_src, e_dst, e_used, e_value, edge_start, mand, mand[JOKER])
    return addable, alone, True


@_jit
def _best_value(mand, opt, weight, joker_at_number, free_jokers, max_states):
    """The best objective of a placement (NEG when none) and whether it stayed within ``max_states``."""
    jokers_max = min(mand[JOKER] + opt[JOKER], 2)
    states, _forward, layer_start, e_src, e_dst, _e_used, e_value, _edge_start = _build(
        mand, opt, weight, joker_at_number, 0, free_jokers, jokers_max, max_states
    )
    if layer_start[NUM_NUMBERS + 1] < 0:
        return NEG, False
    return _backward(states, layer_start, e_src, e_dst, e_value, mand[JOKER])[0], True


def mask_query(
    mandatory: np.ndarray,
    optional: np.ndarray,
    weights: np.ndarray,
    joker_at_number: bool,
    free_jokers: int,
    minimum: int,
) -> tuple[np.ndarray, int | None]:
    """(kinds that can join a placement reaching ``minimum``, best value of the mandatory tiles alone or None).

    The engine's fast path (int64 arrays of 53 counts, no checks): one compiled call per mask.
    """
    optional, splittable = _prune(mandatory, optional)
    if not splittable:
        return np.zeros(NUM_KINDS, np.bool_), None
    addable, alone, _ok = _mask_query(mandatory, optional, weights, joker_at_number, free_jokers, minimum, UNLIMITED)
    return addable, None if alone == NEG else int(alone)


def best_value(mandatory: np.ndarray, weights: np.ndarray, joker_at_number: bool, free_jokers: int) -> int | None:
    """Best value of a placement of exactly ``mandatory`` (None: it does not split). Engine fast path."""
    if not _prune(mandatory, NO_TILES)[1]:
        return None
    value, _ok = _best_value(mandatory, NO_TILES, weights, joker_at_number, free_jokers, UNLIMITED)
    return None if value == NEG else int(value)


@_jit
def _mandatory_only(states, layer_start, e_src, e_dst, e_used, e_value, edge_start, mand, jokers_min):
    """Best value over the paths that place exactly the mandatory tiles (NEG when there is none)."""
    best = np.full(states.shape[0], NEG, np.int64)
    best[0] = 0
    for number in range(1, NUM_NUMBERS + 1):
        for e in range(edge_start[number - 1], edge_start[number]):
            here = best[e_src[e]]
            if here == NEG:
                continue
            exact = True
            for c in range(4):
                if e_used[e, c] != mand[c * NUM_NUMBERS + number - 1]:
                    exact = False
                    break
            if exact and here + e_value[e] > best[e_dst[e]]:
                best[e_dst[e]] = here + e_value[e]
    result = NEG
    for si in range(layer_start[NUM_NUMBERS], layer_start[NUM_NUMBERS + 1]):
        state = states[si]
        open_short = False
        for c in range(4):
            if ((state // COLOUR_BASE[c]) % 125) % 25 != 0:
                open_short = True
        if not open_short and state // COLOUR_BASE[4] == jokers_min and best[si] > result:
            result = best[si]
    return result


@_jit
def _prune(mand, opt):
    """Drop the optional tiles that no meld drawn from ``mand + opt`` can hold (exact: such a tile is in
    no partition), repeated until nothing changes. Returns the optional counts left and False when a
    mandatory tile is such a tile (nothing splits). A natural needs, from the pool, two other colours
    of its number or two more tiles of a 3-number window of its colour, jokers filling gaps (R3)."""
    left = opt.copy()
    jokers = min(mand[JOKER] + opt[JOKER], 2)
    changed = True
    while changed:
        changed = False
        for kind in range(JOKER):
            if mand[kind] + left[kind] == 0:
                continue
            colour = kind // NUM_NUMBERS
            number = kind % NUM_NUMBERS  # 0-based
            others = 0
            for c in range(4):
                if c != colour and mand[c * NUM_NUMBERS + number] + left[c * NUM_NUMBERS + number] > 0:
                    others += 1
            ok = others + jokers >= 2
            start = max(0, number - 2)
            while not ok and start <= number and start + 2 < NUM_NUMBERS:
                missing = 0
                for step in range(3):
                    other = colour * NUM_NUMBERS + start + step
                    if start + step != number and mand[other] + left[other] == 0:
                        missing += 1
                ok = missing <= jokers
                start += 1
            if not ok:
                if mand[kind] > 0:
                    return left, False
                left[kind] = 0
                changed = True
    return left, True


#: nodes a depth-first search may expand before the exact layered graph takes over
DFS_BUDGET = 4000


#: dead states: at most DFS_BUDGET of them, so a table of 2 x 4096 slots stays at most half full
_DEAD_SLOTS = 8192 + 1


class _DfsBuffers(threading.local):
    """The searches' reusable buffers, one set per thread: ``_dfs`` runs without the GIL
    (``nogil``), so two threads sharing one set would overwrite each other's search."""

    def __init__(self, cap: int = 1024) -> None:
        self.codes = np.empty((NUM_NUMBERS, cap), np.int64)
        self.used = np.empty((NUM_NUMBERS, cap, 4), np.int8)
        self.order = np.empty((NUM_NUMBERS, cap), np.int64)
        self.dead_keys = np.zeros(_DEAD_SLOTS, np.int64)
        self.dead_stamp = np.zeros(_DEAD_SLOTS, np.int64)


_DFS_BUFFERS = _DfsBuffers()


def _search(mandatory: np.ndarray, optional: np.ndarray, proven: np.ndarray) -> int:
    b = _DFS_BUFFERS
    return int(_dfs(mandatory, optional, DFS_BUDGET, proven, b.codes, b.used, b.order, b.dead_keys, b.dead_stamp))


def fits(mandatory: np.ndarray, graph_budget: int = GRAPH_BUDGET) -> bool:
    """Whether exactly these tiles split into melds (no objective): the layered graph while it stays
    under ``graph_budget`` states, else a depth-first search (quick to find a split when there is
    one), else the whole graph. ``graph_budget=0``: the caller already knows the graph is large."""
    if not _prune(mandatory, NO_TILES)[1]:
        return False
    value, ok = _best_value(mandatory, NO_TILES, NO_TILES, False, 0, graph_budget)
    if ok:
        return bool(value != NEG)
    found = _search(mandatory, NO_TILES, np.zeros(NUM_KINDS, np.bool_))
    if found < 0:
        return best_value(mandatory, NO_TILES, False, 0) is not None
    return found == 1


def addable_kinds(
    mandatory: np.ndarray, optional: np.ndarray, alone: bool = True, graph_budget: int = GRAPH_BUDGET
) -> tuple[np.ndarray, bool]:
    """:func:`mask_query` without an objective (after the first play), by depth-first searches.

    One search for a placement using as many optional tiles as it can proves every kind it uses;
    each kind still open gets its own search with one copy made mandatory. The layered graph answers
    first when it stays under ``GRAPH_BUDGET`` states (the common case, and cheaper there); a search
    past its budget hands the whole question to the unbounded graph, so the answer is always exact. ``alone=False``
    skips the second answer (whether the mandatory tiles split alone; then False); ``graph_budget``
    is the graph's budget (0: the caller knows it is large, go straight to the searches).
    """
    optional, splittable = _prune(mandatory, optional)
    if not splittable:
        return np.zeros(NUM_KINDS, np.bool_), False
    addable, value, ok = _mask_query(mandatory, optional, NO_TILES, False, 0, NEG, graph_budget)
    if ok:
        return addable, bool(value != NEG)
    proven = np.zeros(NUM_KINDS, np.bool_)
    found = _search(mandatory, optional, proven)
    if found == 0:
        return proven, False  # nothing splits, not even the mandatory tiles alone
    if found > 0:
        candidates = [int(k) for k in np.flatnonzero(optional) if not proven[k]]
        if JOKER in candidates and mandatory[JOKER] >= 2:
            candidates.remove(JOKER)
        for kind in candidates:
            if proven[kind]:
                continue
            more, fewer = mandatory.copy(), optional.copy()
            more[kind] += 1
            fewer[kind] -= 1
            found = _search(more, fewer, proven)
            if found < 0:
                break
            proven[kind] = found == 1
    if found >= 0:
        if not alone:
            return proven, False
        fits_alone = _search(mandatory, NO_TILES, np.zeros(NUM_KINDS, np.bool_))
        if fits_alone >= 0:
            return proven, fits_alone == 1
    addable, value = mask_query(mandatory, optional, NO_TILES, False, 0, NEG)
    return addable, value is not None


#: states a turn's graph (:func:`turn_graph`) may hold; past it each step's question is asked on its own
TURN_GRAPH_BUDGET = 3000


def turn_graph(table: np.ndarray, hand: np.ndarray, closing_tile: int) -> tuple[np.ndarray, ...] | None:
    """The layered graph of every placement of the table plus some hand tiles (and maybe the closing tile).

    Built once a turn after the first play (the table and the hand only change when the turn
    ends): every question of that turn is a bound on how many tiles of each kind a path uses
    (:func:`bounded_paths`), because an edge of number ``n`` fixes the counts of the naturals of
    number ``n`` and a state counts the jokers. The graph of ``(table + pending, hand - pending)``
    is this graph with the paths using at least ``table + pending``; with the closing tile as an
    extra optional tile, its look-ahead prunes and merges a little less, which keeps every
    answer exact (both are exact representations of the same placements). ``None`` when it
    would hold more than :data:`TURN_GRAPH_BUDGET` states.
    """
    optional = hand.copy()
    if closing_tile >= 0:
        optional[closing_tile] += 1
    optional, _splittable = _prune(table, optional)  # the table always splits
    jokers_max = min(int(table[JOKER] + optional[JOKER]), 2)
    graph = _build(
        table,
        optional,
        NO_TILES,
        False,
        0,
        0,
        jokers_max,
        TURN_GRAPH_BUDGET,
    )
    states, _forward, layer_start, e_src, e_dst, e_used, _e_value, edge_start = graph
    if layer_start[NUM_NUMBERS + 1] < 0:
        return None
    return states, layer_start, e_src, e_dst, e_used, edge_start


@_jit
def _bounded_paths(states, layer_start, e_src, e_dst, e_used, edge_start, low, high):
    """Over the complete paths placing between ``low`` and ``high`` tiles of every kind: which kinds
    some path places more than ``low`` of, and whether there is a path at all."""
    n_edges = e_src.shape[0]
    reach = np.zeros(states.shape[0], np.bool_)
    alive = np.zeros(states.shape[0], np.bool_)
    usable = np.zeros(n_edges, np.bool_)
    reach[0] = True
    for number in range(1, NUM_NUMBERS + 1):
        for e in range(edge_start[number - 1], edge_start[number]):
            if not reach[e_src[e]]:
                continue
            inside = True
            for c in range(4):
                kind = c * NUM_NUMBERS + number - 1
                if e_used[e, c] < low[kind] or e_used[e, c] > high[kind]:
                    inside = False
                    break
            if inside:
                usable[e] = True
                reach[e_dst[e]] = True
    addable = np.zeros(NUM_KINDS, np.bool_)
    for si in range(layer_start[NUM_NUMBERS], layer_start[NUM_NUMBERS + 1]):
        if not reach[si]:
            continue
        state = states[si]
        open_short = False
        for c in range(4):
            if ((state // COLOUR_BASE[c]) % 125) % 25 != 0:
                open_short = True
        jokers = state // COLOUR_BASE[4]
        if not open_short and low[JOKER] <= jokers <= high[JOKER]:
            alive[si] = True
            if jokers > low[JOKER]:
                addable[JOKER] = True
    for number in range(NUM_NUMBERS, 0, -1):
        for e in range(edge_start[number] - 1, edge_start[number - 1] - 1, -1):
            if usable[e] and alive[e_dst[e]]:
                alive[e_src[e]] = True
                for c in range(4):
                    kind = c * NUM_NUMBERS + number - 1
                    if e_used[e, c] > low[kind]:
                        addable[kind] = True
    return addable, alive[0]


def bounded_paths(graph: tuple[np.ndarray, ...], low: np.ndarray, high: np.ndarray) -> tuple[np.ndarray, bool]:
    """(kinds some placement of ``graph`` within ``low``..``high`` uses more than ``low`` of, whether one exists).

    ``low == high`` asks whether exactly those tiles split into melds.
    """
    states, layer_start, e_src, e_dst, e_used, edge_start = graph
    addable, feasible = _bounded_paths(states, layer_start, e_src, e_dst, e_used, edge_start, low, high)
    return addable, bool(feasible)


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
        over = np.flatnonzero(mand[:JOKER] + opt[:JOKER] > 2)
        if over.size:  # the compiled graph's tables hold 0..2 copies of a kind: more would write past them
            names = ", ".join(f"{int(mand[k] + opt[k])} x {tile_name(int(k))}" for k in over)
            raise ValueError(f"at most 2 copies of each tile (R1: two of each, 2 jokers), got {names}")
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
            UNLIMITED,
        )
        self.backward = _backward(self.states, self.layer_start, self.e_src, self.e_dst, self.e_value, self.jokers_min)

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

    def mandatory_only_value(self) -> int | None:
        """The best objective of a placement of the mandatory tiles alone (None: they do not split).

        The same answer as a graph built without optional tiles, read from this
        one (the Rummy mask asks both questions of the same pending play).
        """
        value = _mandatory_only(
            self.states,
            self.layer_start,
            self.e_src,
            self.e_dst,
            self.e_used,
            self.e_value,
            self.edge_start,
            self.mandatory,
            self.jokers_min,
        )
        return None if value == NEG else int(value)

    def addable(self, minimum_value: int = NEG) -> np.ndarray:
        """For each kind: can a placement use one more than the mandatory count, reaching ``minimum_value``?

        One forward/backward pass answers all 53 kinds (the Rummy action mask).
        """
        return _addable(
            self.states,
            self.forward,
            self.backward,
            self.layer_start,
            self.e_src,
            self.e_dst,
            self.e_used,
            self.e_value,
            self.edge_start,
            self.mandatory,
            self.optional,
            int(minimum_value),
        )


def can_partition(counts: Sequence[int] | np.ndarray) -> bool:
    """Whether exactly these tiles (counts per kind) split into valid melds (R3)."""
    return PlayGraph(counts).feasible


def max_tiles_placed(table: Sequence[int] | np.ndarray, rack: Sequence[int] | np.ndarray) -> int | None:
    """Most rack tiles that can join the table so that everything splits into melds (None: table invalid)."""
    best = PlayGraph(table, rack, [1] * NUM_KINDS, joker_weight=1).best_value
    return None if best is None else best - int(np.sum(table))
