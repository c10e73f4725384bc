"""The compiled core: the engine's rules on a flat int32 state, in numba.

The readable engine (:mod:`burako_env.engine`) is the truth; this module is a
second implementation of the same transitions, masks and observations for
throughput (the batched API in :mod:`burako_env.vector`, and the default
backend of the PettingZoo env). ``tests/test_fast.py`` plays thousands of
random hands of every preset through both and asserts identical masks,
observations, rewards and final states.

Everything that is a *fact about melds* is not re-implemented: the meld
universe (every meld reachable from the 3-tile patterns by single additions,
15,972 of them) is enumerated once with :func:`melds.add_outcomes`, and the
kernels only look up tables built from the readable code: a meld's
observation features, its outcomes when a tile is added, its value, bonus and
whether it qualifies to close.

Why one file of about 1,600 lines: the flat state layout, the tables the
kernels read (:class:`KernelTables`), the kernels and the :class:`FastGame`
wrapper change together (a new state field or table touches all four), and
each kernel sits beside the layout it indexes, in the order of its readable
twin in engine.py (the function map is in docs/architecture.md). The next
seam, if it grows, is the Python side (``FastGame``, ``state_dict``,
``game_state_of``, about 400 lines) into its own module.

Kernel arguments: every kernel takes ``T``, the arrays of the
:class:`KernelTables` of its (rules, player count) as a plain tuple, and
reads them by name through the ``T_*`` index constants (``T[T_OUTCOMES]``,
never ``T[3]``); the rules values it needs are the rule vector
``T[T_RULE_VALUES]`` at the ``RV_*`` indices. Which ``Rules`` field reaches the kernels how, and which the
kernels may ignore and why, is declared in :data:`RV_FIELDS`,
:data:`RULES_IN_TABLES` and :data:`RULES_NOT_IN_KERNELS`
(tests/test_kernel_contract.py holds the declarations to the code).

State layout (one int32 vector per game, :data:`STATE_SIZE` entries, 4.2 kB;
``clone`` is one copy of it). Capacities hold every legal table: at most 4
players and 4 sides, 108 tiles, 53 tiles per muerto.

| field            | size        | contents                                          |
|------------------|-------------|---------------------------------------------------|
| HANDS            | 4 x 53      | tile counts per player and kind                   |
| KNOWN            | 4 x 53      | tiles each player took with the pile, unplayed    |
| PILE_COUNTS      | 53          | discard pile counts per kind                      |
| STOCK, STOCK_LEN | 108, 1      | the stock; the top is ``STOCK[STOCK_LEN - 1]``    |
| PILE, PILE_LEN   | 108, 1      | the discard pile, bottom first                    |
| MUERTOS, ..._LEN | 4 x 53, 4   | each side's muerto (emptied when taken)           |
| MELDS, N_MELDS   | 4 x 36, 4   | each side's meld ids (into the meld universe)     |
| HAND_SIZE        | 4           | tiles per hand                                    |
| MUERTO_TAKEN     | 4           | per side                                          |
| MUERTO_UNPLAYED  | 4           | per player (B21)                                  |
| CLOSE_READY      | 4           | per side (B22)                                    |
| MATCH_SCORES     | 4           | per side (B28)                                    |
| HAND_SCORES      | 4 x 5       | melded, canasta bonus, closing bonus, hand        |
|                  |             | penalty, muerto penalty (``engine.SideScore``)    |
| scalars          | 16          | phase, current, mano, turn, privilege tile,       |
|                  |             | pending slot/kind/count/outcome 0/outcome 1, pile |
|                  |             | top required, end reason, closer, hand number,    |
|                  |             | match winner, has-scores flag                     |
"""

from __future__ import annotations

import functools
import hashlib
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import numba
import numpy as np

from burako_env import actions as A
from burako_env.engine import (
    CLOSED,
    STOCK_EXHAUSTED,
    TRUNCATED,
    VOID,
    GameState,
    IllegalActionError,
    Phase,
    SideScore,
    check_seat,
    draw_first_mano,
    shuffle_tiles,
    tables_for,
)
from burako_env.melds import (
    MELD_FEATURE_SIZE,
    PATTERN_COUNTS,
    PATTERN_KINDS,
    PATTERN_NEEDS,
    PATTERNS,
    Meld,
    add_outcomes,
    allowed_patterns,
    canasta_bonus,
    candidate_kinds,
    encode_meld,
    meld_kinds,
    qualifies_to_close,
)
from burako_env.observation import RULE_FEATURES, observation_layout, observation_size, rule_features
from burako_env.outcomes import zero_sum_rewards
from burako_env.rules import Rules, load_rules
from burako_env.tiles import IS_WILD, KIND_COLOUR, NUM_KINDS

# ----------------------------------------------------------------------------- layout
MAX_PLAYERS = 4
MAX_SIDES = 4
MAX_TILES = 108
MUERTO_CAP = 53
SLOTS = A.MAX_MELD_SLOTS
NK = NUM_KINDS
NUM_SCORE_PARTS = 5

_FIELDS = (
    ("HANDS", MAX_PLAYERS * NK),
    ("KNOWN", MAX_PLAYERS * NK),
    ("PILE_COUNTS", NK),
    ("STOCK", MAX_TILES),
    ("STOCK_LEN", 1),
    ("PILE", MAX_TILES),
    ("PILE_LEN", 1),
    ("MUERTOS", MAX_SIDES * MUERTO_CAP),
    ("MUERTO_LEN", MAX_SIDES),
    ("MELDS", MAX_SIDES * SLOTS),
    ("N_MELDS", MAX_SIDES),
    ("HAND_SIZE", MAX_PLAYERS),
    ("MUERTO_TAKEN", MAX_SIDES),
    ("MUERTO_UNPLAYED", MAX_PLAYERS),
    ("CLOSE_READY", MAX_SIDES),
    ("MATCH_SCORES", MAX_SIDES),
    ("HAND_SCORES", MAX_SIDES * NUM_SCORE_PARTS),
    ("PHASE", 1),
    ("CURRENT", 1),
    ("MANO", 1),
    ("TURN", 1),
    ("PRIV_TILE", 1),
    ("PEND_SLOT", 1),
    ("PEND_KIND", 1),
    ("PEND_N", 1),
    ("PEND_OUT0", 1),
    ("PEND_OUT1", 1),
    ("REQUIRED", 1),
    ("END_REASON", 1),
    ("CLOSER", 1),
    ("HAND_NUMBER", 1),
    ("MATCH_WINNER", 1),
    ("HAS_SCORES", 1),
)
OFFSETS: dict[str, int] = {}
_acc = 0
for _name, _size in _FIELDS:
    OFFSETS[_name] = _acc
    _acc += _size
STATE_SIZE = _acc

HANDS = OFFSETS["HANDS"]
KNOWN = OFFSETS["KNOWN"]
PILE_COUNTS = OFFSETS["PILE_COUNTS"]
STOCK = OFFSETS["STOCK"]
STOCK_LEN = OFFSETS["STOCK_LEN"]
PILE = OFFSETS["PILE"]
PILE_LEN = OFFSETS["PILE_LEN"]
MUERTOS = OFFSETS["MUERTOS"]
MUERTO_LEN = OFFSETS["MUERTO_LEN"]
MELDS = OFFSETS["MELDS"]
N_MELDS = OFFSETS["N_MELDS"]
HAND_SIZE = OFFSETS["HAND_SIZE"]
MUERTO_TAKEN = OFFSETS["MUERTO_TAKEN"]
MUERTO_UNPLAYED = OFFSETS["MUERTO_UNPLAYED"]
CLOSE_READY = OFFSETS["CLOSE_READY"]
MATCH_SCORES = OFFSETS["MATCH_SCORES"]
HAND_SCORES = OFFSETS["HAND_SCORES"]
PHASE = OFFSETS["PHASE"]
CURRENT = OFFSETS["CURRENT"]
MANO = OFFSETS["MANO"]
TURN = OFFSETS["TURN"]
PRIV_TILE = OFFSETS["PRIV_TILE"]
PEND_SLOT = OFFSETS["PEND_SLOT"]
PEND_KIND = OFFSETS["PEND_KIND"]
PEND_N = OFFSETS["PEND_N"]
PEND_OUT0 = OFFSETS["PEND_OUT0"]
PEND_OUT1 = OFFSETS["PEND_OUT1"]
REQUIRED = OFFSETS["REQUIRED"]
END_REASON = OFFSETS["END_REASON"]
CLOSER = OFFSETS["CLOSER"]
HAND_NUMBER = OFFSETS["HAND_NUMBER"]
MATCH_WINNER = OFFSETS["MATCH_WINNER"]
HAS_SCORES = OFFSETS["HAS_SCORES"]

#: end reasons (0: the hand is not over)
END_NONE, END_CLOSED, END_STOCK_EXHAUSTED, END_VOID, END_TRUNCATED = 0, 1, 2, 3, 4
END_REASON_NAMES = (None, CLOSED, STOCK_EXHAUSTED, VOID, TRUNCATED)

P_DRAW, P_PRIVILEGE, P_PLAY, P_CHOOSE_END, P_HAND_OVER = (int(p) for p in Phase)

#: the rule vector (int64), one per (rules, player count): Rules fields by
#: their own names (read by the kernels as ``rv[RV_...]``), and three values
#: derived from the rules and the player count (num_players, num_sides,
#: total_tiles)
RV_FIELDS = (
    "num_players",
    "num_sides",
    "hand_size",
    "muerto_size",
    "max_turns",
    "target",
    "pile_top_must_be_melded",
    "mano_privilege",
    "unplayed_indirect_muerto_counts_as_untaken",
    "closing_bonus",
    "muerto_penalty",
    "total_tiles",
    "close_requires_clean_canasta",
)
(
    RV_PLAYERS,
    RV_SIDES,
    RV_HAND_SIZE,
    RV_MUERTO_SIZE,
    RV_MAX_TURNS,
    RV_TARGET,
    RV_PILE_TOP,
    RV_PRIVILEGE,
    RV_UNPLAYED,
    RV_CLOSING_BONUS,
    RV_MUERTO_PENALTY,
    RV_TOTAL_TILES,
    RV_CLEAN_TO_CLOSE,
) = range(len(RV_FIELDS))

#: Rules fields that reach the kernels baked into tables rather than (or as
#: well as) as a rule-vector value: the field, and the KernelTables arrays
#: built from it (tests/test_kernel_contract.py checks that each is read by a
#: kernel and changes when the field does)
RULES_IN_TABLES: dict[str, tuple[str, ...]] = {
    "tile_set": ("outcomes", "outcome_count", "allowed_patterns"),  # no jokers with cards (V2); also total_tiles
    "sets_allowed": ("allowed_patterns",),  # B7
    "set_colours_distinct": ("outcomes", "outcome_count", "allowed_patterns"),
    "tile_values": ("tile_values", "meld_value"),  # B25
    "canasta_bonus": ("canasta_bonus",),  # B14, V1
    "close_requires_clean_canasta": ("qualifies_to_close",),  # B22; also the rule vector
}
#: Rules fields the kernels never need, and why (the same test checks that
#: changing one changes no kernel input)
RULES_NOT_IN_KERNELS: dict[str, str] = {
    "name": "a label for the table; no rule depends on it",
    "source": "where the values come from; informative only",
    "players": "which player counts a table allows is checked when its tables are built (fast_tables calls "
    "Rules.check_players); the kernels get the count itself (rule vector num_players)",
    "wilds_per_meld": "validation admits only 1 (B8), which the meld universe and its tables are built for",
}

#: observation segment offsets passed to the kernel, in this order
OBS_SEGMENTS = (
    "hand",
    "privilege_tile",
    "melds",
    "pile_counts",
    "pile_top",
    "pile_size",
    "known_in_hands",
    "hand_sizes",
    "stock_size",
    "muerto_taken",
    "muerto_unplayed",
    "close_ready",
    "phase",
    "pending_tile",
    "pending_slot",
    "pending_options",
    "pile_top_required",
    "mano",
    "turn",
    "match_scores",
    "rules",
)
(
    O_HAND,
    O_PRIV,
    O_MELDS,
    O_PILE_COUNTS,
    O_PILE_TOP,
    O_PILE_SIZE,
    O_KNOWN,
    O_HAND_SIZES,
    O_STOCK_SIZE,
    O_MUERTO_TAKEN,
    O_MUERTO_UNPLAYED,
    O_CLOSE_READY,
    O_PHASE,
    O_PEND_TILE,
    O_PEND_SLOT,
    O_PEND_OPTIONS,
    O_REQUIRED,
    O_MANO,
    O_TURN,
    O_MATCH_SCORES,
    O_RULES,
) = range(len(OBS_SEGMENTS))


DRAW_STOCK, TAKE_PILE, KEEP, REJECT = A.DRAW_STOCK, A.TAKE_PILE, A.KEEP, A.REJECT
CHOOSE_BASE, DISCARD_BASE, MELD_BASE, ADD_BASE, NUM_ACTIONS = (
    A.CHOOSE_BASE,
    A.DISCARD_BASE,
    A.MELD_BASE,
    A.ADD_BASE,
    A.NUM_ACTIONS,
)
NUM_PATTERNS = len(PATTERNS)
MFS = MELD_FEATURE_SIZE
TOTAL_TILES_SCALE = 106.0
HAND_SIZE_SCALE = 30.0


# ----------------------------------------------------------------------------- tables
@functools.lru_cache(maxsize=1)
def meld_universe() -> tuple[tuple[Meld, ...], dict[Meld, int]]:
    """Every meld reachable from a 3-tile pattern by single additions with at
    most two tiles of a kind (the table holds no more), under the most
    permissive table rules (jokers, sets with repeated colours). Patterns come
    first, so a pattern's meld id is its pattern index."""
    permissive = Rules()
    ids: dict[Meld, int] = {m: i for i, m in enumerate(PATTERNS)}
    order = list(PATTERNS)
    i = 0
    while i < len(order):
        meld = order[i]
        i += 1
        for kind in candidate_kinds(meld):
            for out in add_outcomes(meld, kind, permissive):
                if out not in ids and max(Counter(meld_kinds(out)).values()) <= 2:
                    ids[out] = len(order)
                    order.append(out)
    assert all(ids[m] == i for i, m in enumerate(PATTERNS)), "patterns must be distinct"
    return tuple(order), ids


@functools.lru_cache(maxsize=1)
def _meld_facts() -> tuple[np.ndarray, np.ndarray]:
    """Observation features and kind counts of every meld in the universe."""
    universe, _ = meld_universe()
    enc = np.stack([encode_meld(m) for m in universe]).astype(np.float32)
    counts = np.zeros((len(universe), NK), dtype=np.int64)
    for i, m in enumerate(universe):
        for k in meld_kinds(m):
            counts[i, k] += 1
    return enc, counts


@functools.lru_cache(maxsize=8)
def _outcome_table(num_jokers: int, set_colours_distinct: bool) -> tuple[np.ndarray, np.ndarray]:
    """Outcome meld ids per (meld, added kind), at most two, lower placement
    first (the CHOOSE_END order); only the rules fields add_outcomes reads."""
    universe, ids = meld_universe()
    rules = Rules(
        tile_set="tiles" if num_jokers else "cards",
        set_colours_distinct=set_colours_distinct,
        players=(2,),
        hand_size={2: 11},
    )
    outc = np.full((len(universe), NK, 2), -1, dtype=np.int32)
    n_outc = np.zeros((len(universe), NK), dtype=np.int8)
    for i, meld in enumerate(universe):
        for kind in candidate_kinds(meld):
            outs = add_outcomes(meld, kind, rules)
            if not all(o in ids for o in outs):
                continue  # needs a third tile of a kind: can never be played
            n_outc[i, kind] = len(outs)
            for j, o in enumerate(outs):
                outc[i, kind, j] = ids[o]
    return outc, n_outc


#: the largest hand score (either sign) the int32 state accepts; match totals
#: then stay in range for over 2,000 hands of that size
MAX_HAND_SCORE = 1_000_000


def _check_int32_scores(rules: Rules) -> None:
    """The flat state keeps scores in int32: refuse rules whose hand scores
    could leave it, naming the fields (the readable engine has no limit)."""
    most = (
        int(rules.full_counts().sum()) * max(abs(v) for v in rules.tile_values.values())
        + SLOTS * max(abs(v) for v in rules.canasta_bonus.values())
        + abs(rules.closing_bonus)
        + abs(rules.muerto_penalty)
    )
    if most > MAX_HAND_SCORE or abs(rules.target) > 1000 * MAX_HAND_SCORE:
        raise ValueError(
            f"tile_values, canasta_bonus, closing_bonus, muerto_penalty or target are too large for the fast "
            f"core's int32 scores (a hand could reach {most:,}; the limit is {MAX_HAND_SCORE:,}); "
            'use engine="python"'
        )


def _csr(columns: list[list[int]]) -> tuple[np.ndarray, np.ndarray]:
    start = np.zeros(len(columns) + 1, dtype=np.int64)
    for k, col in enumerate(columns):
        start[k + 1] = start[k] + len(col)
    flat = np.array([x for col in columns for x in col], dtype=np.int64)
    return start, flat


class KernelTables(NamedTuple):
    """The read-only arrays the kernels read for one (rules, player count),
    by name. The kernels take them as a plain tuple ``T`` in this order and
    index it with the ``T_*`` constants below (``T[T_OUTCOMES]``): a numba
    global int is a compile-time constant, so the index costs nothing, and a
    plain tuple is what numba's dispatcher types fastest (a named tuple
    argument costs about 9 µs more per call from Python, measured: a 25%
    slower ``FastGame`` step loop)."""

    #: int64 (len(RV_FIELDS),): the rules fields the kernels read, at the RV_* indices
    rule_values: np.ndarray
    #: int64 (53,): points of each tile kind (B25; Rules.tile_value_array)
    tile_values: np.ndarray
    #: float32 (melds, MFS): each meld's observation features (melds.encode_meld)
    meld_features: np.ndarray
    #: int32 (melds, 53, 2): meld ids after adding a kind, lower placement first, -1 none (B10/B11)
    outcomes: np.ndarray
    #: int8 (melds, 53): how many outcomes (0: the kind cannot be added; 2: CHOOSE_END)
    outcome_count: np.ndarray
    #: int64 (melds,): the points of each meld's tiles
    meld_value: np.ndarray
    #: int64 (melds,): each meld's canasta bonus under these rules (B14, V1)
    canasta_bonus: np.ndarray
    #: uint8 (melds,): whether the meld lets its side close (B22; clean-only tables)
    qualifies_to_close: np.ndarray
    #: uint8 (melds,): 7 tiles or more (B14, B24)
    is_canasta: np.ndarray
    #: uint8 (patterns,): the 3-tile patterns these rules allow (sets, distinct colours, jokers)
    allowed_patterns: np.ndarray
    #: int64 (patterns, 3): the kinds of each pattern, NUM_KINDS where unused
    pattern_kinds: np.ndarray
    #: int64 (patterns, 3): how many of each of those kinds
    pattern_needs: np.ndarray
    #: int64 (54,): CSR start of the patterns holding each kind
    patterns_with_kind_start: np.ndarray
    #: int64: CSR list of the patterns holding each kind (V3's required tile)
    patterns_with_kind: np.ndarray
    #: uint8 (patterns, 53): whether a pattern holds a kind
    pattern_has_kind: np.ndarray
    #: int64 (len(OBS_SEGMENTS),): offset of each observation segment, at the O_* indices
    obs_offsets: np.ndarray
    #: float32: the rules segment of the observation (observation.rule_features)
    rule_features: np.ndarray
    #: int64 (53,): colour of each kind
    kind_colour: np.ndarray
    #: uint8 (53,): whether a kind is wild (B2)
    is_wild: np.ndarray
    #: int64 (melds,): a run's colour, -1 for a set
    run_colour: np.ndarray


#: the position of each KernelTables array in the tuple ``T`` the kernels take
(
    T_RULE_VALUES,
    T_TILE_VALUES,
    T_MELD_FEATURES,
    T_OUTCOMES,
    T_OUTCOME_COUNT,
    T_MELD_VALUE,
    T_CANASTA_BONUS,
    T_QUALIFIES_TO_CLOSE,
    T_IS_CANASTA,
    T_ALLOWED_PATTERNS,
    T_PATTERN_KINDS,
    T_PATTERN_NEEDS,
    T_PATTERNS_WITH_KIND_START,
    T_PATTERNS_WITH_KIND,
    T_PATTERN_HAS_KIND,
    T_OBS_OFFSETS,
    T_RULE_FEATURES,
    T_KIND_COLOUR,
    T_IS_WILD,
    T_RUN_COLOUR,
) = range(len(KernelTables._fields))


@dataclass(frozen=True)
class FastTables:
    """Everything the kernels read for one (rules, player count), as arrays.

    ``kernel_args`` is the tuple handed to every kernel (the arrays of
    :class:`KernelTables`, in its order); :attr:`named` gives them by name."""

    rules: Rules
    num_players: int
    num_sides: int
    obs_size: int
    kernel_args: tuple[np.ndarray, ...]
    full_tiles: np.ndarray

    @property
    def named(self) -> KernelTables:
        """The kernel arguments by name."""
        return KernelTables(*self.kernel_args)

    def __reduce__(self) -> tuple[object, tuple[Rules, int]]:
        """copy, deepcopy and pickle give back the one shared, read-only
        instance of :func:`fast_tables` (a copy of the arrays would come back
        writeable: a new type for numba, so every kernel would compile again,
        and a pickle would carry megabytes of tables)."""
        return fast_tables, (self.rules, self.num_players)


@functools.lru_cache(maxsize=64)
def fast_tables(rules: Rules, num_players: int) -> FastTables:
    rules.check_players(num_players)
    if rules.muerto_size > MUERTO_CAP:
        raise ValueError(f"muerto_size {rules.muerto_size} exceeds the fast core's capacity {MUERTO_CAP}")
    _check_int32_scores(rules)
    universe, _ = meld_universe()
    assert len(universe) <= MEMO_SLOT_STRIDE, "the V3 memo key needs a wider slot stride"
    enc, kind_counts = _meld_facts()
    outc, n_outc = _outcome_table(rules.num_jokers, rules.set_colours_distinct)
    values = rules.tile_value_array().astype(np.int64)
    meld_value = (kind_counts @ values).astype(np.int64)
    bonus = np.array([canasta_bonus(m, rules) for m in universe], dtype=np.int64)
    qualifies = np.array([qualifies_to_close(m, rules) for m in universe], dtype=np.uint8)
    is_canasta = np.array([m.is_canasta for m in universe], dtype=np.uint8)
    run_colour = np.array([m.colour if m.is_run else -1 for m in universe], dtype=np.int64)
    allowed = allowed_patterns(rules).astype(np.uint8)
    pattern_kinds = np.ascontiguousarray(PATTERN_KINDS, dtype=np.int64)
    pattern_needs = np.ascontiguousarray(PATTERN_NEEDS, dtype=np.int64)
    with_kind = [np.flatnonzero(PATTERN_COUNTS[:, k] > 0).tolist() for k in range(NK)]
    pwk_start, pwk_list = _csr(with_kind)
    pattern_has = (PATTERN_COUNTS > 0).astype(np.uint8)
    num_sides = rules.num_sides(num_players)
    full_counts = rules.full_counts()
    rv = np.zeros(len(RV_FIELDS), dtype=np.int64)
    rv[RV_PLAYERS] = num_players
    rv[RV_SIDES] = num_sides
    rv[RV_HAND_SIZE] = rules.hand_size[num_players]
    rv[RV_MUERTO_SIZE] = rules.muerto_size
    rv[RV_MAX_TURNS] = rules.max_turns
    rv[RV_TARGET] = rules.target
    rv[RV_PILE_TOP] = rules.pile_top_must_be_melded
    rv[RV_PRIVILEGE] = rules.mano_privilege
    rv[RV_UNPLAYED] = rules.unplayed_indirect_muerto_counts_as_untaken
    rv[RV_CLOSING_BONUS] = rules.closing_bonus
    rv[RV_MUERTO_PENALTY] = rules.muerto_penalty
    rv[RV_TOTAL_TILES] = int(full_counts.sum())
    rv[RV_CLEAN_TO_CLOSE] = rules.close_requires_clean_canasta
    offsets = {s.name: s.offset for s in observation_layout(num_players, rules)}
    obs_off = np.array([offsets[name] for name in OBS_SEGMENTS], dtype=np.int64)
    assert len(RULE_FEATURES) == rule_features(rules, num_players).size
    args = KernelTables(
        rule_values=rv,
        tile_values=values,
        meld_features=enc,
        outcomes=outc,
        outcome_count=n_outc,
        meld_value=meld_value,
        canasta_bonus=bonus,
        qualifies_to_close=qualifies,
        is_canasta=is_canasta,
        allowed_patterns=allowed,
        pattern_kinds=pattern_kinds,
        pattern_needs=pattern_needs,
        patterns_with_kind_start=pwk_start,
        patterns_with_kind=pwk_list,
        pattern_has_kind=pattern_has,
        obs_offsets=obs_off,
        rule_features=rule_features(rules, num_players).astype(np.float32),
        kind_colour=np.asarray(KIND_COLOUR, dtype=np.int64),
        is_wild=np.array(IS_WILD, dtype=np.uint8),
        run_colour=run_colour,
    )
    for arr in args:
        arr.flags.writeable = False
    args = tuple(args)  # a plain tuple: numba types it fastest at every call
    full_tiles = tables_for(rules).full_tiles
    return FastTables(rules, num_players, num_sides, observation_size(num_players, rules), args, full_tiles)


# ----------------------------------------------------------------------------- kernels
_jit = functools.partial(numba.njit, cache=True, nogil=True)


def refresh_dependent_caches(module: str, namespace: Mapping[str, Any], also: tuple[str, ...] = ()) -> bool:
    """Flush the on-disk caches of ``module``'s numba kernels if this file (or a file of ``also``) changed
    since they were compiled; returns whether it flushed. numba keys a cached kernel on its own file only,
    and the kernels of burako_env/vector.py and agents/fast_search.py compile this module's functions into
    themselves: after an edit here they would go on running the old code from their caches. Each such
    module calls this at import (``refresh_dependent_caches(__name__, globals())``); a stamp beside its
    cache holds the hash of this file they were compiled against. ``also``: other files whose functions
    or constants the kernels compile in (agents/fast_planner.py's heuristics' constants)."""
    spec = namespace.get("__spec__")
    if module == "__main__" and spec is not None:
        # run as ``python -m agents.fast_planner`` (scripts/install.sh): the stamp of the module's own name,
        # or every module run so would share one "__main__" stamp, each run finding another module's hash
        # and flushing its caches, and the import that follows finding no stamp of its name and flushing again
        module = spec.name
    kernels = [v for v in namespace.values() if isinstance(v, numba.core.registry.CPUDispatcher)]
    caches = [k._cache for k in kernels if getattr(k, "_cache", None) is not None and k._cache.cache_path]
    if not caches:
        return False
    digest = hashlib.sha1(b"".join(Path(f).read_bytes() for f in (__file__, *also))).hexdigest()
    stamp = Path(caches[0].cache_path) / f"{module}.core-sha1"
    try:
        if stamp.is_file() and stamp.read_text(encoding="ascii") == digest:
            return False
        for cache in caches:
            cache.flush()
        stamp.parent.mkdir(parents=True, exist_ok=True)
        stamp.write_text(digest, encoding="ascii")
    except OSError:  # a read-only install: numba caches elsewhere or not at all
        return False
    return True


@_jit
def _draw_into(st, p):
    n = st[STOCK_LEN] - 1
    tile = st[STOCK + n]
    st[STOCK_LEN] = n
    st[HANDS + p * NK + tile] += 1
    st[HAND_SIZE + p] += 1
    return tile


@_jit
def _clear_pending(st):
    """No CHOOSE_END addition pending (engine: ``pending = None``)."""
    st[PEND_N] = 0
    st[PEND_SLOT] = -1
    st[PEND_KIND] = -1
    st[PEND_OUT0] = -1
    st[PEND_OUT1] = -1


@_jit
def _remove(st, p, kind):
    st[HANDS + p * NK + kind] -= 1
    st[HAND_SIZE + p] -= 1
    if st[KNOWN + p * NK + kind] > 0:
        st[KNOWN + p * NK + kind] -= 1


@_jit
def deal(st, tiles, mano, T):
    """Deal a hand (B4) from a shuffled tile order; the match fields stay."""
    rv = T[T_RULE_VALUES]
    n = rv[RV_PLAYERS]
    sides = rv[RV_SIDES]
    size = rv[RV_HAND_SIZE]
    msize = rv[RV_MUERTO_SIZE]
    total = rv[RV_TOTAL_TILES]
    st[HANDS : HANDS + MAX_PLAYERS * NK] = 0
    st[KNOWN : KNOWN + MAX_PLAYERS * NK] = 0
    st[PILE_COUNTS : PILE_COUNTS + NK] = 0
    pos = 0
    for p in range(n):
        for i in range(size):
            st[HANDS + p * NK + tiles[pos + i]] += 1
        st[HAND_SIZE + p] = size
        pos += size
    for s in range(MAX_SIDES):
        st[MUERTO_LEN + s] = 0
        st[N_MELDS + s] = 0
        st[MUERTO_TAKEN + s] = 0
        st[CLOSE_READY + s] = 0
    for s in range(sides):
        for i in range(msize):
            st[MUERTOS + s * MUERTO_CAP + i] = tiles[pos + i]
        st[MUERTO_LEN + s] = msize
        pos += msize
    stock_len = total - pos
    for i in range(stock_len):
        st[STOCK + i] = tiles[pos + i]
    st[STOCK_LEN] = stock_len
    st[PILE_LEN] = 0
    for p in range(MAX_PLAYERS):
        st[MUERTO_UNPLAYED + p] = 0
    st[HAND_SCORES : HAND_SCORES + MAX_SIDES * NUM_SCORE_PARTS] = 0
    st[HAS_SCORES] = 0
    st[MANO] = mano
    st[CURRENT] = mano
    st[TURN] = 0
    _clear_pending(st)
    st[REQUIRED] = -1
    st[END_REASON] = END_NONE
    st[CLOSER] = -1
    st[PRIV_TILE] = -1
    if rv[RV_PRIVILEGE]:
        st[PRIV_TILE] = _draw_into(st, mano)
        st[PHASE] = P_PRIVILEGE
    else:
        st[PHASE] = P_DRAW


@_jit
def new_match(st, tiles, mano, T):
    """A fresh match state with its first hand dealt."""
    st[:] = 0
    st[MATCH_WINNER] = -1
    st[HAND_NUMBER] = 0
    deal(st, tiles, mano, T)


@_jit
def _side_parts(st, T, s):
    """Side s's melded tiles, canasta bonuses and hand penalty as the hand stands, and whether its
    muerto counts as untaken (B25-B27; V3a: an indirect muerto not yet played, where the rules say so)."""
    rv, values, meld_value, bonus = T[T_RULE_VALUES], T[T_TILE_VALUES], T[T_MELD_VALUE], T[T_CANASTA_BONUS]
    n = rv[RV_PLAYERS]
    sides = rv[RV_SIDES]
    melded = 0
    cbonus = 0
    for j in range(st[N_MELDS + s]):
        m = st[MELDS + s * SLOTS + j]
        melded += meld_value[m]
        cbonus += bonus[m]
    untaken = st[MUERTO_TAKEN + s] == 0
    penalty = 0
    for p in range(n):
        if p % sides != s:
            continue
        if st[MUERTO_UNPLAYED + p] and rv[RV_UNPLAYED]:
            untaken = True
            continue
        for k in range(NK):
            penalty += values[k] * st[HANDS + p * NK + k]
    return melded, cbonus, penalty, untaken


@_jit
def _score_sides(st, T):
    rv = T[T_RULE_VALUES]
    sides = rv[RV_SIDES]
    for s in range(sides):
        base = HAND_SCORES + s * NUM_SCORE_PARTS
        melded, cbonus, penalty, untaken = _side_parts(st, T, s)
        st[base + 0] = melded
        st[base + 1] = cbonus
        st[base + 2] = 0
        st[base + 3] = penalty
        st[base + 4] = rv[RV_MUERTO_PENALTY] if untaken else 0
    if st[CLOSER] >= 0:
        st[HAND_SCORES + (st[CLOSER] % sides) * NUM_SCORE_PARTS + 2] = rv[RV_CLOSING_BONUS]
    st[HAS_SCORES] = 1


@_jit
def table_total(st, T, s):
    """What side s has on the table as the hand stands: melded tiles + canasta bonuses - the muerto
    penalty while its muerto counts as untaken (``outcomes.table_totals``: public, no hand penalty)."""
    melded, cbonus, _, untaken = _side_parts(st, T, s)
    return melded + cbonus - (T[T_RULE_VALUES][RV_MUERTO_PENALTY] if untaken else 0)


@_jit
def side_total(st, s):
    base = HAND_SCORES + s * NUM_SCORE_PARTS
    return st[base] + st[base + 1] + st[base + 2] - st[base + 3] - st[base + 4]


@_jit
def _end_hand(st, reason, closer, T):
    rv, is_canasta = T[T_RULE_VALUES], T[T_IS_CANASTA]
    sides = rv[RV_SIDES]
    st[PHASE] = P_HAND_OVER
    _clear_pending(st)
    st[CLOSER] = closer
    if reason == END_STOCK_EXHAUSTED:
        any_canasta = False
        for s in range(sides):
            for j in range(st[N_MELDS + s]):
                if is_canasta[st[MELDS + s * SLOTS + j]]:
                    any_canasta = True
        if not any_canasta:
            reason = END_VOID  # B24
    st[END_REASON] = reason
    if reason in (END_VOID, END_TRUNCATED):
        st[HAS_SCORES] = 0
        return
    _score_sides(st, T)
    for s in range(sides):
        st[MATCH_SCORES + s] += side_total(st, s)
    best = st[MATCH_SCORES]
    for s in range(1, sides):
        best = max(best, st[MATCH_SCORES + s])
    if best < rv[RV_TARGET]:
        return
    leaders = 0
    leader = -1
    for s in range(sides):
        if st[MATCH_SCORES + s] == best:
            leaders += 1
            leader = s
    if leaders == 1:
        st[MATCH_WINNER] = leader


@_jit
def _end_turn(st, T):
    rv = T[T_RULE_VALUES]
    st[TURN] += 1
    if st[TURN] >= rv[RV_MAX_TURNS]:
        _end_hand(st, END_TRUNCATED, -1, T)
        return
    st[CURRENT] = (st[CURRENT] + 1) % rv[RV_PLAYERS]
    if st[STOCK_LEN] == 0:
        _end_hand(st, END_STOCK_EXHAUSTED, -1, T)  # B24: before the draw
        return
    st[PHASE] = P_DRAW


@_jit
def _take_muerto(st, p, side):
    n = st[MUERTO_LEN + side]
    for i in range(n):
        st[HANDS + p * NK + st[MUERTOS + side * MUERTO_CAP + i]] += 1
    st[HAND_SIZE + p] += n
    st[MUERTO_LEN + side] = 0
    st[MUERTO_TAKEN + side] = 1


@_jit
def _after_meld(st, p, T):
    if st[HAND_SIZE + p] != 0:
        return
    side = p % T[T_RULE_VALUES][RV_SIDES]
    if not st[MUERTO_TAKEN + side]:
        _take_muerto(st, p, side)  # direct take (B20)
    else:
        _end_hand(st, END_CLOSED, p, T)  # closing by melding (B22)


@_jit
def _meld_changed(st, side, T):
    qualifies = T[T_QUALIFIES_TO_CLOSE]
    ready = 0
    for j in range(st[N_MELDS + side]):
        if qualifies[st[MELDS + side * SLOTS + j]]:
            ready = 1
            break
    st[CLOSE_READY + side] = ready


@_jit
def _place(st, p, slot, kind, meld, T):
    _remove(st, p, kind)
    side = p % T[T_RULE_VALUES][RV_SIDES]
    st[MELDS + side * SLOTS + slot] = meld
    _meld_changed(st, side, T)
    if kind == st[REQUIRED]:
        st[REQUIRED] = -1
    _after_meld(st, p, T)


@_jit
def apply_unchecked(st, action, T):
    """The transition (engine.GameState._apply_unchecked)."""
    rv, outc, n_outc = T[T_RULE_VALUES], T[T_OUTCOMES], T[T_OUTCOME_COUNT]
    phase = st[PHASE]
    p = st[CURRENT]
    sides = rv[RV_SIDES]
    if phase == P_DRAW:
        st[MUERTO_UNPLAYED + p] = 0
        if action == DRAW_STOCK:
            _draw_into(st, p)
        else:
            top = st[PILE + st[PILE_LEN] - 1]
            if rv[RV_PILE_TOP]:
                st[REQUIRED] = top
            for k in range(NK):
                c = st[PILE_COUNTS + k]
                if c:
                    st[HANDS + p * NK + k] += c
                    st[KNOWN + p * NK + k] += c
                    st[PILE_COUNTS + k] = 0
            st[HAND_SIZE + p] += st[PILE_LEN]
            st[PILE_LEN] = 0
        st[PHASE] = P_PLAY
    elif phase == P_PRIVILEGE:
        if action == REJECT:
            tile = st[PRIV_TILE]
            _remove(st, p, tile)
            st[PILE + st[PILE_LEN]] = tile
            st[PILE_LEN] += 1
            st[PILE_COUNTS + tile] += 1
            _draw_into(st, p)
        st[PRIV_TILE] = -1
        st[PHASE] = P_PLAY
    elif phase == P_CHOOSE_END:
        slot = st[PEND_SLOT]
        kind = st[PEND_KIND]
        meld = st[PEND_OUT0] if action == CHOOSE_BASE else st[PEND_OUT1]
        _clear_pending(st)
        st[PHASE] = P_PLAY
        _place(st, p, slot, kind, meld, T)
    elif action < MELD_BASE:  # discard
        kind = action - DISCARD_BASE
        _remove(st, p, kind)
        st[PILE + st[PILE_LEN]] = kind
        st[PILE_LEN] += 1
        st[PILE_COUNTS + kind] += 1
        if st[HAND_SIZE + p] == 0:
            side = p % sides
            if not st[MUERTO_TAKEN + side]:
                _take_muerto(st, p, side)  # indirect take (B21)
                st[MUERTO_UNPLAYED + p] = 1
            else:
                _end_hand(st, END_CLOSED, p, T)  # closing by discard (B22)
                return
        _end_turn(st, T)
    elif action < ADD_BASE:  # meld
        pattern = action - MELD_BASE
        pkinds, pneeds, phas = T[T_PATTERN_KINDS], T[T_PATTERN_NEEDS], T[T_PATTERN_HAS_KIND]
        for j in range(3):
            k = pkinds[pattern, j]
            if k < NK:
                for _ in range(pneeds[pattern, j]):
                    _remove(st, p, k)
        side = p % sides
        slot = st[N_MELDS + side]
        st[MELDS + side * SLOTS + slot] = pattern  # a pattern's meld id is its index
        st[N_MELDS + side] = slot + 1
        _meld_changed(st, side, T)
        req = st[REQUIRED]
        if req >= 0 and phas[pattern, req]:
            st[REQUIRED] = -1
        _after_meld(st, p, T)
    else:  # add
        rel = action - ADD_BASE
        slot = rel // NK
        kind = rel - slot * NK
        side = p % sides
        meld = st[MELDS + side * SLOTS + slot]
        if n_outc[meld, kind] > 1:
            st[PEND_SLOT] = slot
            st[PEND_KIND] = kind
            st[PEND_N] = n_outc[meld, kind]
            st[PEND_OUT0] = outc[meld, kind, 0]
            st[PEND_OUT1] = outc[meld, kind, 1]
            st[PHASE] = P_CHOOSE_END
        else:
            _place(st, p, slot, kind, outc[meld, kind, 0], T)


@_jit
def _pattern_available(st, p, pattern, T):
    pkinds, pneeds = T[T_PATTERN_KINDS], T[T_PATTERN_NEEDS]
    for j in range(3):
        k = pkinds[pattern, j]
        if k < NK and st[HANDS + p * NK + k] < pneeds[pattern, j]:
            return False
    return True


@_jit
def base_mask(st, T, mask):
    """The mask by the meld rules alone (engine.GameState._base_mask); mask
    is zeroed here."""
    rv, n_outc, allowed = T[T_RULE_VALUES], T[T_OUTCOME_COUNT], T[T_ALLOWED_PATTERNS]
    mask[:] = 0
    phase = st[PHASE]
    if phase == P_DRAW:
        mask[DRAW_STOCK] = 1
        if st[PILE_LEN] > 0:
            mask[TAKE_PILE] = 1
        return
    if phase == P_PRIVILEGE:
        mask[KEEP] = 1
        mask[REJECT] = 1
        return
    if phase == P_CHOOSE_END:
        for i in range(st[PEND_N]):
            mask[CHOOSE_BASE + i] = 1
        return
    if phase != P_PLAY:
        return
    p = st[CURRENT]
    side = p % rv[RV_SIDES]
    hb = HANDS + p * NK
    if st[REQUIRED] < 0:
        for k in range(NK):
            if st[hb + k] > 0:
                mask[DISCARD_BASE + k] = 1
    for pattern in range(NUM_PATTERNS):
        if allowed[pattern] and _pattern_available(st, p, pattern, T):
            mask[MELD_BASE + pattern] = 1
    for j in range(st[N_MELDS + side]):
        meld = st[MELDS + side * SLOTS + j]
        row = ADD_BASE + j * NK
        for k in range(NK):
            if st[hb + k] > 0 and n_outc[meld, k] > 0:
                mask[row + k] = 1


@_jit
def _constrained(st, T):
    """engine.GameState._constrained."""
    if st[REQUIRED] >= 0:
        return True
    rv = T[T_RULE_VALUES]
    p = st[CURRENT]
    side = p % rv[RV_SIDES]
    if not st[MUERTO_TAKEN + side]:
        return False  # the muerto holds 2+ tiles: see the readable engine
    if st[HAND_SIZE + p] > 4:
        return False
    return (not st[CLOSE_READY + side]) or rv[RV_CLEAN_TO_CLOSE] != 0


#: candidate actions of one look-ahead level: the patterns holding a kind,
#: additions of any of a run's 17 candidate kinds to each of 36 slots, or the 2
#: choices of CHOOSE_END
RUN_CANDIDATE_KINDS = 17
CAND_MAX = int((PATTERN_COUNTS > 0).sum(axis=0).max()) + SLOTS * RUN_CANDIDATE_KINDS + 2
#: a scratch row: the state, then the candidate count, next index, V3 focus
#: slot, V3 stage (1 while the additions that prepare a meld are still to be
#: listed), candidates
_CAND = STATE_SIZE
_FOCUS = STATE_SIZE + 2
_STAGE = STATE_SIZE + 3
_CAND_LIST = STATE_SIZE + 4
SCRATCH_WIDTH = _CAND_LIST + CAND_MAX
#: look-ahead levels: a V3 chain adds at most 11 tiles to a run, each maybe
#: with a CHOOSE_END level, after two levels above it; the last row is the memo
SCRATCH_DEPTH = 2 * 14 + 6
MEMO_ROW = SCRATCH_DEPTH - 1
#: memo key of (slot, meld id): slot * MEMO_SLOT_STRIDE + meld id
MEMO_SLOT_STRIDE = 1 << 14


@_jit
def _alive_direct(s, T):
    """engine._alive where it needs no look-ahead: 1 alive, 0 stuck, -1 the
    answer depends on candidate actions (CHOOSE_END, or V3's required tile)."""
    if s[PHASE] == P_CHOOSE_END:
        return -1
    rv, outc, n_outc, qualifies = T[T_RULE_VALUES], T[T_OUTCOMES], T[T_OUTCOME_COUNT], T[T_QUALIFIES_TO_CLOSE]
    p = s[CURRENT]
    side = p % rv[RV_SIDES]
    if s[REQUIRED] >= 0:
        return -1
    if s[HAND_SIZE + p] >= 2 or not s[MUERTO_TAKEN + side] or s[CLOSE_READY + side]:
        return 1  # a discard is legal
    last = 0
    for k in range(NK):
        if s[HANDS + p * NK + k] > 0:
            last = k
            break
    for j in range(s[N_MELDS + side]):  # B23: the last tile must close
        m = s[MELDS + side * SLOTS + j]
        for i in range(n_outc[m, last]):
            if qualifies[outc[m, last, i]]:
                return 1
    return 0


@_jit
def _chain_slot(row, slot, required, T):
    """Whether additions other than the required tile can prepare meld
    ``slot`` for it (engine._chain_open): a run of its colour, any run for a
    wild; never a set."""
    rv, colour_of, is_wild, run_colours = T[T_RULE_VALUES], T[T_KIND_COLOUR], T[T_IS_WILD], T[T_RUN_COLOUR]
    side = row[CURRENT] % rv[RV_SIDES]
    run_colour = run_colours[row[MELDS + side * SLOTS + slot]]
    return run_colour >= 0 and (is_wild[required] != 0 or colour_of[required] == run_colour)


@_jit
def _add_candidates(row, slot, required, direct, prepare, count, T):
    """Additions to ``slot`` into the row's candidates: (``direct``) the
    required tile, (``prepare``) every other kind of the hand that fits."""
    rv, n_outc = T[T_RULE_VALUES], T[T_OUTCOME_COUNT]
    p = row[CURRENT]
    side = p % rv[RV_SIDES]
    m = row[MELDS + side * SLOTS + slot]
    hb = HANDS + p * NK
    if direct and row[hb + required] > 0 and n_outc[m, required] > 0:
        row[_CAND_LIST + count] = ADD_BASE + slot * NK + required
        count += 1
    if prepare:
        for k in range(NK):
            if k != required and row[hb + k] > 0 and n_outc[m, k] > 0:
                row[_CAND_LIST + count] = ADD_BASE + slot * NK + k
                count += 1
    return count


@_jit
def _fill_candidates(row, buf, T):
    """The actions engine._alive tries (base-legal ones only) into the row's
    candidate list; a V3 search from a new root (focus -1) clears the memo."""
    rv, allowed = T[T_RULE_VALUES], T[T_ALLOWED_PATTERNS]
    pwk_start, pwk_list = T[T_PATTERNS_WITH_KIND_START], T[T_PATTERNS_WITH_KIND]
    count = 0
    row[_STAGE] = 0
    if row[PHASE] == P_CHOOSE_END:
        for i in range(row[PEND_N]):
            row[_CAND_LIST + count] = CHOOSE_BASE + i
            count += 1
    else:
        # V3 (engine._v3_open): the patterns holding the required tile, then
        # additions to one meld at a time (the focus slot once chosen)
        p = row[CURRENT]
        side = p % rv[RV_SIDES]
        required = row[REQUIRED]
        focus = row[_FOCUS]
        if focus < 0:
            buf[MEMO_ROW, 0] = 0
            for i in range(pwk_start[required], pwk_start[required + 1]):
                pattern = pwk_list[i]
                if allowed[pattern] and _pattern_available(row, p, pattern, T):
                    row[_CAND_LIST + count] = MELD_BASE + pattern
                    count += 1
            for j in range(row[N_MELDS + side]):  # the tile itself to every meld first
                count = _add_candidates(row, j, required, True, False, count, T)
            row[_STAGE] = 1  # the preparing additions: listed only if these fail
        else:
            count = _add_candidates(row, focus, required, True, True, count, T)
    row[_CAND] = count
    row[_CAND + 1] = 0


@_jit
def _more_candidates(row, T):
    """A V3 root's second stage (engine._chain_open): the additions that
    prepare a meld for the required tile, listed once the direct ones failed.
    False when there are none left to list."""
    if row[PHASE] != P_PLAY or row[_FOCUS] >= 0 or row[_STAGE] != 1:
        return False
    row[_STAGE] = 0
    side = row[CURRENT] % T[T_RULE_VALUES][RV_SIDES]
    required = row[REQUIRED]
    count = 0
    for j in range(row[N_MELDS + side]):
        if _chain_slot(row, j, required, T):
            count = _add_candidates(row, j, required, False, True, count, T)
    row[_CAND] = count
    row[_CAND + 1] = 0
    return count > 0


@_jit
def _seen(buf, row, focus, T):
    """The V3 memo: whether meld ``focus`` of this PLAY state was already
    searched from the current root (same meld, so same hand: nothing else
    changed); records it otherwise. A full memo records nothing more, which
    only costs time."""
    side = row[CURRENT] % T[T_RULE_VALUES][RV_SIDES]
    key = focus * MEMO_SLOT_STRIDE + row[MELDS + side * SLOTS + focus]
    memo = buf[MEMO_ROW]
    n = memo[0]
    for i in range(1, n + 1):
        if memo[i] == key:
            return True
    if n + 1 < memo.shape[0]:
        memo[n + 1] = key
        memo[0] = n + 1
    return False


@_jit
def _step_ok(buf, d, action, T):
    """engine._action_ok's first part on ``buf[d]``: 1 legal, 0 illegal, -1
    legal iff the state reached (``buf[d + 1]``) is alive."""
    s = buf[d, :STATE_SIZE]
    if s[REQUIRED] >= 0 and DISCARD_BASE <= action < MELD_BASE:
        return 0  # V3
    c = buf[d + 1, :STATE_SIZE]
    c[:] = s
    player = s[CURRENT]
    apply_unchecked(c, action, T)
    if c[PHASE] == P_HAND_OVER:
        if c[END_REASON] == END_CLOSED:
            return 1 if c[CLOSE_READY + player % T[T_RULE_VALUES][RV_SIDES]] != 0 else 0  # B22/B23
        return 1
    if c[CURRENT] != player or (c[PHASE] != P_PLAY and c[PHASE] != P_CHOOSE_END):
        return 1  # the turn ended
    return -1


@_jit
def _alive(buf, d0, T):
    """engine._alive on ``buf[d0]``: an OR over candidate actions, each of
    which may need the next state's own OR, searched depth first with an
    explicit stack of scratch rows (numba cannot cache recursive functions).
    Below a V3 root every level keeps to one meld (its focus slot)."""
    r = _alive_direct(buf[d0], T)
    if r >= 0:
        return r == 1
    buf[d0, _FOCUS] = -1
    _fill_candidates(buf[d0], buf, T)
    d = d0
    while True:
        row = buf[d]
        if row[_CAND + 1] >= row[_CAND] and not _more_candidates(row, T):
            if d == d0:
                return False  # no candidate at the root: stuck
            d -= 1  # this level is stuck, so the action that led here is illegal
            continue
        action = row[_CAND_LIST + row[_CAND + 1]]
        row[_CAND + 1] += 1
        r = _step_ok(buf, d, action, T)
        if r == 1:
            return True  # one legal action at any level makes every level above alive
        if r == 0:
            continue
        child = buf[d + 1]
        r = _alive_direct(child, T)
        if r == 1:
            return True
        if r == 0:
            continue
        if row[PHASE] == P_CHOOSE_END:
            focus = row[_FOCUS]
        elif action >= ADD_BASE:
            focus = (action - ADD_BASE) // NK
        else:
            focus = -1
        if child[PHASE] == P_PLAY and focus >= 0 and _seen(buf, child, focus, T):
            continue
        if d + 3 >= buf.shape[0]:
            raise RuntimeError("look-ahead deeper than the scratch rows")
        child[_FOCUS] = focus
        _fill_candidates(child, buf, T)
        d += 1


@_jit
def _action_ok(buf, action, T):
    """engine._action_ok on ``buf[0]``."""
    r = _step_ok(buf, 0, action, T)
    if r >= 0:
        return r == 1
    return _alive(buf, 1, T)


@_jit
def legal_mask(st, T, buf, mask):
    """The exact mask (engine.GameState._compute_mask) into ``mask``;
    ``buf`` is a (SCRATCH_DEPTH, SCRATCH_WIDTH) scratch array."""
    base_mask(st, T, mask)
    phase = st[PHASE]
    rv = T[T_RULE_VALUES]
    if phase == P_DRAW:
        if mask[TAKE_PILE] and rv[RV_PILE_TOP]:
            c = buf[1, :STATE_SIZE]
            c[:] = st
            apply_unchecked(c, TAKE_PILE, T)
            if not _alive(buf, 1, T):
                mask[TAKE_PILE] = 0
    elif (phase in (P_PLAY, P_CHOOSE_END)) and _constrained(st, T):
        buf[0, :STATE_SIZE] = st
        for a in range(NUM_ACTIONS):
            if mask[a] and not _action_ok(buf, a, T):
                mask[a] = 0


@_jit
def encode(st, player, T, out):
    """engine observation of ``player`` (observation.Observer.encode) into ``out``."""
    out[:] = 0.0
    _encode_set(st, player, T, out)


@_jit
def encode_over(st, player, T, out, slots_written):
    """:func:`encode` into ``out`` where it holds this function's previous output for the same game:
    ``slots_written[i]`` is how many meld slots that output set in the i-th side's block. The meld blocks
    are 88% of a 2-player row (2 x 36 slots x 60 features) and a hand uses a few of their slots, so
    only the segments before and after them and the slots set before are cleared, not the whole row;
    the slots set now are noted in ``slots_written``. Any other writer of ``out`` breaks this (a
    vector env clears whole rows unless told that no one else writes its observations)."""
    rv, off = T[T_RULE_VALUES], T[T_OBS_OFFSETS]
    sides = rv[RV_SIDES]
    melds = off[O_MELDS]
    block = SLOTS * MFS
    out[:melds] = 0.0
    out[melds + sides * block :] = 0.0
    for i in range(sides):
        base = melds + i * block
        out[base : base + slots_written[i] * MFS] = 0.0
    note_slots(st, player, T, slots_written)
    _encode_set(st, player, T, out)


@_jit
def note_slots(st, player, T, slots_written):
    """How many meld slots ``player``'s observation sets in each side's block, into ``slots_written``."""
    sides = T[T_RULE_VALUES][RV_SIDES]
    own = player % sides
    for i in range(sides):
        slots_written[i] = st[N_MELDS + (own + i) % sides]


@_jit
def _encode_set(st, player, T, out):
    """What :func:`encode` sets in a cleared ``out``."""
    rv, enc, off, rules_values = T[T_RULE_VALUES], T[T_MELD_FEATURES], T[T_OBS_OFFSETS], T[T_RULE_FEATURES]
    n = rv[RV_PLAYERS]
    sides = rv[RV_SIDES]
    own = player % sides
    o = off[O_HAND]
    hb = HANDS + player * NK
    for k in range(NK):
        out[o + k] = st[hb + k]
    if st[PHASE] == P_PRIVILEGE and player == st[CURRENT] and st[PRIV_TILE] >= 0:
        out[off[O_PRIV] + st[PRIV_TILE]] = 1.0
    block = SLOTS * MFS
    for i in range(sides):
        s = (own + i) % sides
        base = off[O_MELDS] + i * block
        for j in range(st[N_MELDS + s]):
            m = st[MELDS + s * SLOTS + j]
            row = base + j * MFS
            for f in range(MFS):
                out[row + f] = enc[m, f]
    o = off[O_PILE_COUNTS]
    for k in range(NK):
        out[o + k] = st[PILE_COUNTS + k]
    pile_len = st[PILE_LEN]
    if pile_len > 0:
        out[off[O_PILE_TOP] + st[PILE + pile_len - 1]] = 1.0
    out[off[O_PILE_SIZE]] = np.float32(pile_len / TOTAL_TILES_SCALE)
    known = off[O_KNOWN]
    for i in range(1, n):
        q = (player + i) % n
        for k in range(NK):
            out[known + (i - 1) * NK + k] = st[KNOWN + q * NK + k]
    for i in range(n):
        q = (player + i) % n
        out[off[O_HAND_SIZES] + i] = np.float32(st[HAND_SIZE + q] / HAND_SIZE_SCALE)
        out[off[O_MUERTO_UNPLAYED] + i] = st[MUERTO_UNPLAYED + q]
    out[off[O_STOCK_SIZE]] = np.float32(st[STOCK_LEN] / TOTAL_TILES_SCALE)
    target = float(rv[RV_TARGET])
    for i in range(sides):
        s = (own + i) % sides
        out[off[O_MUERTO_TAKEN] + i] = st[MUERTO_TAKEN + s]
        out[off[O_CLOSE_READY] + i] = st[CLOSE_READY + s]
        out[off[O_MATCH_SCORES] + i] = np.float32(st[MATCH_SCORES + s] / target)
    phase = st[PHASE]
    if phase < P_HAND_OVER:
        out[off[O_PHASE] + phase] = 1.0
    if st[PEND_N] > 0:
        out[off[O_PEND_TILE] + st[PEND_KIND]] = 1.0
        out[off[O_PEND_SLOT] + st[PEND_SLOT]] = 1.0
        po = off[O_PEND_OPTIONS]
        for i in range(st[PEND_N]):
            m = st[PEND_OUT0] if i == 0 else st[PEND_OUT1]
            for f in range(MFS):
                out[po + i * MFS + f] = enc[m, f]
    if st[REQUIRED] >= 0:
        out[off[O_REQUIRED] + st[REQUIRED]] = 1.0
    out[off[O_MANO] + (st[MANO] - player) % n] = 1.0
    out[off[O_TURN]] = np.float32(st[TURN] / float(rv[RV_MAX_TURNS]))
    o = off[O_RULES]
    for i in range(rules_values.shape[0]):
        out[o + i] = rules_values[i]


# ----------------------------------------------------------------------------- one game
def _meld_data(meld_id: int) -> list[object]:
    m = meld_universe()[0][meld_id]
    return [int(m.is_run), m.colour, m.number, m.lo, m.hi, m.wild_kind, m.wild_pos, list(m.set_colours)]


def _side_scores(st: np.ndarray, num_sides: int) -> list[SideScore] | None:
    if not st[HAS_SCORES]:
        return None
    parts = st[HAND_SCORES : HAND_SCORES + num_sides * NUM_SCORE_PARTS].reshape(-1, NUM_SCORE_PARTS)
    return [SideScore(*(int(x) for x in row)) for row in parts]


def state_dict(st: np.ndarray, tables: FastTables) -> dict[str, object]:
    """A flat state as the readable engine's ``GameState.to_dict``."""
    n, sides = tables.num_players, tables.num_sides
    pend_n = int(st[PEND_N])
    pending = None
    if pend_n:
        outs = [int(st[PEND_OUT0]), int(st[PEND_OUT1])][:pend_n]
        pending = [int(st[PEND_SLOT]), int(st[PEND_KIND]), [_meld_data(m) for m in outs]]
    scores = _side_scores(st, sides)
    return {
        "format": 1,
        "rules": tables.rules.to_dict(),
        "num_players": n,
        "hands": st[HANDS : HANDS + n * NK].reshape(n, NK).tolist(),
        "stock": st[STOCK : STOCK + st[STOCK_LEN]].tolist(),
        "pile": st[PILE : PILE + st[PILE_LEN]].tolist(),
        "muertos": [
            st[MUERTOS + s * MUERTO_CAP : MUERTOS + s * MUERTO_CAP + st[MUERTO_LEN + s]].tolist() for s in range(sides)
        ],
        "muerto_taken": [bool(x) for x in st[MUERTO_TAKEN : MUERTO_TAKEN + sides]],
        "muerto_unplayed": [bool(x) for x in st[MUERTO_UNPLAYED : MUERTO_UNPLAYED + n]],
        "melds": [
            [_meld_data(int(m)) for m in st[MELDS + s * SLOTS : MELDS + s * SLOTS + st[N_MELDS + s]]]
            for s in range(sides)
        ],
        "known": st[KNOWN : KNOWN + n * NK].reshape(n, NK).tolist(),
        "phase": Phase(int(st[PHASE])).name,
        "current": int(st[CURRENT]),
        "mano": int(st[MANO]),
        "turn": int(st[TURN]),
        "privilege_tile": int(st[PRIV_TILE]),
        "pending": pending,
        "pile_top_required": int(st[REQUIRED]),
        "end_reason": END_REASON_NAMES[int(st[END_REASON])],
        "closer": int(st[CLOSER]),
        "hand_scores": None if scores is None else [vars(s).copy() for s in scores],
        "match_scores": st[MATCH_SCORES : MATCH_SCORES + sides].tolist(),
        "hand_number": int(st[HAND_NUMBER]),
        "match_winner": int(st[MATCH_WINNER]),
    }


class FastGame:
    """One game on the compiled core, with the engine's API for playing it:
    ``legal_mask``, ``apply`` (illegal actions raise IllegalActionError and
    change nothing), ``encode``, ``clone``, ``next_hand``, and
    :meth:`to_game_state` for everything else (rendering, agents, records)."""

    __slots__ = ("_mask_ok", "args", "buf", "mask", "side_of", "st", "tables")

    def __init__(self, tables: FastTables) -> None:
        self.tables = tables
        self.side_of = tuple(p % tables.num_sides for p in range(tables.num_players))
        self.args = tables.kernel_args
        self.st = np.zeros(STATE_SIZE, dtype=np.int32)
        self.buf: np.ndarray | None = None  # the look-ahead's scratch rows, made on first use
        self.mask = np.zeros(NUM_ACTIONS, dtype=np.int8)
        self._mask_ok = False

    @classmethod
    def new_game(
        cls, rng: np.random.Generator, rules: Rules | str = "burako", num_players: int = 2, mano: int | None = None
    ) -> FastGame:
        """Same draws from ``rng`` as :meth:`GameState.new_game`, so the same deal."""
        game = cls(fast_tables(load_rules(rules), num_players))
        first_mano = draw_first_mano(rng, num_players) if mano is None else check_seat(mano, num_players, "mano")
        new_match(game.st, shuffle_tiles(rng, game.tables.full_tiles), first_mano, game.args)
        return game

    @classmethod
    def from_game_state(cls, state: GameState) -> FastGame:
        """The same state on the compiled core (inverse of :meth:`to_game_state`),
        for scenarios built with the readable engine (``scenario.build_state``)."""
        tables = fast_tables(state.rules, state.num_players)
        most = int(np.iinfo(np.int32).max)
        if any(abs(int(total)) > most for total in state.match_scores):  # the readable engine's are unbounded
            raise ValueError(
                f"match scores {list(state.match_scores)} do not fit the compiled core's int32 state (at most "
                f'{most:,} either way); play this state on the readable engine (engine="python")'
            )
        game = cls(tables)
        st = game.st
        _, ids = meld_universe()
        n, sides = tables.num_players, tables.num_sides
        st[MATCH_WINNER] = state.match_winner
        st[HANDS : HANDS + n * NK] = state.hands.reshape(-1)
        st[KNOWN : KNOWN + n * NK] = state.known.reshape(-1)
        st[PILE_COUNTS : PILE_COUNTS + NK] = state.pile_counts
        st[STOCK : STOCK + len(state.stock)] = state.stock
        st[STOCK_LEN] = len(state.stock)
        st[PILE : PILE + len(state.pile)] = state.pile
        st[PILE_LEN] = len(state.pile)
        for s in range(sides):
            muerto = state.muertos[s]
            st[MUERTOS + s * MUERTO_CAP : MUERTOS + s * MUERTO_CAP + len(muerto)] = muerto
            st[MUERTO_LEN + s] = len(muerto)
            for j, meld in enumerate(state.melds[s]):
                st[MELDS + s * SLOTS + j] = ids[meld]
            st[N_MELDS + s] = len(state.melds[s])
            st[MUERTO_TAKEN + s] = state.muerto_taken[s]
            st[CLOSE_READY + s] = state.close_ready[s]
            st[MATCH_SCORES + s] = state.match_scores[s]
        st[HAND_SIZE : HAND_SIZE + n] = state.hand_size
        st[MUERTO_UNPLAYED : MUERTO_UNPLAYED + n] = state.muerto_unplayed
        if state.hand_scores is not None:
            for s, score in enumerate(state.hand_scores):
                base = HAND_SCORES + s * NUM_SCORE_PARTS
                st[base : base + NUM_SCORE_PARTS] = [
                    score.melded,
                    score.canasta_bonus,
                    score.closing_bonus,
                    score.hand_penalty,
                    score.muerto_penalty,
                ]
            st[HAS_SCORES] = 1
        st[PHASE] = int(state.phase)
        st[CURRENT] = state.current
        st[MANO] = state.mano
        st[TURN] = state.turn
        st[PRIV_TILE] = state.privilege_tile
        _clear_pending(st)
        if state.pending is not None:
            slot, kind, outcomes = state.pending
            st[PEND_SLOT] = slot
            st[PEND_KIND] = kind
            st[PEND_N] = len(outcomes)
            st[PEND_OUT0] = ids[outcomes[0]]
            if len(outcomes) > 1:
                st[PEND_OUT1] = ids[outcomes[1]]
        st[REQUIRED] = state.pile_top_required
        st[END_REASON] = END_REASON_NAMES.index(state.end_reason)
        st[CLOSER] = state.closer
        st[HAND_NUMBER] = state.hand_number
        if game.to_dict() != state.to_dict():
            raise ValueError("this state does not fit the compiled core's layout")
        return game

    def next_hand(self, rng: np.random.Generator) -> None:
        """engine.GameState.next_hand: the mano passes left except after a void hand."""
        st = self.st
        if st[PHASE] != P_HAND_OVER or st[MATCH_WINNER] >= 0:
            raise IllegalActionError("next_hand: the current hand is not over, or the match is over")
        mano = int(st[MANO]) if st[END_REASON] == END_VOID else (int(st[MANO]) + 1) % self.tables.num_players
        st[HAND_NUMBER] += 1
        deal(st, shuffle_tiles(rng, self.tables.full_tiles), mano, self.args)
        self._mask_ok = False

    # ------------------------------------------------------------------ play
    def legal_mask(self) -> np.ndarray:
        """int8 mask over the action space, cached until the next action
        (which leaves this array as it is); a read-only view: a caller's write
        would make :meth:`apply` accept an illegal action."""
        view = self._legal().view()
        view.flags.writeable = False
        return view

    def _legal(self) -> np.ndarray:
        """The cached mask itself, for this class's own reads (no view per call on the step path)."""
        if not self._mask_ok:
            if self.buf is None:
                self.buf = np.zeros((SCRATCH_DEPTH, SCRATCH_WIDTH), dtype=np.int32)
            legal_mask(self.st, self.args, self.buf, self.mask)
            self._mask_ok = True
        return self.mask

    def apply(self, action: int) -> None:
        """Apply one action; an illegal or out-of-range one raises
        IllegalActionError and changes nothing."""
        if type(action) is int and 0 <= action < NUM_ACTIONS and self._legal()[action]:
            apply_unchecked(self.st, action, self.args)
            self._mask_ok = False
            self.mask = np.empty(NUM_ACTIONS, dtype=np.int8)  # a mask handed out stays that state's
            return
        action = A.action_id(action)
        if not self._legal()[action]:
            raise IllegalActionError(
                f"action {action} ({A.describe_action(action, self.tables.rules.cards)}) is not legal for "
                f"player {self.current} in phase {Phase(self.phase).name}"
            )
        apply_unchecked(self.st, action, self.args)
        self._mask_ok = False
        self.mask = np.empty(NUM_ACTIONS, dtype=np.int8)

    def encode(self, player: int, out: np.ndarray | None = None) -> np.ndarray:
        """``player``'s observation (observation.Observer.encode); ``out``, if given, is a float32 array of the
        observation's size (checked: the compiled kernel would write past a smaller one)."""
        player = check_seat(player, self.tables.num_players, "player")
        if out is None:
            out = np.empty(self.tables.obs_size, dtype=np.float32)
        else:
            check_out_buffer(out, (self.tables.obs_size,), np.float32, "encode's out")
        encode(self.st, player, self.args, out)
        return out

    def __getstate__(self) -> dict[str, object]:
        """copy, deepcopy and pickle: the state vector and the mask; the
        tables are named by (rules, players) and shared again on restore."""
        return {
            "rules": self.tables.rules,
            "num_players": self.tables.num_players,
            "st": self.st,
            "mask": self.mask,
            "mask_ok": self._mask_ok,
        }

    def __setstate__(self, state: dict[str, object]) -> None:
        self.tables = fast_tables(state["rules"], state["num_players"])  # type: ignore[arg-type]
        self.side_of = tuple(p % self.tables.num_sides for p in range(self.tables.num_players))
        self.args = self.tables.kernel_args
        self.st = np.array(state["st"], dtype=np.int32)
        self.buf = None
        self.mask = np.array(state["mask"], dtype=np.int8)
        self._mask_ok = bool(state["mask_ok"])

    def clone(self) -> FastGame:
        new = FastGame.__new__(FastGame)
        new.tables = self.tables
        new.side_of = self.side_of
        new.args = self.args
        new.st = self.st.copy()
        new.buf = None
        new.mask = self.mask.copy()  # its own array: the original's may be handed out
        new._mask_ok = self._mask_ok
        return new

    # ------------------------------------------------------------------ queries
    @property
    def phase(self) -> Phase:
        return Phase(int(self.st[PHASE]))

    @property
    def current(self) -> int:
        return int(self.st[CURRENT])

    @property
    def turn(self) -> int:
        return int(self.st[TURN])

    @property
    def hand_over(self) -> bool:
        return bool(self.st[PHASE] == P_HAND_OVER)

    @property
    def match_over(self) -> bool:
        return bool(self.st[MATCH_WINNER] >= 0)

    @property
    def match_winner(self) -> int:
        return int(self.st[MATCH_WINNER])

    @property
    def end_reason(self) -> str | None:
        return END_REASON_NAMES[int(self.st[END_REASON])]

    @property
    def num_sides(self) -> int:
        return self.tables.num_sides

    @property
    def hand_number(self) -> int:
        return int(self.st[HAND_NUMBER])

    @property
    def match_scores(self) -> list[int]:
        return self.st[MATCH_SCORES : MATCH_SCORES + self.num_sides].tolist()

    @property
    def hand_scores(self) -> list[SideScore] | None:
        return _side_scores(self.st, self.num_sides)

    def score_sides(self) -> list[SideScore]:
        """engine.GameState.score_sides: each side's breakdown of the hand as
        it stands (B25-B27), by the scoring kernel on a copy of the state."""
        st = self.st.copy()
        _score_sides(st, self.args)
        scores = _side_scores(st, self.num_sides)
        assert scores is not None
        return scores

    def side_rewards(self) -> list[float]:
        """engine.GameState.side_rewards."""
        return zero_sum_rewards(self.hand_scores, self.num_sides)

    def to_dict(self) -> dict[str, object]:
        """The readable engine's ``GameState.to_dict`` of this state."""
        return state_dict(self.st, self.tables)

    def to_game_state(self) -> GameState:
        """The same state in the readable engine, built field by field from
        the flat state (no rules or dict round trip: tens of microseconds);
        ``GameState.from_dict(self.to_dict())`` gives an equal state."""
        return game_state_of(self.st, self.tables, self.mask if self._mask_ok else None)

    # ------------------------------------------------------------------ search (issue 16)
    def determinize(self, player: int, rng: np.random.Generator) -> FastGame:
        """A copy where everything ``player`` cannot see is resampled, exactly
        like :meth:`GameState.determinize` (E2; :func:`determinize_game`)."""
        return determinize_game(self, player, rng)


def check_out_buffer(out: np.ndarray, shape: tuple[int, ...], dtype: type, what: str) -> None:
    """A caller's ``out`` array for a compiled kernel, which writes by index without bounds checks:
    it must have exactly this shape and dtype and be writable and C-contiguous (numba would compile
    the kernel again for a strided array, for seconds), or a ``ValueError`` says so."""
    if (
        not isinstance(out, np.ndarray)
        or out.shape != shape
        or out.dtype != dtype
        or not out.flags.writeable
        or not out.flags.c_contiguous
    ):
        got = type(out).__name__
        if isinstance(out, np.ndarray):
            layout = "" if out.flags.c_contiguous else ", strided"
            got = f"{out.dtype} {out.shape}{'' if out.flags.writeable else ', read-only'}{layout}"
        raise ValueError(f"{what} must be a writable C-contiguous {np.dtype(dtype)} array of shape {shape}, got {got}")


def game_state_of(st: np.ndarray, tables: FastTables, mask: np.ndarray | None = None) -> GameState:
    """A readable :class:`GameState` equal to the flat state ``st`` (its own
    arrays; ``mask``, the flat state's legal mask if known, is copied in)."""
    n, sides = tables.num_players, tables.num_sides
    state = GameState(tables.rules, n)
    universe = meld_universe()[0]
    state.hands[:] = st[HANDS : HANDS + n * NK].reshape(n, NK)
    state.hand_size = st[HAND_SIZE : HAND_SIZE + n].tolist()
    state.stock = st[STOCK : STOCK + st[STOCK_LEN]].tolist()
    state.pile = st[PILE : PILE + st[PILE_LEN]].tolist()
    state.pile_counts[:] = st[PILE_COUNTS : PILE_COUNTS + NK]
    state.muertos = [
        st[MUERTOS + s * MUERTO_CAP : MUERTOS + s * MUERTO_CAP + st[MUERTO_LEN + s]].tolist() for s in range(sides)
    ]
    state.muerto_taken = [bool(x) for x in st[MUERTO_TAKEN : MUERTO_TAKEN + sides]]
    state.muerto_unplayed = [bool(x) for x in st[MUERTO_UNPLAYED : MUERTO_UNPLAYED + n]]
    enc = _meld_facts()[0]
    t = state.t
    for s in range(sides):
        ids = st[MELDS + s * SLOTS : MELDS + s * SLOTS + st[N_MELDS + s]].tolist()
        side_melds = [universe[m] for m in ids]
        state.melds[s] = side_melds
        for slot, (meld_id, meld) in enumerate(zip(ids, side_melds, strict=True)):
            state.meld_enc[s, slot] = enc[meld_id]
            state.addable[s, slot * NK : (slot + 1) * NK] = t.addable(meld)
        state.close_ready[s] = bool(st[CLOSE_READY + s])
    state.known[:] = st[KNOWN : KNOWN + n * NK].reshape(n, NK)
    state.phase = Phase(int(st[PHASE]))
    state.current = int(st[CURRENT])
    state.mano = int(st[MANO])
    state.turn = int(st[TURN])
    state.privilege_tile = int(st[PRIV_TILE])
    pend_n = int(st[PEND_N])
    if pend_n:
        outs = (int(st[PEND_OUT0]), int(st[PEND_OUT1]))[:pend_n]
        state.pending = (int(st[PEND_SLOT]), int(st[PEND_KIND]), tuple(universe[m] for m in outs))
    state.pile_top_required = int(st[REQUIRED])
    state.end_reason = END_REASON_NAMES[int(st[END_REASON])]
    state.closer = int(st[CLOSER])
    state.hand_scores = _side_scores(st, sides)
    state.match_scores = st[MATCH_SCORES : MATCH_SCORES + sides].tolist()
    state.hand_number = int(st[HAND_NUMBER])
    state.match_winner = int(st[MATCH_WINNER])
    if mask is not None:
        state._mask = mask.copy()
        state._mask.flags.writeable = False  # as GameState.legal_mask hands it out
    return state


# ----------------------------------------------------------------------------- determinization (E2)
@_jit
def unseen_counts(st, player, T, counts):
    """engine.GameState.unseen_counts into ``counts`` (int64, 53): the tiles
    ``player`` cannot locate, counted where they are (other hands beyond their
    known tiles, the stock, the untaken muertos), which by tile conservation
    (E1) equals the full set minus everything ``player`` sees."""
    rv = T[T_RULE_VALUES]
    counts[:] = 0
    for q in range(rv[RV_PLAYERS]):
        if q == player:
            continue
        for k in range(NK):
            counts[k] += st[HANDS + q * NK + k] - st[KNOWN + q * NK + k]
    for i in range(st[STOCK_LEN]):
        counts[st[STOCK + i]] += 1
    for s in range(rv[RV_SIDES]):
        for i in range(st[MUERTO_LEN + s]):
            counts[st[MUERTOS + s * MUERTO_CAP + i]] += 1


@_jit
def _shown_pending(st, player):
    """engine.GameState._shown_pending: the kind another seat is placing (CHOOSE_END), which every
    seat sees in that hand, unless a copy of it is known there already; -1 when none."""
    current = st[CURRENT]
    if st[PHASE] != P_CHOOSE_END or player == current:
        return -1
    kind = st[PEND_KIND]
    if kind < 0 or st[KNOWN + current * NK + kind] > 0:
        return -1
    return kind


@_jit
def determinize_into(st, player, pool, T):
    """Deal the shuffled ``pool`` of unseen tiles as ``GameState.determinize``
    does: each other hand (in seat order) keeps its known tiles and gets its
    hidden count from the pool (in the privilege phase the mano's privilege
    tile is the last of his), then each side's untaken muerto, then the stock
    (bottom first, so the top is the pool's last tile)."""
    rv = T[T_RULE_VALUES]
    pos = 0
    shown = _shown_pending(st, player)
    for q in range(rv[RV_PLAYERS]):
        if q == player:
            continue
        hb = HANDS + q * NK
        kb = KNOWN + q * NK
        hidden = st[HAND_SIZE + q]
        for k in range(NK):
            st[hb + k] = st[kb + k]
            hidden -= st[kb + k]
        if shown >= 0 and q == st[CURRENT]:
            st[hb + shown] += 1
            hidden -= 1
        for i in range(hidden):
            st[hb + pool[pos + i]] += 1
        if st[PHASE] == P_PRIVILEGE and q == st[CURRENT] and hidden > 0:
            st[PRIV_TILE] = pool[pos + hidden - 1]
        pos += hidden
    for s in range(rv[RV_SIDES]):
        base = MUERTOS + s * MUERTO_CAP
        for i in range(st[MUERTO_LEN + s]):
            st[base + i] = pool[pos + i]
        pos += st[MUERTO_LEN + s]
    for i in range(st[STOCK_LEN]):
        st[STOCK + i] = pool[pos + i]


_KIND_IDS = np.arange(NK, dtype=np.int64)


def determinize_state(st: np.ndarray, player: int, rng: np.random.Generator, args: tuple[np.ndarray, ...]) -> None:
    """Resample in place everything ``player`` cannot see in the flat state
    ``st`` (the search's allocation-free path behind :meth:`FastGame.determinize`).

    The pool is built and permuted exactly as ``GameState.determinize`` does
    (``rng.permutation`` of the unseen kinds in kind order), so from the same
    generator state both engines produce the same determinization."""
    counts = np.empty(NK, dtype=np.int64)
    unseen_counts(st, player, args, counts)
    shown = _shown_pending(st, player)
    if shown >= 0:  # seen in the mover's hand: determinize_into deals it there, not from the pool
        counts[shown] -= 1
    pool = rng.permutation(np.repeat(_KIND_IDS, counts))
    determinize_into(st, player, pool, args)


def determinize_game(game: FastGame, player: int, rng: np.random.Generator) -> FastGame:
    """A copy where everything ``player`` cannot see is resampled: other hands
    (keeping the tiles known to be there because they were taken with the
    pile), the stock order and the untaken muertos (E2; same draws from
    ``rng`` as :meth:`GameState.determinize`)."""
    if not 0 <= player < game.tables.num_players:
        raise ValueError(f"player {player} is not a seat of this {game.tables.num_players}-player game")
    new = game.clone()
    determinize_state(new.st, player, rng, game.args)
    if player != game.current:
        new._mask_ok = False  # the player to move has a new hand
    return new
