"""The hand-written heuristics (``planner``, ``greedy``) compiled on the flat
state of :mod:`burako_env.fast`: the same decisions, move for move, as
:class:`agents.heuristic.PlannerPolicy` and :class:`~agents.heuristic.GreedyPolicy`
(``tests/test_fast_planner.py`` plays positions of every preset through both).

Why: the heuristics are the training league's opponents, the warm start's
teacher and the yardstick of every evaluation, and in Python they were the
rollout's limit where they play most games: 0.69 of the reference league's
rollout at the planner's 80% share, ~480 µs a decision with its view, where a
step of the core costs a few µs. Here a decision reads the flat state
directly (no readable mirror, no determinization, no lists): ~40 µs, and that
rollout's share 0.20 (``bench/README.md``, "The league's heuristics compiled").

What is not re-implemented: every fact about melds and rules comes from the
readable code, tabulated once per (rules, player count, weights) by
:func:`planner_tables` over the compiled core's meld universe: each meld's
shape, its worth now (``facts.meld_progress``), its first natural outcome per
added kind; the patterns' tile values; the tile geometry (``facts.NEIGHBOURS_1``
...) and the per-kind pattern lists of ``facts.RuleFacts``. The kernels are the
decision rules of ``agents/heuristic/policies.py``, ``position.py`` and
``simulation.py``, in their order, with every sum added in the same order so
the scores are the same floats.

Kernel arguments: ``st`` the int32 state, ``T`` the core's kernel tables
(``FastTables.kernel_args``), ``H`` this module's tables (:class:`PlannerTables`'s
``kernel_args``, read by the ``H_*`` indices), ``mask`` the int8 legal mask.
"""

from __future__ import annotations

import dataclasses
import functools
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numba
import numpy as np

from agents.heuristic import (
    GREEDY_WEIGHTS,
    NEG,
    NEIGHBOURS_1,
    NEIGHBOURS_2,
    PLANNER_WEIGHTS,
    SAME_NUMBER,
    HeuristicWeights,
    meld_progress,
    resolve_weights,
    rule_facts,
)
from agents.heuristic import facts as heuristic_facts
from agents.heuristic import simulation as heuristic_simulation
from agents.heuristic.simulation import MAX_ROUNDS
from burako_env import fast as F
from burako_env import melds as melds_module
from burako_env import tiles as tiles_module
from burako_env.fast import FastGame, FastTables, fast_tables, meld_universe
from burako_env.melds import CANASTA_LENGTH
from burako_env.rules import Rules
from burako_env.tiles import JOKER, NUM_COLOURS, NUM_NUMBERS, NUM_POSITIONS, WILD_KINDS, kind_at, kind_of

_jit = functools.partial(numba.njit, cache=True, nogil=True)
NK = F.NK

#: the weights the kernels read, in the order of the float vector ``H[H_WEIGHTS]``
#: (``canasta_share`` is read through the melds' worth, ``H[H_PROGRESS]``)
WEIGHT_NAMES = (
    "mean_tile_value",
    "new_meld_bonus",
    "danger_stock",
    "danger_hand_close_ready",
    "danger_hand",
    "close_late_stock",
    "feed_next_side",
    "feed_other_side",
    "take_threshold",
    "take_threshold_blind",
    "pile_wild_value",
    "pile_material_per_tile",
    "pile_danger_share",
    "pile_delay_per_tile",
    "going_out_size",
    "privilege_keep_threshold",
    "choose_clean",
    "choose_extension",
    "choose_room",
    "pile_top_first",
    "natural_add_base",
    "natural_add_per_length",
    "canasta_completion",
    "wild_on_clean_canasta",
    "natural_meld_base",
    "meld_extension",
    "run_meld_bonus",
    "joker_meld_cost",
    "wild_add_per_length",
    "greedy_wild_add_base",
    "greedy_wild_add_canasta",
    "greedy_wild_meld_base",
    "wild_finish_canasta",
    "wild_finish_dirty_going_out",
    "wild_finish_dirty_hold",
    "wild_going_out_base",
    "wild_add_hold",
    "wild_meld_long_extension",
    "wild_meld_long_base",
    "wild_meld_hold",
    "add_per_meld_length",
    "wild_keep",
    "keep_fits_own",
    "keep_neighbour",
    "keep_far_neighbour",
    "keep_connected",
    "keep_run_duplicate_share",
    "keep_set_partner_distinct",
    "keep_set_partner",
    "keep_pattern_complete",
    "keep_pattern_live",
    "keep_pattern_duplicate_share",
    "keep_pattern_cap",
    "feed_base",
    "feed_per_pile_tile",
    "feed_known_share",
    "feed_wild",
    "dump_share",
    "dump_danger_share",
    "dump_late_stock",
    "dump_late_share",
)
(
    W_MEAN_TILE_VALUE,
    W_NEW_MELD_BONUS,
    W_DANGER_STOCK,
    W_DANGER_HAND_CLOSE_READY,
    W_DANGER_HAND,
    W_CLOSE_LATE_STOCK,
    W_FEED_NEXT_SIDE,
    W_FEED_OTHER_SIDE,
    W_TAKE_THRESHOLD,
    W_TAKE_THRESHOLD_BLIND,
    W_PILE_WILD_VALUE,
    W_PILE_MATERIAL_PER_TILE,
    W_PILE_DANGER_SHARE,
    W_PILE_DELAY_PER_TILE,
    W_GOING_OUT_SIZE,
    W_PRIVILEGE_KEEP_THRESHOLD,
    W_CHOOSE_CLEAN,
    W_CHOOSE_EXTENSION,
    W_CHOOSE_ROOM,
    W_PILE_TOP_FIRST,
    W_NATURAL_ADD_BASE,
    W_NATURAL_ADD_PER_LENGTH,
    W_CANASTA_COMPLETION,
    W_WILD_ON_CLEAN_CANASTA,
    W_NATURAL_MELD_BASE,
    W_MELD_EXTENSION,
    W_RUN_MELD_BONUS,
    W_JOKER_MELD_COST,
    W_WILD_ADD_PER_LENGTH,
    W_GREEDY_WILD_ADD_BASE,
    W_GREEDY_WILD_ADD_CANASTA,
    W_GREEDY_WILD_MELD_BASE,
    W_WILD_FINISH_CANASTA,
    W_WILD_FINISH_DIRTY_GOING_OUT,
    W_WILD_FINISH_DIRTY_HOLD,
    W_WILD_GOING_OUT_BASE,
    W_WILD_ADD_HOLD,
    W_WILD_MELD_LONG_EXTENSION,
    W_WILD_MELD_LONG_BASE,
    W_WILD_MELD_HOLD,
    W_ADD_PER_MELD_LENGTH,
    W_WILD_KEEP,
    W_KEEP_FITS_OWN,
    W_KEEP_NEIGHBOUR,
    W_KEEP_FAR_NEIGHBOUR,
    W_KEEP_CONNECTED,
    W_KEEP_RUN_DUPLICATE_SHARE,
    W_KEEP_SET_PARTNER_DISTINCT,
    W_KEEP_SET_PARTNER,
    W_KEEP_PATTERN_COMPLETE,
    W_KEEP_PATTERN_LIVE,
    W_KEEP_PATTERN_DUPLICATE_SHARE,
    W_KEEP_PATTERN_CAP,
    W_FEED_BASE,
    W_FEED_PER_PILE_TILE,
    W_FEED_KNOWN_SHARE,
    W_FEED_WILD,
    W_DUMP_SHARE,
    W_DUMP_DANGER_SHARE,
    W_DUMP_LATE_STOCK,
    W_DUMP_LATE_SHARE,
) = range(len(WEIGHT_NAMES))

#: the int vector ``H[H_FLAGS]``: the style, then the rules fields the decision rules read
FLAG_NAMES = (
    "planner",
    "sets_allowed",
    "set_colours_distinct",
    "close_requires_clean_canasta",
    "closing_bonus",
    "muerto_penalty",
)
(G_PLANNER, G_SETS_ALLOWED, G_SET_COLOURS_DISTINCT, G_CLOSE_REQUIRES_CLEAN, G_CLOSING_BONUS, G_MUERTO_PENALTY) = range(
    len(FLAG_NAMES)
)

#: the columns of ``H[H_MELD]``, one row per meld of the core's universe (``melds.Meld``'s fields)
MELD_COLUMNS = ("is_run", "colour", "number", "lo", "hi", "wild_kind", "wild_pos", "length", "clean", "is_canasta")
(M_IS_RUN, M_COLOUR, M_NUMBER, M_LO, M_HI, M_WILD_KIND, M_WILD_POS, M_LENGTH, M_CLEAN, M_IS_CANASTA) = range(
    len(MELD_COLUMNS)
)

#: the position of each table in ``H`` (:class:`PlannerTables`)
(
    H_WEIGHTS,
    H_FLAGS,
    H_MELD,
    H_SET_COLOURS,
    H_PROGRESS,
    H_FIRST_NATURAL,
    H_PATTERN_VALUE,
    H_NATURAL_ALLOWED,
    H_NATURAL_WITH,
    H_NATURAL_OTHERS,
    H_NATURAL_PARTNERS,
    H_NEIGHBOURS_1,
    H_NEIGHBOURS_2,
    H_SAME_NUMBER,
    H_KIND_AT,
    H_KIND_OF,
    H_WILD_KINDS,
    H_FIRST_KIND_START,
    H_FIRST_KIND_PATTERNS,
) = range(19)

#: melds a look-ahead may hold: every slot, and one new meld per round
SIM_MELDS = F.SLOTS + MAX_ROUNDS


def _padded(rows: list[list[Any]], depth: int = 0) -> np.ndarray:
    """Ragged rows as one int64 array padded with -1 (``depth``: the length of a
    last axis, for rows of tuples)."""
    longest = max((len(r) for r in rows), default=0)
    shape = (len(rows), max(longest, 1)) + ((depth,) if depth else ())
    out = np.full(shape, -1, dtype=np.int64)
    for i, row in enumerate(rows):
        for j, item in enumerate(row):
            out[i, j] = item
    return out


def _csr_by_first_kind(pattern_kinds: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The patterns by their first (lowest) kind, ascending: a pattern a hand holds is among those of
    a kind the hand holds, so a look-ahead reads ~13 kinds' lists, not all 1,552 patterns."""
    first = pattern_kinds[:, 0]
    order = np.argsort(first, kind="stable").astype(np.int64)
    start = np.zeros(NK + 1, dtype=np.int64)
    np.cumsum(np.bincount(first, minlength=NK), out=start[1:])
    return start, order


@dataclasses.dataclass(frozen=True)
class PlannerTables:
    """The compiled heuristics' tables for one (rules, player count, weights, style)."""

    core: FastTables
    weights: HeuristicWeights
    planner: bool
    kernel_args: tuple[np.ndarray, ...]


@functools.lru_cache(maxsize=32)
def planner_tables(rules: Rules, num_players: int, weights: HeuristicWeights, planner: bool) -> PlannerTables:
    """Tabulate what the decision rules read (module docstring); cached."""
    core = fast_tables(rules, num_players)
    facts = rule_facts(rules)
    universe, _ = meld_universe()
    n = len(universe)
    meld = np.zeros((n, len(MELD_COLUMNS)), dtype=np.int64)
    set_colours = np.zeros((n, NUM_COLOURS), dtype=np.int64)
    progress = np.zeros(n, dtype=np.float64)
    for i, m in enumerate(universe):
        meld[i] = (m.is_run, m.colour, m.number, m.lo, m.hi, m.wild_kind, m.wild_pos, m.length, m.clean, m.is_canasta)
        set_colours[i] = m.set_colours
        progress[i] = meld_progress(m, facts, weights)
    named = core.named
    outcomes, counts = named.outcomes, named.outcome_count
    # the first outcome that adds the kind as a natural (the meld keeps its wild: melds.is_natural_addition)
    first_natural = np.full((n, NK), -1, dtype=np.int32)
    for j in (1, 0):  # the first one wins: written last
        o = outcomes[:, :, j]
        natural = (counts > j) & (meld[np.maximum(o, 0), M_WILD_KIND] == meld[:, None, M_WILD_KIND])
        first_natural[natural] = o[natural]
    natural_with = [[i for i, _kinds in facts.natural_with[k]] for k in range(NK)]
    # the tiles a player must hold beside a kind to meld it: one or two kinds (-1 pads)
    assert all(1 <= len(p) <= 2 for row in facts.natural_partners for p in row)
    partner_rows = [[tuple(p) + (-1,) * (2 - len(p)) for p in facts.natural_partners[k]] for k in range(NK)]
    w = dataclasses.asdict(weights)
    flags = (
        int(planner),
        int(rules.sets_allowed),
        int(rules.set_colours_distinct),
        int(rules.close_requires_clean_canasta),
        int(rules.closing_bonus),
        int(rules.muerto_penalty),
    )
    args = (
        np.array([float(w[name]) for name in WEIGHT_NAMES], dtype=np.float64),
        np.array(flags, dtype=np.int64),
        meld,
        set_colours,
        progress,
        first_natural,
        np.array(facts.pattern_value, dtype=np.int64),
        facts.natural_allowed.astype(np.uint8),
        _padded(natural_with),
        _padded([[tuple(int(x) for x in o) for o in facts.natural_others[k]] for k in range(NK)], 3),
        _padded(partner_rows, 2),
        _padded([list(x) for x in NEIGHBOURS_1]),
        _padded([list(x) for x in NEIGHBOURS_2]),
        _padded([list(x) for x in SAME_NUMBER]),
        np.array(
            [[kind_at(c, p) if p >= 1 else -1 for p in range(NUM_POSITIONS + 1)] for c in range(NUM_COLOURS)],
            dtype=np.int64,
        ),
        np.array(
            [[kind_of(c, x) if x >= 1 else -1 for x in range(NUM_NUMBERS + 1)] for c in range(NUM_COLOURS)],
            dtype=np.int64,
        ),
        np.array(WILD_KINDS, dtype=np.int64),
        *_csr_by_first_kind(core.named.pattern_kinds),
    )
    for arr in args:
        arr.flags.writeable = False
    return PlannerTables(core, weights, planner, args)


# ----------------------------------------------------------------------------- facts (facts.py, position.py)
@_jit
def _extension(H, m, hand, distinct):
    """facts.extension: how many tiles of ``hand`` extend meld ``m`` naturally, in a chain."""
    mi = H[H_MELD]
    if mi[m, M_IS_RUN]:
        kind_at_ = H[H_KIND_AT]
        colour = mi[m, M_COLOUR]
        wild_pos = mi[m, M_WILD_POS]
        count = 0
        pos = mi[m, M_LO] - 1
        while pos >= 1 and hand[kind_at_[colour, pos]] > 0 and pos != wild_pos:
            count += 1
            pos -= 1
        pos = mi[m, M_HI] + 1
        while pos <= NUM_POSITIONS and hand[kind_at_[colour, pos]] > 0:
            count += 1
            pos += 1
        if mi[m, M_WILD_KIND] >= 0 and hand[kind_at_[colour, wild_pos]] > 0:
            count += 1
        return count
    number = mi[m, M_NUMBER]
    sc = H[H_SET_COLOURS]
    kind_of_ = H[H_KIND_OF]
    if distinct:
        missing = 0
        for c in range(NUM_COLOURS):
            if sc[m, c] == 0 and hand[kind_of_[c, number]] > 0:
                missing += 1
        return min(missing, NUM_COLOURS - mi[m, M_LENGTH])
    total = 0
    for c in range(NUM_COLOURS):
        total += min(hand[kind_of_[c, number]], 2 - sc[m, c])
    return total


@_jit
def _available(T, hand, pattern):
    """melds.patterns_available for one pattern."""
    pk, pn = T[F.T_PATTERN_KINDS], T[F.T_PATTERN_NEEDS]
    for j in range(3):
        k = pk[pattern, j]
        if k < NK and hand[k] < pn[pattern, j]:
            return False
    return True


@_jit
def _place_wild(T, H, hand, melds, n):
    """simulation._place_wild: one wild of the hand onto the longest clean meld;
    (gain, placed)."""
    values, n_outc, outc = T[F.T_TILE_VALUES], T[F.T_OUTCOME_COUNT], T[F.T_OUTCOMES]
    mi, progress, wilds = H[H_MELD], H[H_PROGRESS], H[H_WILD_KINDS]
    for w in range(wilds.shape[0]):  # the joker first, then the 2s
        k = wilds[w]
        if hand[k] <= 0:
            continue
        best_j, best_len = -1, -1
        for j in range(n):
            m = melds[j]
            if mi[m, M_CLEAN] and n_outc[m, k] > 0 and mi[m, M_LENGTH] > best_len:
                best_j, best_len = j, mi[m, M_LENGTH]
        if best_j >= 0:
            m = melds[best_j]
            new = outc[m, k, 0]
            hand[k] -= 1
            melds[best_j] = new
            return values[k] + progress[new] - progress[m], True
    return 0.0, False


@_jit
def _simulate(T, H, hand, melds, n, use_wilds):
    """simulation.simulate_melding on scratch copies: ``hand`` (int64, 53) is left
    as the hand left over, ``melds`` holds the ``n`` melds; returns the gain."""
    values, n_outc = T[F.T_TILE_VALUES], T[F.T_OUTCOME_COUNT]
    allowed, pk, pn = T[F.T_ALLOWED_PATTERNS], T[F.T_PATTERN_KINDS], T[F.T_PATTERN_NEEDS]
    W, progress, first_natural = H[H_WEIGHTS], H[H_PROGRESS], H[H_FIRST_NATURAL]
    natural_allowed, pattern_value = H[H_NATURAL_ALLOWED], H[H_PATTERN_VALUE]
    distinct = H[H_FLAGS][G_SET_COLOURS_DISTINCT]
    held = np.empty(NK, dtype=np.int64)
    first_start, first_patterns = H[H_FIRST_KIND_START], H[H_FIRST_KIND_PATTERNS]
    gain = 0.0
    for _ in range(MAX_ROUNDS):
        progressed = False
        n_held = 0
        for k in range(NK):
            if hand[k] > 0:
                held[n_held] = k
                n_held += 1
        for j in range(n):
            m = melds[j]
            for i in range(n_held):
                k = held[i]
                if hand[k] <= 0 or n_outc[m, k] == 0:
                    continue
                new = first_natural[m, k]
                if new >= 0:
                    gain += values[k] + progress[new] - progress[m]
                    hand[k] -= 1
                    melds[j] = new
                    m = new
                    progressed = True
        if progressed:
            continue
        # the readable code takes the first pattern (by id) of the longest extension: the same pick
        # here with the ties broken by id, reading only the patterns that start with a held kind
        best, best_ext = -1, -1
        for wild_pass in range(2):
            if wild_pass == 1 and (best >= 0 or not use_wilds):
                break
            for k in range(NK):
                if hand[k] <= 0:
                    continue
                for idx in range(first_start[k], first_start[k + 1]):
                    p = first_patterns[idx]
                    if not (natural_allowed[p] if wild_pass == 0 else allowed[p]) or not _available(T, hand, p):
                        continue
                    for j in range(3):
                        if pk[p, j] < NK:
                            hand[pk[p, j]] -= pn[p, j]
                    ext = _extension(H, p, hand, distinct)
                    for j in range(3):
                        if pk[p, j] < NK:
                            hand[pk[p, j]] += pn[p, j]
                    if ext > best_ext or (ext == best_ext and p < best):
                        best, best_ext = p, ext
        if best < 0:
            if use_wilds:
                placed, ok = _place_wild(T, H, hand, melds, n)
                if ok:
                    gain += placed
                    continue
            break
        for j in range(3):
            if pk[best, j] < NK:
                hand[pk[best, j]] -= pn[best, j]
        melds[n] = best  # a pattern's meld id is its pattern index
        n += 1
        gain += pattern_value[best] + progress[best] + W[W_NEW_MELD_BONUS]
    return gain


@_jit
def _own_melds(st, T, side, melds):
    """The side's meld ids into ``melds``; their count."""
    n = st[F.N_MELDS + side]
    for j in range(n):
        melds[j] = st[F.MELDS + side * F.SLOTS + j]
    return n


@_jit
def _meld_gain(st, T, H, side, hand):
    """simulation.meld_gain (natural tiles only) of ``hand`` with the side's melds."""
    melds = np.empty(SIM_MELDS, dtype=np.int64)
    n = _own_melds(st, T, side, melds)
    return _simulate(T, H, hand.copy(), melds, n, False)


#: slots of the per-decision memo ``memo`` (float64): -1 until computed
(L_LEFTOVER, L_GOING_OUT, L_DANGER, L_WANT_CLOSE) = range(4)


@_jit
def _danger(st, T, H, p, memo):
    """Position.danger: the stock is nearly out, or an opponent side that may close holds few tiles."""
    if memo[L_DANGER] >= 0:
        return memo[L_DANGER] > 0
    W = H[H_WEIGHTS]
    rv = T[F.T_RULE_VALUES]
    n, sides = rv[F.RV_PLAYERS], rv[F.RV_SIDES]
    side = p % sides
    danger = st[F.STOCK_LEN] <= W[W_DANGER_STOCK]
    if not danger:
        for q in range(n):
            s = q % sides
            if s == side or not st[F.MUERTO_TAKEN + s]:
                continue
            limit = W[W_DANGER_HAND_CLOSE_READY] if st[F.CLOSE_READY + s] else W[W_DANGER_HAND]
            if st[F.HAND_SIZE + q] <= limit:
                danger = True
                break
    memo[L_DANGER] = 1.0 if danger else 0.0
    return danger


@_jit
def _hand_value(st, T, p):
    """The points of ``p``'s hand (an int, as the readable sum)."""
    values = T[F.T_TILE_VALUES]
    total = 0
    for k in range(NK):
        c = st[F.HANDS + p * NK + k]
        if c:
            total += values[k] * c
    return total


@_jit
def _want_close(st, T, H, p, memo):
    """Position.want_close over facts.side_estimates: close when our estimate beats every
    other side's, or late, or in danger."""
    if memo[L_WANT_CLOSE] >= 0:
        return memo[L_WANT_CLOSE] > 0
    W, G = H[H_WEIGHTS], H[H_FLAGS]
    rv = T[F.T_RULE_VALUES]
    mv, cb = T[F.T_MELD_VALUE], T[F.T_CANASTA_BONUS]
    n, sides = rv[F.RV_PLAYERS], rv[F.RV_SIDES]
    side = p % sides
    own = 0.0
    best_other = -np.inf
    for s in range(sides):
        total = 0.0
        for j in range(st[F.N_MELDS + s]):
            m = st[F.MELDS + s * F.SLOTS + j]
            total += mv[m] + cb[m]
        for q in range(n):
            if q % sides != s:
                continue
            if q == p:
                total -= float(_hand_value(st, T, q))
            else:
                total -= W[W_MEAN_TILE_VALUE] * st[F.HAND_SIZE + q]
        if not st[F.MUERTO_TAKEN + s]:
            total -= G[G_MUERTO_PENALTY]
        if s == side:
            own = total
        elif total > best_other:
            best_other = total
    own = own + G[G_CLOSING_BONUS]
    own += float(_hand_value(st, T, p))
    want = own >= best_other or _danger(st, T, H, p, memo) or st[F.STOCK_LEN] <= W[W_CLOSE_LATE_STOCK]
    memo[L_WANT_CLOSE] = 1.0 if want else 0.0
    return want


@_jit
def _going_out(st, T, H, p, memo):
    """Position.going_out: emptying the hand now takes the muerto or closes this turn."""
    if memo[L_GOING_OUT] >= 0:
        return memo[L_GOING_OUT] > 0
    side = p % T[F.T_RULE_VALUES][F.RV_SIDES]
    if st[F.MUERTO_TAKEN + side] and not (st[F.CLOSE_READY + side] and _want_close(st, T, H, p, memo)):
        out = False
    else:
        if memo[L_LEFTOVER] < 0:
            melds = np.empty(SIM_MELDS, dtype=np.int64)
            n = _own_melds(st, T, side, melds)
            hand = st[F.HANDS + p * NK : F.HANDS + (p + 1) * NK].astype(np.int64)
            _simulate(T, H, hand, melds, n, True)
            memo[L_LEFTOVER] = hand.sum()
        out = memo[L_LEFTOVER] <= 1
    memo[L_GOING_OUT] = 1.0 if out else 0.0
    return out


@_jit
def _own_natural_addable(st, T, H, side, out):
    """Position.own_addable: per kind, it joins one of the side's melds as a natural."""
    first_natural = H[H_FIRST_NATURAL]
    out[:] = False
    for j in range(st[F.N_MELDS + side]):
        m = st[F.MELDS + side * F.SLOTS + j]
        for k in range(NK):
            if first_natural[m, k] >= 0:
                out[k] = True


@_jit
def _side_fits(st, T, s, kind):
    """Position.side_addable(s)[kind]: the kind can be added to one of side ``s``'s melds."""
    n_outc = T[F.T_OUTCOME_COUNT]
    for j in range(st[F.N_MELDS + s]):  # noqa: SIM110 (a generator in any() costs numba an allocation)
        if n_outc[st[F.MELDS + s * F.SLOTS + j], kind] > 0:
            return True
    return False


@_jit
def _top_melds_naturally(T, H, hand, own_addable, top):
    """Position.top_melds_naturally: added to our melds, or melded with two tiles of the hand."""
    if own_addable[top]:
        return True
    pk, pn = T[F.T_PATTERN_KINDS], T[F.T_PATTERN_NEEDS]
    natural_with = H[H_NATURAL_WITH]
    for i in range(natural_with.shape[1]):
        p = natural_with[top, i]
        if p < 0:
            break
        ok = True
        for j in range(3):
            k = pk[p, j]
            if k < NK and hand[k] < pn[p, j] - (1 if k == top else 0):
                ok = False
        if ok:
            return True
    return False


# ----------------------------------------------------------------------------- decision rules (policies.py)
@_jit
def _keep(st, T, H, hand, own_addable, unseen, kind):
    """HeuristicPolicy._keep (greedy) or PlannerPolicy._keep (card counting)."""
    W, G = H[H_WEIGHTS], H[H_FLAGS]
    if T[F.T_IS_WILD][kind]:
        return W[W_WILD_KEEP]
    score = W[W_KEEP_FITS_OWN] if own_addable[kind] else 0.0
    if G[G_PLANNER]:
        others = H[H_NATURAL_OTHERS]
        duplicate = hand[kind] >= 2
        partial = 0.0
        hand[kind] -= 1
        for i in range(others.shape[1]):
            a, b, is_run = others[kind, i, 0], others[kind, i, 1], others[kind, i, 2]
            if a < 0:
                break
            if a == b:
                have_a = min(hand[a], 2)
                have = have_a
                missing_live = unseen[a] if have_a < 2 else 0
                if have_a == 0:
                    continue
            else:
                have = (1 if hand[a] > 0 else 0) + (1 if hand[b] > 0 else 0)
                if have == 0:
                    continue
                missing_live = 0 if have == 2 else (unseen[b] if hand[a] > 0 else unseen[a])
            worth = W[W_KEEP_PATTERN_COMPLETE] if have == 2 else W[W_KEEP_PATTERN_LIVE] * min(missing_live, 2)
            if is_run and duplicate:
                worth *= W[W_KEEP_PATTERN_DUPLICATE_SHARE]
            partial += worth
        hand[kind] += 1
        return score + min(partial, W[W_KEEP_PATTERN_CAP])
    n1, n2, same = H[H_NEIGHBOURS_1], H[H_NEIGHBOURS_2], H[H_SAME_NUMBER]
    near = 0
    for i in range(n1.shape[1]):
        if n1[kind, i] >= 0 and hand[n1[kind, i]] > 0:
            near += 1
    far = 0
    for i in range(n2.shape[1]):
        if n2[kind, i] >= 0 and hand[n2[kind, i]] > 0:
            far += 1
    connected = W[W_KEEP_CONNECTED] if near >= 2 or (near > 0 and far > 0) else 0.0
    run = W[W_KEEP_NEIGHBOUR] * near + W[W_KEEP_FAR_NEIGHBOUR] * far + connected
    if hand[kind] >= 2:
        run *= W[W_KEEP_RUN_DUPLICATE_SHARE]
    score += run
    if G[G_SETS_ALLOWED] and same[kind, 0] >= 0:
        if G[G_SET_COLOURS_DISTINCT]:
            partners = 0
            for i in range(same.shape[1]):
                if same[kind, i] >= 0 and hand[same[kind, i]] > 0:
                    partners += 1
            score += W[W_KEEP_SET_PARTNER_DISTINCT] * min(partners, 2)
        else:
            partners = hand[kind] - 1
            total = 0
            for i in range(same.shape[1]):
                if same[kind, i] >= 0:
                    total += hand[same[kind, i]]
            partners += total
            score += W[W_KEEP_SET_PARTNER] * min(partners, 2)
    return score


@_jit
def _feed_cost(st, H):
    W = H[H_WEIGHTS]
    return W[W_FEED_BASE] + W[W_FEED_PER_PILE_TILE] * (st[F.PILE_LEN] + 1)


@_jit
def _next_holds(st, T, p, unseen, one, two):
    """Position.next_holds: per kind, the chance the next player holds a copy, and two."""
    n = T[F.T_RULE_VALUES][F.RV_PLAYERS]
    nxt = (p + 1) % n
    kb = F.KNOWN + nxt * NK
    total = 0
    known_total = 0
    for k in range(NK):
        total += unseen[k]
        known_total += st[kb + k]
    f = 0.0 if total <= 0 else max(0.0, (st[F.HAND_SIZE + nxt] - known_total) / total)
    for k in range(NK):
        pk = min(1.0, f * max(unseen[k], 0))
        known = st[kb + k]
        one[k] = 1.0 if known > 0 else pk
        two[k] = 1.0 if known >= 2 else (pk if known == 1 else 0.5 * pk * pk)


@_jit
def _discard_facts(st, T, H, p):
    """What a discard's keep and feed read (Position.unseen, and the planner's next_holds):
    the unseen copies per kind, and the next player's chances of one and of two."""
    unseen = np.zeros(NK, dtype=np.int64)
    F.unseen_counts(st, p, T, unseen)
    one = np.zeros(NK)
    two = np.zeros(NK)
    if H[H_FLAGS][G_PLANNER]:
        _next_holds(st, T, p, unseen, one, two)
    return unseen, one, two


@_jit
def _feed(st, T, H, p, kind, one, two):
    """HeuristicPolicy._feed, plus (planner) the next player's chance of a pair for it."""
    W, G = H[H_WEIGHTS], H[H_FLAGS]
    rv = T[F.T_RULE_VALUES]
    n, sides = rv[F.RV_PLAYERS], rv[F.RV_SIDES]
    side = p % sides
    nxt = (p + 1) % n
    cost = _feed_cost(st, H)
    penalty = 0.0
    for s in range(sides):
        if s == side:
            continue
        if _side_fits(st, T, s, kind):
            penalty += (W[W_FEED_NEXT_SIDE] if s == nxt % sides else W[W_FEED_OTHER_SIDE]) * cost
    kb = F.KNOWN + nxt * NK
    known_any = False
    for k in range(NK):
        if st[kb + k] > 0:
            known_any = True
            break
    if known_any:
        partners = H[H_NATURAL_PARTNERS]
        for i in range(partners.shape[1]):
            a, b = partners[kind, i, 0], partners[kind, i, 1]
            if a < 0:
                break
            if st[kb + a] > 0 and (b < 0 or st[kb + b] > 0):
                penalty += W[W_FEED_KNOWN_SHARE] * cost
                break
    if T[F.T_IS_WILD][kind]:
        penalty += W[W_FEED_WILD]
    if not G[G_PLANNER]:
        return penalty
    others = H[H_NATURAL_OTHERS]
    p_none = 1.0
    for i in range(others.shape[1]):
        a, b = others[kind, i, 0], others[kind, i, 1]
        if a < 0:
            break
        p_none *= 1.0 - (two[a] if a == b else one[a] * one[b])
    nxt_side = nxt % sides
    weight = 0.0 if nxt_side == side else (W[W_FEED_NEXT_SIDE])
    return penalty + weight * (1.0 - p_none) * _feed_cost(st, H)


@_jit
def _dump(st, T, H, p, kind, memo):
    """HeuristicPolicy._dump, plus (planner) the late stock's share."""
    W, G = H[H_WEIGHTS], H[H_FLAGS]
    value = T[F.T_TILE_VALUES][kind]
    base = value * (W[W_DUMP_SHARE] + (W[W_DUMP_DANGER_SHARE] if _danger(st, T, H, p, memo) else 0.0))
    if G[G_PLANNER] and st[F.STOCK_LEN] <= W[W_DUMP_LATE_STOCK]:
        base += W[W_DUMP_LATE_SHARE] * value
    return base


@_jit
def _wild_add_score(st, T, H, p, m, new_length, memo):
    W, G = H[H_WEIGHTS], H[H_FLAGS]
    if not G[G_PLANNER]:
        return (
            W[W_GREEDY_WILD_ADD_BASE]
            + (W[W_GREEDY_WILD_ADD_CANASTA] if new_length >= CANASTA_LENGTH else 0.0)
            + W[W_WILD_ADD_PER_LENGTH] * new_length
        )
    if new_length >= CANASTA_LENGTH:
        if G[G_CLOSE_REQUIRES_CLEAN] and not _clean_canasta(st, T, H, p) and not _danger(st, T, H, p, memo):
            if _going_out(st, T, H, p, memo):
                return W[W_WILD_FINISH_DIRTY_GOING_OUT]
            return W[W_WILD_FINISH_DIRTY_HOLD]
        return W[W_WILD_FINISH_CANASTA]
    if _going_out(st, T, H, p, memo) or _danger(st, T, H, p, memo):
        return W[W_WILD_GOING_OUT_BASE] + W[W_WILD_ADD_PER_LENGTH] * new_length
    return W[W_WILD_ADD_HOLD]


@_jit
def _clean_canasta(st, T, H, p):
    mi = H[H_MELD]
    side = p % T[F.T_RULE_VALUES][F.RV_SIDES]
    for j in range(st[F.N_MELDS + side]):
        m = st[F.MELDS + side * F.SLOTS + j]
        if mi[m, M_IS_CANASTA] and mi[m, M_CLEAN]:
            return True
    return False


@_jit
def _add_score(st, T, H, p, slot, kind, memo):
    """HeuristicPolicy._add_score, plus (planner) the meld closest to a canasta first."""
    W, G, mi = H[H_WEIGHTS], H[H_FLAGS], H[H_MELD]
    side = p % T[F.T_RULE_VALUES][F.RV_SIDES]
    m = st[F.MELDS + side * F.SLOTS + slot]
    if T[F.T_OUTCOME_COUNT][m, kind] == 0:
        return NEG
    outcome = T[F.T_OUTCOMES][m, kind, 0]
    length = mi[m, M_LENGTH]
    new_length = length + 1
    if mi[outcome, M_WILD_KIND] == mi[m, M_WILD_KIND]:
        score = (
            W[W_NATURAL_ADD_BASE]
            + W[W_NATURAL_ADD_PER_LENGTH] * min(new_length, CANASTA_LENGTH)
            + (W[W_CANASTA_COMPLETION] if new_length == CANASTA_LENGTH else 0.0)
        )
    elif mi[m, M_IS_CANASTA]:
        score = W[W_WILD_ON_CLEAN_CANASTA]
    else:
        score = _wild_add_score(st, T, H, p, m, new_length, memo)
    if G[G_PLANNER] and score > 0:
        score += W[W_ADD_PER_MELD_LENGTH] * min(length, CANASTA_LENGTH - 1)
    return score


@_jit
def _meld_score(st, T, H, p, pattern, hand, memo):
    """HeuristicPolicy._meld_score and the styles' _wild_meld_score."""
    W, G, mi = H[H_WEIGHTS], H[H_FLAGS], H[H_MELD]
    pk, pn = T[F.T_PATTERN_KINDS], T[F.T_PATTERN_NEEDS]
    for j in range(3):
        if pk[pattern, j] < NK:
            hand[pk[pattern, j]] -= pn[pattern, j]
    ext = _extension(H, pattern, hand, H[H_FLAGS][G_SET_COLOURS_DISTINCT])
    for j in range(3):
        if pk[pattern, j] < NK:
            hand[pk[pattern, j]] += pn[pattern, j]
    value = H[H_PATTERN_VALUE][pattern]
    wild_kind = mi[pattern, M_WILD_KIND]
    if wild_kind < 0:
        return (
            W[W_NATURAL_MELD_BASE]
            + value
            + W[W_MELD_EXTENSION] * ext
            + (W[W_RUN_MELD_BONUS] if mi[pattern, M_IS_RUN] else 0.0)
        )
    joker = W[W_JOKER_MELD_COST] if wild_kind == JOKER else 0.0
    if not G[G_PLANNER]:
        return W[W_GREEDY_WILD_MELD_BASE] + value + W[W_MELD_EXTENSION] * ext - joker
    if _going_out(st, T, H, p, memo) or _danger(st, T, H, p, memo):
        return W[W_WILD_GOING_OUT_BASE] + value + W[W_MELD_EXTENSION] * ext - joker
    if ext >= W[W_WILD_MELD_LONG_EXTENSION]:
        return W[W_WILD_MELD_LONG_BASE] + W[W_MELD_EXTENSION] * ext
    return W[W_WILD_MELD_HOLD]


@_jit
def _play_score(st, T, H, p, action, hand, memo):
    """HeuristicPolicy._play_score: a meld or addition (positive: do it now)."""
    W, G = H[H_WEIGHTS], H[H_FLAGS]
    required = st[F.REQUIRED]
    uses_required = False
    if action < F.ADD_BASE:
        pattern = action - F.MELD_BASE
        pk = T[F.T_PATTERN_KINDS]
        used = 3
        score = _meld_score(st, T, H, p, pattern, hand, memo)
        for j in range(3):
            if pk[pattern, j] < NK and pk[pattern, j] == required:
                uses_required = True
    else:
        rel = action - F.ADD_BASE
        slot = rel // NK
        kind = rel - slot * NK
        used = 1
        score = _add_score(st, T, H, p, slot, kind, memo)
        uses_required = kind == required
    if required >= 0 and uses_required:
        score += W[W_PILE_TOP_FIRST]
    adjustment = 0.0
    if G[G_PLANNER]:  # PlannerPolicy._emptying_adjustment: closing is a decision
        side = p % T[F.T_RULE_VALUES][F.RV_SIDES]
        left = st[F.HAND_SIZE + p] - used
        if st[F.MUERTO_TAKEN + side] and st[F.CLOSE_READY + side] and left < 2 and not _want_close(st, T, H, p, memo):
            adjustment = NEG / 2
    return score + adjustment


@_jit
def _take_pile(st, T, H, p, hand, own_addable, memo):
    """Draw: take the pile? (greedy: its top melds at once; planner: it pays)."""
    W, G = H[H_WEIGHTS], H[H_FLAGS]
    is_wild, values = T[F.T_IS_WILD], T[F.T_TILE_VALUES]
    pile_len = st[F.PILE_LEN]
    top = st[F.PILE + pile_len - 1]
    top_useful = is_wild[top] or _top_melds_naturally(T, H, hand, own_addable, top)
    if not G[G_PLANNER]:
        return top_useful
    side = p % T[F.T_RULE_VALUES][F.RV_SIDES]
    before = _meld_gain(st, T, H, side, hand)
    after_hand = hand.copy()
    for k in range(NK):
        after_hand[k] += st[F.PILE_COUNTS + k]
    after = _meld_gain(st, T, H, side, after_hand)
    gain = after - before
    wilds = 0.0
    pile_value = 0
    for i in range(pile_len):
        k = st[F.PILE + i]
        if is_wild[k]:
            wilds += W[W_PILE_WILD_VALUE]
        pile_value += values[k]
    gain += wilds
    gain += W[W_PILE_MATERIAL_PER_TILE] * pile_len
    if _danger(st, T, H, p, memo):
        gain -= pile_value * W[W_PILE_DANGER_SHARE]
    elif not st[F.MUERTO_TAKEN + side] and st[F.HAND_SIZE + p] <= W[W_GOING_OUT_SIZE]:
        gain -= W[W_PILE_DELAY_PER_TILE] * pile_len
    threshold = W[W_TAKE_THRESHOLD] if top_useful else W[W_TAKE_THRESHOLD_BLIND]
    return gain > threshold


@_jit
def choose(st, T, H, mask):
    """The heuristic's action for the player to act (HeuristicPolicy.choose);
    ``mask`` is the state's exact legal mask. -1 when nothing is legal."""
    W = H[H_WEIGHTS]
    first, count = -1, 0
    for a in range(mask.shape[0]):
        if mask[a]:
            if first < 0:
                first = a
            count += 1
    if count <= 1:
        return first
    p = st[F.CURRENT]
    sides = T[F.T_RULE_VALUES][F.RV_SIDES]
    side = p % sides
    phase = st[F.PHASE]
    memo = np.full(4, -1.0)
    hand = st[F.HANDS + p * NK : F.HANDS + (p + 1) * NK].astype(np.int64)
    own_addable = np.zeros(NK, dtype=np.bool_)
    _own_natural_addable(st, T, H, side, own_addable)
    action = first
    if phase == F.P_DRAW:
        action = F.DRAW_STOCK
        if st[F.PILE_LEN] > 0 and mask[F.TAKE_PILE] and _take_pile(st, T, H, p, hand, own_addable, memo):
            action = F.TAKE_PILE
    elif phase == F.P_PRIVILEGE:
        tile = st[F.PRIV_TILE]
        action = F.KEEP
        if tile >= 0:
            unseen, one, two = _discard_facts(st, T, H, p)
            worth = _keep(st, T, H, hand, own_addable, unseen, tile) + _feed(st, T, H, p, tile, one, two)
            action = F.KEEP if worth >= W[W_PRIVILEGE_KEEP_THRESHOLD] else F.REJECT
    elif phase == F.P_CHOOSE_END:
        if st[F.PEND_N] > 0:
            mi = H[H_MELD]
            hand[st[F.PEND_KIND]] -= 1
            distinct = H[H_FLAGS][G_SET_COLOURS_DISTINCT]
            best_score = NEG
            for a in range(F.CHOOSE_BASE, F.DISCARD_BASE):
                if not mask[a]:
                    continue
                m = st[F.PEND_OUT0] if a == F.CHOOSE_BASE else st[F.PEND_OUT1]
                score = W[W_CHOOSE_CLEAN] * mi[m, M_CLEAN] + _extension(H, m, hand, distinct) * W[W_CHOOSE_EXTENSION]
                if mi[m, M_IS_RUN]:
                    score += W[W_CHOOSE_ROOM] * min(mi[m, M_LO] - 1, NUM_POSITIONS - mi[m, M_HI])
                if score > best_score:
                    action, best_score = a, score
    else:
        action = _play(st, T, H, p, mask, hand, own_addable, memo)
    if action < 0 or action >= mask.shape[0] or not mask[action]:
        action = first  # as the readable policy: the mask has the final word
    return action


@_jit
def _play(st, T, H, p, mask, hand, own_addable, memo):
    """HeuristicPolicy._play: the best meld or addition worth doing now, else the
    cheapest discard, else the best of the rest (ties: the lower id)."""
    unseen, one, two = _discard_facts(st, T, H, p)
    best_good, best_good_score = -1, 0.0
    best_rest, best_rest_score = -1, 0.0
    best_discard, best_cost = -1, 0.0
    side = p % T[F.T_RULE_VALUES][F.RV_SIDES]
    hi = F.ADD_BASE + st[F.N_MELDS + side] * NK
    for a in range(F.DISCARD_BASE, hi):
        if not mask[a]:
            continue
        if a < F.MELD_BASE:
            kind = a - F.DISCARD_BASE
            cost = (
                _keep(st, T, H, hand, own_addable, unseen, kind)
                + _feed(st, T, H, p, kind, one, two)
                - _dump(st, T, H, p, kind, memo)
            )
            if best_discard < 0 or cost < best_cost:
                best_discard, best_cost = a, cost
            continue
        score = _play_score(st, T, H, p, a, hand, memo)
        if score > 0.0:
            if best_good < 0 or score > best_good_score:
                best_good, best_good_score = a, score
        elif best_rest < 0 or score > best_rest_score:
            best_rest, best_rest_score = a, score
    if best_good >= 0:
        return best_good
    if best_discard >= 0:
        return best_discard
    return best_rest


@_jit
def choose_rows(states, masks, rows, T, H, out):
    """:func:`choose` for the games ``rows`` of a batch (``states`` and ``masks``
    one row per game, as ``BurakoVectorEnv`` holds them) into ``out``."""
    for r in range(rows.shape[0]):
        i = rows[r]
        out[r] = choose(states[i], T, H, masks[i])


# ----------------------------------------------------------------------------- Python side
def tables_for(rules: Rules, num_players: int, weights: Any = None, style: str = "planner") -> PlannerTables:
    """The tables of a style (``planner`` or ``greedy``) with its preset weights,
    or a :class:`HeuristicWeights`, or a mapping of changes to the preset."""
    if style not in ("planner", "greedy"):
        raise ValueError(f"style must be 'planner' or 'greedy', got {style!r}")
    preset = PLANNER_WEIGHTS if style == "planner" else GREEDY_WEIGHTS
    return planner_tables(rules, num_players, resolve_weights(weights, preset), style == "planner")


def choose_game(game: FastGame, tables: tuple[np.ndarray, ...]) -> int:
    """:func:`choose` for a :class:`~burako_env.fast.FastGame` (``tables``: a :class:`PlannerTables`'s
    ``kernel_args``). Its state goes in read-only, as a batched env's rows reach :func:`choose_rows`,
    so both calls share one compiled :func:`choose` (each array type is a compilation of its own)."""
    st = game.st.view()
    st.flags.writeable = False
    return int(choose(st, game.args, tables, game.legal_mask()))


def compile_kernels() -> float:
    """Compile (or load from numba's disk cache) the kernels as they are called (a batched env's
    read-only rows, and :func:`choose_game`'s single game, the same types); returns the seconds it
    took (scripts/install.sh)."""
    from burako_env.vector import BurakoVectorEnv

    start = time.perf_counter()
    game = FastGame.new_game(np.random.default_rng(0))
    env = BurakoVectorEnv(2, num_threads=1)
    env.reset(seed=0)
    out = np.zeros(2, dtype=np.int64)
    choose_rows(env.states, env.masks, np.arange(2), env.tables.kernel_args, tables_for(env.rules, 2).kernel_args, out)
    for style in COMPILED_AGENTS:
        choose_game(game, tables_for(game.tables.rules, 2, None, style).kernel_args)
    return time.perf_counter() - start


#: the registry's agents this module plays: their names are their styles
COMPILED_AGENTS = ("planner", "greedy")


def compiled_tables(name: str, options: Mapping[str, Any], rules: Rules, num_players: int) -> PlannerTables | None:
    """The tables that play the registry agent ``name`` with ``options`` here, or None
    when it is not one of :data:`COMPILED_AGENTS` or has an option besides ``weights``."""
    if name not in COMPILED_AGENTS or set(options) - {"weights"}:
        return None
    return tables_for(rules, num_players, options.get("weights"), name)


#: the files whose constants the kernels above compile in besides burako_env/fast.py's functions
#: (NEG, MAX_ROUNDS, CANASTA_LENGTH, the tile constants): numba's cache would keep their old values
COMPILED_IN = tuple(
    str(Path(m.__file__))  # type: ignore[arg-type]
    for m in (heuristic_facts, heuristic_simulation, melds_module, tiles_module)
)
# recompile the kernels when one of those files or burako_env/fast.py changed
F.refresh_dependent_caches(__name__, globals(), COMPILED_IN)

__all__ = [
    "COMPILED_AGENTS",
    "PlannerTables",
    "choose",
    "choose_game",
    "choose_rows",
    "compile_kernels",
    "compiled_tables",
    "planner_tables",
    "tables_for",
]


if __name__ == "__main__":
    print(f"agents.fast_planner kernels ready in {compile_kernels():.1f} s")
