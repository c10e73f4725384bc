"""ISMCTS on the compiled core: the same search as :mod:`agents.search`, on
:class:`burako_env.fast.FastGame` flat states, with a compiled rollout policy
and a compiled leaf evaluation.

Why it is fast: a simulation copies one int32 vector (the determinization),
steps it with the numba kernels, and plays its rollout and scores its leaf
inside single numba calls; only the tree (a few nodes a simulation) is
Python. Today's ISMCTS clones and steps the readable engine and asks the
Planner (Python) for every rollout move.

The pieces, each usable alone:

* :func:`evaluate_sides` — ``agents.heuristic.evaluate_sides`` compiled
  (same formula, same numbers: ``tests/test_search_fast.py`` compares them);
* :func:`policy_scores` — a cheap compiled rollout policy ("greedy"):
  additions first (natural before wild), then new melds (natural before
  wild), then the discard least useful to the hand (no pair, no run
  neighbours, no set partners) that does not extend an opponent's meld;
  takes the pile when its top melds at once; keeps the privilege tile;
* :func:`rollout_values` — play that policy for ``depth`` turns from a flat
  state and return each side's value (its evaluation minus the mean of the
  others', over ``value_scale``, clipped to ±3; a finished hand counts its
  real scores), as ``agents.search`` does;
* :class:`FastISMCTSAgent` — the agent: paired root rounds (each
  determinization plays every root candidate), UCB with availability counts
  below the root, the seat's ``tree_actions`` best moves by the compiled
  policy, one move (the policy's) for the other seats.
"""

from __future__ import annotations

import functools
import time
from typing import Any

import numba
import numpy as np

from agents.base import SeatView
from agents.heuristic import (
    NEIGHBOURS_1,
    NEIGHBOURS_2,
    PLANNER_WEIGHTS,
    SAME_NUMBER,
    PlannerPolicy,
    meld_progress,
    rule_facts,
)
from agents.search import TreeNode, another_round, best_candidate, tree_step
from agents.search_settings import SearchSettings
from burako_env import fast as F
from burako_env.fast import FastGame, FastTables, determinize_state, fast_tables, meld_universe
from burako_env.rules import Rules, load_rules
from burako_env.tiles import IS_WILD

_jit = functools.partial(numba.njit, cache=True, nogil=True)
NEG = -1e18

#: indices of the evaluation tables (the ``E`` tuple handed to the kernels)
E_WORTH, E_FIT, E_WILD, E_NEIGH1, E_NEIGH2, E_SAME, E_SCALARS = range(7)
#: E_SCALARS: initial stock size, muerto penalty, closing bonus, then the
#: evaluation's weights (``HeuristicWeights.eval_*``, in this order)
(
    S_INITIAL_STOCK,
    S_MUERTO_PENALTY,
    S_CLOSING_BONUS,
    S_HAND_COST,
    S_HAND_COST_LATE,
    S_WILD_ASSET,
    S_FIT_SHARE,
    S_MUERTO_FLOOR,
    S_HAND_SCALE,
    S_CLOSE_SHARE,
) = range(10)


def _padded(rows: tuple[tuple[int, ...], ...]) -> np.ndarray:
    out = np.full((len(rows), max(len(r) for r in rows)), -1, dtype=np.int64)
    for k, row in enumerate(rows):
        out[k, : len(row)] = row
    return out


@functools.lru_cache(maxsize=16)
def eval_tables(rules: Rules, num_players: int) -> tuple[np.ndarray, ...]:
    """Per-rules tables of the compiled evaluation and policy: each meld's
    worth (value + canasta progress, ``heuristic.meld_progress``), which
    kinds extend it naturally (an outcome keeps its wild), the wild kinds,
    run neighbours and set partners of each kind, and the scalars
    (``S_*``: rule values and the evaluation's weights, :data:`PLANNER_WEIGHTS`,
    as :func:`agents.heuristic.evaluate_sides` reads them)."""
    universe, _ = meld_universe()
    facts = rule_facts(rules)
    tables = fast_tables(rules, num_players)
    meld_value, outc, n_outc = (
        tables.kernel_args[F.T_MELD_VALUE],
        tables.kernel_args[F.T_OUTCOMES],
        tables.kernel_args[F.T_OUTCOME_COUNT],
    )
    worth = np.array([meld_progress(m, facts) for m in universe], dtype=np.float64) + meld_value
    wild_kind = np.array([m.wild_kind for m in universe], dtype=np.int64)
    valid = np.arange(outc.shape[2])[None, None, :] < n_outc[:, :, None]
    # melds.is_natural_addition, over every (meld, kind, outcome) at once
    keeps_wild = wild_kind[np.clip(outc, 0, None)] == wild_kind[:, None, None]
    fit = (valid & keeps_wild).any(axis=2).astype(np.uint8)
    w = PLANNER_WEIGHTS
    scalars = np.array(
        [
            max(1, rules.stock_size(num_players)),
            rules.muerto_penalty,
            rules.closing_bonus,
            w.eval_hand_cost,
            w.eval_hand_cost_late,
            w.eval_wild_asset,
            w.eval_fit_share,
            w.eval_muerto_floor,
            w.eval_hand_scale,
            w.eval_close_share,
        ],
        dtype=np.float64,
    )
    out = (
        worth,
        fit,
        np.array(IS_WILD, dtype=np.uint8),
        _padded(NEIGHBOURS_1),
        _padded(NEIGHBOURS_2),
        _padded(tuple(s if s else (-1,) for s in SAME_NUMBER)),
        scalars,
    )
    for arr in out:
        arr.flags.writeable = False
    return out


# ----------------------------------------------------------------------------- kernels
@_jit
def evaluate_sides(st, T, E, out):
    """agents.heuristic.evaluate_sides on a flat state, into ``out`` (float64, sides)."""
    rv, values = T[F.T_RULE_VALUES], T[F.T_TILE_VALUES]
    worth, fit, wild, scalars = E[0], E[1], E[2], E[6]
    n = rv[F.RV_PLAYERS]
    sides = rv[F.RV_SIDES]
    if st[F.PHASE] == F.P_HAND_OVER:
        for s in range(sides):
            out[s] = F.side_total(st, s) if st[F.HAS_SCORES] else 0.0
        return
    left = min(1.0, st[F.STOCK_LEN] / scalars[S_INITIAL_STOCK])
    hand_cost = scalars[S_HAND_COST] + scalars[S_HAND_COST_LATE] * (1.0 - left)
    wild_asset = scalars[S_WILD_ASSET] * left
    fit_share, hand_scale = scalars[S_FIT_SHARE], scalars[S_HAND_SCALE]
    fits = np.zeros(F.NK, dtype=np.uint8)
    for s in range(sides):
        total = 0.0
        fits[:] = 0
        for j in range(st[F.N_MELDS + s]):
            m = st[F.MELDS + s * F.SLOTS + j]
            total += worth[m]
            for k in range(F.NK):
                if fit[m, k]:
                    fits[k] = 1
        smallest = 99
        for q in range(n):
            if q % sides != s:
                continue
            hb = F.HANDS + q * F.NK
            for k in range(F.NK):
                c = st[hb + k]
                if c == 0:
                    continue
                if wild[k]:
                    total += c * (wild_asset - hand_cost * values[k])
                elif fits[k]:
                    total += c * fit_share * values[k]
                else:
                    total -= c * hand_cost * values[k]
            smallest = min(smallest, st[F.HAND_SIZE + q])
        if not st[F.MUERTO_TAKEN + s]:
            total -= scalars[S_MUERTO_PENALTY] * min(1.0, scalars[S_MUERTO_FLOOR] + smallest / hand_scale)
        elif st[F.CLOSE_READY + s]:
            total += scalars[S_CLOSING_BONUS] * max(0.0, scalars[S_CLOSE_SHARE] - smallest / hand_scale)
        out[s] = total


@_jit
def _keep_value(st, p, k, E):
    """How much the hand of ``p`` wants to keep one tile of kind ``k``."""
    wild, n1, n2, same = E[2], E[3], E[4], E[5]
    if wild[k]:
        return 50.0
    hb = F.HANDS + p * F.NK
    keep = 6.0 if st[hb + k] >= 2 else 0.0
    for i in range(n1.shape[1]):
        q = n1[k, i]
        if q >= 0 and st[hb + q] > 0:
            keep += 4.0
    for i in range(n2.shape[1]):
        q = n2[k, i]
        if q >= 0 and st[hb + q] > 0:
            keep += 2.0
    for i in range(same.shape[1]):
        q = same[k, i]
        if q >= 0 and st[hb + q] > 0:
            keep += 2.0
    return keep


@_jit
def _pile_melds(st, p, T):
    """Whether the pile's top tile melds at once after taking the pile: it is
    wild, it extends one of the side's melds, or it completes a new meld
    with the hand and the pile."""
    rv, n_outc, allowed, pkinds, pneeds, pwk_start, pwk_list = (
        T[F.T_RULE_VALUES],
        T[F.T_OUTCOME_COUNT],
        T[F.T_ALLOWED_PATTERNS],
        T[F.T_PATTERN_KINDS],
        T[F.T_PATTERN_NEEDS],
        T[F.T_PATTERNS_WITH_KIND_START],
        T[F.T_PATTERNS_WITH_KIND],
    )
    if st[F.PILE_LEN] == 0:
        return False
    top = st[F.PILE + st[F.PILE_LEN] - 1]
    side = p % rv[F.RV_SIDES]
    for j in range(st[F.N_MELDS + side]):
        if n_outc[st[F.MELDS + side * F.SLOTS + j], top] > 0:
            return True
    hb = F.HANDS + p * F.NK
    for i in range(pwk_start[top], pwk_start[top + 1]):
        pattern = pwk_list[i]
        if not allowed[pattern]:
            continue
        ok = True
        for j in range(3):
            k = pkinds[pattern, j]
            if k < F.NK and st[hb + k] + st[F.PILE_COUNTS + k] < pneeds[pattern, j]:
                ok = False
        if ok:
            return True
    return False


@_jit
def _action_score(st, T, E, a, phase, p):
    """The compiled rollout policy's score of the legal action ``a`` (module docstring)."""
    rv, values, n_outc, pkinds, pneeds = (
        T[F.T_RULE_VALUES],
        T[F.T_TILE_VALUES],
        T[F.T_OUTCOME_COUNT],
        T[F.T_PATTERN_KINDS],
        T[F.T_PATTERN_NEEDS],
    )
    fit, wild = E[1], E[2]
    if phase == F.P_DRAW:
        if a == F.TAKE_PILE:
            return 1.0 if _pile_melds(st, p, T) else -1.0
        return 0.0
    if phase == F.P_PRIVILEGE:
        return 1.0 if a == F.KEEP else 0.0
    if phase == F.P_CHOOSE_END:
        return -float(a - F.CHOOSE_BASE)
    if a < F.MELD_BASE:  # discard: the least useful tile, not feeding
        k = a - F.DISCARD_BASE
        cost = _keep_value(st, p, k, E) - 0.1 * values[k]
        sides = rv[F.RV_SIDES]
        for s in range(sides):
            if s == p % sides:
                continue
            for j in range(st[F.N_MELDS + s]):
                if fit[st[F.MELDS + s * F.SLOTS + j], k]:
                    cost += 15.0
                    break
        return -100.0 - cost
    if a < F.ADD_BASE:  # a new meld: natural first, the most valuable
        pattern = a - F.MELD_BASE
        naturals = 0
        for j in range(3):
            k = pkinds[pattern, j]
            if k < F.NK and not wild[k]:
                naturals += pneeds[pattern, j]
        return 100.0 + 20.0 * naturals + 0.01 * values[pkinds[pattern, 0]]
    rel = a - F.ADD_BASE  # an addition: natural first
    slot = rel // F.NK
    k = rel - slot * F.NK
    meld = st[F.MELDS + (p % rv[F.RV_SIDES]) * F.SLOTS + slot]
    natural = fit[meld, k] != 0 and n_outc[meld, k] > 0 and not wild[k]
    return (200.0 if natural else 90.0) + 0.001 * values[k]


@_jit
def _action_range(st, T):
    """The span of action ids that can be legal in this phase (the mask is
    zero elsewhere): the first phases' few actions, or discards, melds and
    additions to the side's existing melds."""
    if st[F.PHASE] != F.P_PLAY:
        return 0, F.DISCARD_BASE
    side = st[F.CURRENT] % T[F.T_RULE_VALUES][F.RV_SIDES]
    return F.DISCARD_BASE, F.ADD_BASE + st[F.N_MELDS + side] * F.NK


@_jit
def policy_scores(st, T, E, mask, scores):
    """The compiled rollout policy's score of every action (``NEG`` for an
    illegal one); the policy plays the best (module docstring)."""
    scores[:] = NEG
    phase = st[F.PHASE]
    p = st[F.CURRENT]
    lo, hi = _action_range(st, T)
    for a in range(lo, hi):
        if mask[a]:
            scores[a] = _action_score(st, T, E, a, phase, p)


@_jit
def best_actions(st, T, E, buf, mask, scores, k, out):
    """The exact legal mask of ``st``, then up to ``k`` legal actions in the
    policy's order (ties: the lower id) into ``out``; returns (legal count,
    actions written). ``scores`` is scratch."""
    F.legal_mask(st, T, buf, mask)
    phase = st[F.PHASE]
    p = st[F.CURRENT]
    lo, hi = _action_range(st, T)
    n_legal = 0
    written = 0
    for a in range(lo, hi):
        if not mask[a]:
            continue
        n_legal += 1
        score = _action_score(st, T, E, a, phase, p)
        # insertion into the sorted top-k (scores[:k] holds their scores)
        i = written
        if i < k:
            written += 1
        elif score <= scores[k - 1]:
            continue
        else:
            i = k - 1
        while i > 0 and scores[i - 1] < score:
            scores[i] = scores[i - 1]
            out[i] = out[i - 1]
            i -= 1
        scores[i] = score
        out[i] = a
    return n_legal, written


@_jit
def rollout_values(st, T, E, buf, mask, scores, start_turn, depth, max_actions, value_scale, values):
    """Play the compiled policy on ``st`` (in place) until ``depth`` turns
    after ``start_turn`` have ended, the hand is over or ``max_actions``
    were played; then each side's value into ``values`` (module docstring)."""
    one = np.empty(1, dtype=np.int64)
    for _ in range(max_actions):
        if st[F.PHASE] == F.P_HAND_OVER or st[F.TURN] - start_turn >= depth:
            break
        _, written = best_actions(st, T, E, buf, mask, scores, 1, one)
        if written == 0:  # defensive: never expected (E3)
            break
        F.apply_unchecked(st, one[0], T)
    sides = T[F.T_RULE_VALUES][F.RV_SIDES]
    est = np.empty(sides, dtype=np.float64)
    evaluate_sides(st, T, E, est)
    total = est.sum()
    for s in range(sides):
        v = (est[s] - (total - est[s]) / (sides - 1)) / value_scale
        values[s] = max(-3.0, min(3.0, v))


# ----------------------------------------------------------------------------- the agent
class Workspace:
    """Preallocated arrays of one (rules, player count): the simulation's
    state, the look-ahead's scratch rows, mask, scores, the value vector
    (also the neural search's scratch, :mod:`agents.neural_search`)."""

    def __init__(self, tables: FastTables) -> None:
        self.tables = tables
        self.args = tables.kernel_args
        self.st = np.zeros(F.STATE_SIZE, dtype=np.int32)
        self.buf = np.zeros((F.SCRATCH_DEPTH, F.SCRATCH_WIDTH), dtype=np.int32)
        self.mask = np.zeros(F.NUM_ACTIONS, dtype=np.int8)
        self.scores = np.zeros(F.NUM_ACTIONS, dtype=np.float64)
        self.out = np.zeros(max(8, F.NUM_ACTIONS), dtype=np.int64)
        self.values = np.zeros(tables.num_sides, dtype=np.float64)
        self.side_of = tuple(p % tables.num_sides for p in range(tables.num_players))

    @functools.cached_property
    def evals(self) -> tuple[np.ndarray, ...]:
        """The heuristic evaluation's tables, built at first use (then cached per
        process): the neural search needs them only for its optional rollouts."""
        return eval_tables(self.tables.rules, self.tables.num_players)


def prepared_workspace(work: Workspace | None, rules: Any, num_players: int, evals: bool) -> Workspace:
    """``work``, or a new workspace, for (``rules``, ``num_players``) with its tables built now. The
    agents call it from ``reset``, which runs outside a move's clock: built in the first ``act`` (4-7 s
    per rules), they overran ``time_per_move`` by ~100x, and a tournament's ``move_time_limit``
    interrupted every first move (so the cache never filled: every game was forfeited). The kernels
    are loaded here too, once per process (:func:`warm_kernels`)."""
    warm_kernels()
    tables = fast_tables(load_rules(rules), num_players)
    if work is None or work.tables is not tables:
        work = Workspace(tables)
    if evals:
        _ = work.evals  # the heuristic's tables (rollouts, evaluation): cached per process
    return work


class FastISMCTSAgent:
    """Single-observer ISMCTS on the compiled core (module docstring).

    Options: :class:`agents.search_settings.SearchSettings` (as keywords, or
    whole as ``settings=``), with :class:`agents.search.ISMCTSAgent`'s
    defaults and meanings, but no ``rollout`` (the rollouts are the compiled
    greedy policy). Budget: ``simulations`` per decision (whole rounds, one
    simulation per root candidate each, at least one round), or, when
    ``time_per_move`` is given, as many rounds as fit in that many seconds
    (``simulations`` is then ignored; the deadline is read after every
    simulation, so the first round may end early: one simulation at least).
    """

    name = "fast_ismcts"
    #: the defaults of this agent's search settings, and the fields it reads
    default_settings = SearchSettings()
    uses_settings = tuple(f for f in SearchSettings.field_names() if f != "rollout")

    def __init__(self, seed: int | None = None, settings: SearchSettings | None = None, **options: Any) -> None:
        self.settings = SearchSettings.for_agent(
            self.name, self.default_settings, self.uses_settings, settings, options
        )
        self.rng = np.random.default_rng(seed)
        self.root_policy = PlannerPolicy()
        self.seat = -1
        self._work: Workspace | None = None
        #: statistics of the last search (for tests, tuning and the benchmark)
        self.last_simulations = 0

    def reset(self, seat: int, rules: Any = None, num_players: int = 2) -> None:
        """Called at the start of each hand; builds the compiled tables of these rules (not on the clock)."""
        self.seat = seat
        if rules is not None:
            self._work = prepared_workspace(self._work, rules, num_players, evals=True)

    # ----------------------------------------------------------------- decision
    def act(self, observation: dict[str, np.ndarray], view: SeatView) -> int:
        mask = observation.get("action_mask") if observation is not None else None
        legal = np.flatnonzero(mask).tolist() if mask is not None else view.legal_actions()
        if not legal:
            raise ValueError("FastISMCTSAgent.act: no legal action in the mask")
        start = time.perf_counter()
        self.last_simulations = 0
        self.seat = view.seat
        if len(legal) == 1:
            return int(legal[0])
        public = view.public_state()
        candidates = self.root_policy.ranked(public, legal)[: self.settings.root_actions]
        if len(candidates) == 1:
            return int(candidates[0])
        budget = self.settings.time_per_move
        deadline = None if budget is None else start + budget
        return self.search(FastGame.from_game_state(public), candidates, deadline)

    def search(self, game: FastGame, candidates: list[int], deadline: float | None = None) -> int:
        """Rounds of paired simulations from ``game`` (the seat's view; its
        hidden parts are resampled every round) over the root ``candidates``
        (legal actions of the seat, the preferred first); ``deadline`` (a
        ``time.perf_counter`` value) replaces the simulation count."""
        work = self._workspace_for(game)
        settings = self.settings
        root = TreeNode()
        done = 0
        rounds = 0
        sample = np.empty_like(game.st)
        while another_round(settings, done, len(candidates), rounds, deadline):
            sample[:] = game.st
            determinize_state(sample, self.seat, self.rng, work.args)
            for action in candidates:
                work.st[:] = sample
                self._simulate(root, work, action)
                done += 1
                if deadline is not None and time.perf_counter() >= deadline:
                    break
            rounds += 1
        self.last_simulations = done
        return best_candidate(root, candidates, settings.margin / settings.value_scale)

    def _workspace_for(self, game: FastGame) -> Workspace:
        if self._work is None or self._work.tables is not game.tables:
            self._work = Workspace(game.tables)
        if self.seat < 0:
            self.seat = game.current
        return self._work

    # ----------------------------------------------------------------- one simulation
    def _simulate(self, root: TreeNode, work: Workspace, root_action: int) -> None:
        """Play ``root_action`` on the determinization in ``work.st``,
        descend by UCB with availability counts until a new node is expanded,
        roll out, and back the values up."""
        st, args = work.st, work.args
        settings = self.settings
        side_of = work.side_of
        start_turn = int(st[F.TURN])
        child = root.children.get(root_action)
        if child is None:
            child = root.children[root_action] = TreeNode(side_of[int(st[F.CURRENT])])
        child.available += 1
        F.apply_unchecked(st, root_action, args)
        path = [child]
        node = child
        out = work.out
        while st[F.PHASE] != F.P_HAND_OVER and st[F.TURN] - start_turn < settings.depth:
            current = int(st[F.CURRENT])
            k = settings.tree_actions if current == self.seat else 1
            _, written = best_actions(st, args, work.evals, work.buf, work.mask, work.scores, k, out)
            if written == 0:  # defensive: never expected (E3)
                break
            action, nxt, expanded = tree_step(node, out[:written].tolist(), side_of[current], settings.exploration)
            F.apply_unchecked(st, action, args)
            path.append(nxt)
            if expanded:
                break
            node = nxt
        rollout_values(
            st,
            args,
            work.evals,
            work.buf,
            work.mask,
            work.scores,
            start_turn,
            settings.depth,
            settings.max_rollout_actions,
            settings.value_scale,
            work.values,
        )
        values = work.values
        for n in path:
            n.visits += 1
            n.total += values[n.side]


def compile_kernels() -> float:
    """Compile (or load from numba's disk cache) every kernel of this module by
    searching a few positions; returns the seconds it took (scripts/install.sh)."""
    start = time.perf_counter()
    game = FastGame.new_game(np.random.default_rng(0))
    agent = FastISMCTSAgent(seed=0, simulations=4, root_actions=2)
    rng = np.random.default_rng(1)
    while not game.hand_over and game.turn < 6:
        legal = np.flatnonzero(game.legal_mask()).tolist()
        agent.seat = game.current
        game.apply(agent.search(game, legal[:2]) if len(legal) > 1 else legal[0])
        if not game.hand_over:
            game.apply(int(rng.choice(np.flatnonzero(game.legal_mask()))))
    FastGame.from_game_state(game.to_game_state())  # what each act does with the seat's view
    return time.perf_counter() - start


#: whether this process has loaded the kernels (:func:`warm_kernels`)
_kernels_warm = False


def warm_kernels() -> None:
    """Load every kernel of this module once per process, off a move's clock: numba reads them from
    its disk cache at their first call (~1.6 s), and a first ``act`` that paid for it overran
    ``time_per_move`` 15-35x, so a tournament's ``move_time_limit`` forfeited the game."""
    global _kernels_warm
    if not _kernels_warm:
        compile_kernels()
        _kernels_warm = True


# the kernels above compile burako_env/fast.py's functions into themselves: recompile them when it changed
F.refresh_dependent_caches(__name__, globals())

__all__ = [
    "FastISMCTSAgent",
    "Workspace",
    "best_actions",
    "compile_kernels",
    "eval_tables",
    "evaluate_sides",
    "policy_scores",
    "rollout_values",
    "warm_kernels",
]


if __name__ == "__main__":
    print(f"agents.fast_search kernels ready in {compile_kernels():.1f} s")
