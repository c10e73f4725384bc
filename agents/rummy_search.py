"""Information-set Monte Carlo tree search (ISMCTS) for Rummy: ``rummy-ismcts``.

The agent reads only its observation (E2): :func:`state_from_observation`
rebuilds a full :class:`~burako_env.rummy.engine.RummyState` from it, with the
hidden tiles (the other hands and the stock: the 106 tiles less the own hand,
the table and the closing tile) placed in an arbitrary order; every
simulation then starts from ``state.determinize(seat, rng)``, which re-deals
exactly those hidden tiles at random (single-observer ISMCTS, Cowling et al.
2012). So no simulation sees a hidden tile that the observation does not
imply, and the search cannot depend on where the hidden tiles really are.

One tree is shared by all determinizations; its edges are the actions of the
exact 56-action mask (a turn is a sequence of decisions: tiles into the
pending play, the closing tile, commit, end turn). Another player's legal
actions depend on his (sampled) hand, so selection is UCB1 with
*availability counts* (:func:`agents.search.tree_step`, shared with Burako's
ISMCTS). A simulation descends the tree until it expands a node, then plays a
rollout for at most ``depth`` more turns, or to the end of the hand. Rollout
policies (``rollout``): ``"hold"`` (default: close when legal, random moves
until the first play, then end the turn: the rummy-heuristic's plan without
its solver calls) or ``"random"``. Their cost is the exact mask, about 1 ms an
action; the heuristic itself costs about 3 ms an action, too much for rollouts.

The root's *prior* is :class:`agents.rummy_heuristic.RummyHeuristic` (which
beats random 999 games in 1,000): its action is tried first and played
unless another root action, visited at least :data:`MIN_CHALLENGER_VISITS`
times, beats its mean value by ``margin / value_scale`` (as Burako's ISMCTS
keeps its Planner's choice): with a few dozen simulations the means are
noisy, and a search that trusts them outright plays worse than the heuristic.

Values, per seat (2 to 4 players, each for himself): a finished hand is
scored by its result (R10: lowest total wins; ``RummyState.hand_rewards``
``"win"``: +1 for the closer, the others share -1); an unfinished one by the
hand totals as if the hand were blocked now (R10 points, the ``"score"``
rewards divided by ``value_scale``) plus :data:`FIRST_PLAY_VALUE` for having
made the first play (no closing without it), weak signals next to a win.
Each node keeps the value of the seat that chose the action into it.

Options: :class:`agents.search_settings.SearchSettings` (``simulations``, or
``time_per_move`` seconds, ``exploration``, ``depth``, ``max_rollout_actions``,
``value_scale``), as keywords (``make_agent("rummy-ismcts", seed=0,
simulations=64)``) or whole (``settings=``). A forced move (one legal action)
is returned at once, without a search.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from agents.rummy_heuristic import RummyHeuristic
from agents.search import TreeNode, tree_step
from agents.search_settings import SearchSettings
from burako_env.rummy import actions as A
from burako_env.rummy.engine import FULL_COUNTS, NO_TILE, Phase, RummyState
from burako_env.rummy.observation import OFFSETS, SCORE_SCALE
from burako_env.rummy.rules import RummyRules, load_rummy_rules
from burako_env.tiles import NUM_KINDS


def state_from_observation(obs: np.ndarray, seat: int, rules: RummyRules, num_players: int) -> RummyState:
    """A full state consistent with ``seat``'s observation (module docstring).

    Everything observed is copied; the hidden tiles are dealt to the other
    hands (their observed sizes) and the stock in kind order, a placeholder
    for :meth:`RummyState.determinize` to re-deal. An observation that is not
    a consistent one (tile counts, sizes) is a ValueError.
    """
    n = num_players
    seats = [(seat + i) % n for i in range(n)]

    def segment(name: str) -> np.ndarray:
        return np.asarray(obs[OFFSETS[name]])

    def counts(name: str) -> np.ndarray:
        return np.rint(segment(name)).astype(np.int64)

    state = RummyState(rules, n)
    state.hands[seat] = counts("hand")
    state.table = counts("table")
    closing = np.flatnonzero(segment("closing_tile") > 0.5)
    state.closing_tile = int(closing[0]) if closing.size else NO_TILE
    hidden = FULL_COUNTS - state.hands[seat] - state.table
    if state.closing_tile != NO_TILE:
        hidden[state.closing_tile] -= 1
    if (hidden < 0).any():
        raise ValueError("state_from_observation: the observation shows more tiles of a kind than exist")
    pool = np.repeat(np.arange(NUM_KINDS), hidden)
    sizes = np.rint(segment("hand_sizes")[:n]).astype(np.int64)
    tail = np.rint(segment("stock_size")).astype(np.int64)
    start = 0
    for i, player in enumerate(seats[1:], start=1):
        state.hands[player] = np.bincount(pool[start : start + sizes[i]], minlength=NUM_KINDS)
        start += int(sizes[i])
    state.stock = [int(k) for k in pool[start:]]
    if sizes[0] != state.hands[seat].sum() or len(state.stock) != int(tail[0]):
        raise ValueError(
            f"state_from_observation: {pool.size} hidden tiles do not fit the observed hand sizes "
            f"{sizes.tolist()} and stock of {int(tail[0])}"
        )
    state.pending = counts("pending")
    state.pending_closing = bool(segment("pending_closing")[0] > 0.5)
    first = segment("first_play")
    scores = segment("match_scores")
    for i, player in enumerate(seats):
        state.first_play_done[player] = bool(first[i] > 0.5)
        state.match_scores[player] = round(float(scores[i]) * SCORE_SCALE)
    to_act = np.flatnonzero(segment("to_act")[:n] > 0.5)
    state.current = seats[int(to_act[0])] if to_act.size else seat
    state.phase = Phase.PLAY
    state.hand_number = int(np.rint(segment("hand_number")[0]))
    state.blocked_turns = int(np.rint(segment("blocked_turns")[0]))
    state.turn_started_empty = bool(segment("started_empty")[0] > 0.5)
    state.check_conservation()
    return state


#: what having made the first play (R5) is worth to an unfinished hand's value: no closing without it
FIRST_PLAY_VALUE = 0.25


def random_action(state: RummyState, rng: np.random.Generator) -> int:
    """A uniformly random legal action."""
    legal = np.flatnonzero(state.legal_mask())
    return int(legal[rng.integers(legal.size)])


def hold_action(state: RummyState, rng: np.random.Generator) -> int:
    """The holding player's move: close when legal (R8), random moves until the first play (R5),
    then end the turn (playing only feeds the others' closing test; agents.rummy_heuristic)."""
    mask = state.legal_mask()
    if mask[A.ADD_CLOSING]:
        return A.ADD_CLOSING
    if state.pending_closing:
        return int(np.flatnonzero(mask)[0])  # the rest of the hand, then commit: every path closes
    if not state.first_play_done[state.current] or state.pending.any() or not mask[A.END_TURN]:
        return random_action(state, rng)
    return A.END_TURN


#: rollout policies by name (the ``rollout`` setting)
ROLLOUT_POLICIES: dict[str, Callable[[RummyState, np.random.Generator], int]] = {
    "hold": hold_action,
    "random": random_action,
}


def seat_values(state: RummyState, value_scale: float) -> list[float]:
    """Per-seat values of a simulated position (module docstring)."""
    if state.phase != Phase.PLAY:
        return state.hand_rewards("win")
    n = state.num_players
    totals = [state.hand_value(p) for p in range(n)]
    everyone = sum(totals)
    opened = [FIRST_PLAY_VALUE * float(done) for done in state.first_play_done]
    all_opened = sum(opened)
    return [
        ((everyone - t) / (n - 1) - t) / value_scale + opened[p] - (all_opened - opened[p]) / (n - 1)
        for p, t in enumerate(totals)
    ]


#: visits a root action needs before it may replace the prior's choice
MIN_CHALLENGER_VISITS = 4


def choose(root: TreeNode, candidates: list[int], margin: float) -> int:
    """The prior's choice (``candidates[0]``) unless an action visited at least
    :data:`MIN_CHALLENGER_VISITS` times beats its mean value by ``margin``."""

    def mean(action: int) -> float:
        child = root.children.get(action)
        return child.total / child.visits if child is not None and child.visits else -math.inf

    def visits(action: int) -> int:
        child = root.children.get(action)
        return 0 if child is None else child.visits

    challengers = [a for a in candidates[1:] if visits(a) >= MIN_CHALLENGER_VISITS]
    best = max(challengers, key=mean, default=candidates[0])
    return int(best) if mean(best) >= mean(candidates[0]) + margin else int(candidates[0])


class RummyISMCTS:
    """Single-observer ISMCTS for Rummy with random rollouts (module docstring)."""

    name = "rummy-ismcts"
    #: this agent's defaults (a small budget: a hand asks it about 60 decisions) and the settings it reads
    default_settings = SearchSettings(
        simulations=8, exploration=0.7, depth=2, max_rollout_actions=80, rollout="hold", value_scale=300.0, margin=60.0
    )
    uses_settings = (
        "simulations",
        "time_per_move",
        "exploration",
        "depth",
        "max_rollout_actions",
        "rollout",
        "value_scale",
        "margin",
    )

    def __init__(self, seed: int | None = None, settings: SearchSettings | None = None, **options: Any) -> None:
        self.settings = SearchSettings.for_agent(
            self.name, self.default_settings, self.uses_settings, settings, options
        )
        if self.settings.rollout not in ROLLOUT_POLICIES:
            known = ", ".join(ROLLOUT_POLICIES)
            raise ValueError(f"{self.name}: unknown rollout policy {self.settings.rollout!r}; known: {known}")
        self.rng = np.random.default_rng(seed)
        #: the root's prior: its choice is played unless another action beats it by ``margin``
        self.prior = RummyHeuristic(seed)
        self.seat = 0
        self.num_players = 2
        self.rules: RummyRules = load_rummy_rules("rummy")
        #: statistics of the last decision (for tests and tuning)
        self.last_simulations = 0
        self.last_seconds = 0.0

    def reset(self, seat: int, rules: Any = None, num_players: int = 2) -> None:
        """Called at the start of each hand."""
        self.seat = seat
        self.num_players = num_players
        self.prior.reset(seat, rules, num_players)
        if rules is not None:  # a preset name, a mapping or RummyRules (a name used to be ignored: default rules)
            self.rules = load_rummy_rules(rules)

    def act(self, observation: dict[str, np.ndarray], view: Any = None) -> int:
        mask = observation["action_mask"]
        legal = np.flatnonzero(mask).tolist()
        if not legal:
            raise ValueError("RummyISMCTS.act: no legal action in the mask")
        self.last_simulations = 0
        self.last_seconds = 0.0
        if len(legal) == 1:
            return int(legal[0])
        start = time.perf_counter()
        state = state_from_observation(observation["observation"], self.seat, self.rules, self.num_players)
        preferred = int(self.prior.act(observation))
        action = self.search(state, [preferred] + [a for a in legal if a != preferred], start)
        self.last_seconds = time.perf_counter() - start
        return action

    def search(self, state: RummyState, candidates: list[int], start: float | None = None) -> int:
        """Simulations within the budget; the first candidate (the prior's) is played unless
        another beats its mean value by ``margin / value_scale``."""
        settings = self.settings
        start = time.perf_counter() if start is None else start
        deadline = None if settings.time_per_move is None else start + settings.time_per_move
        root = TreeNode()
        done = 0
        while True:
            if deadline is None:
                if done >= settings.simulations:
                    break
            elif done and time.perf_counter() >= deadline:
                break
            self._simulate(root, state.determinize(self.seat, self.rng), deadline, candidates)
            done += 1
        self.last_simulations = done
        return choose(root, candidates, settings.margin / settings.value_scale)

    def _simulate(self, root: TreeNode, state: RummyState, deadline: float | None, candidates: list[int]) -> None:
        """One simulation on one determinization: down the tree (UCB with
        availability counts) to a new node, a random rollout, then the values back up."""
        settings = self.settings
        path: list[TreeNode] = []
        node = root
        while state.phase == Phase.PLAY:
            # the root's candidates (the seat's legal actions, the same in every determinization: E2)
            # in their order, so the prior's is tried first
            actions = candidates if node is root else np.flatnonzero(state.legal_mask()).tolist()
            side = state.current
            action, node, expanded = tree_step(node, actions, side, settings.exploration)
            state.step(action)
            path.append(node)
            if expanded:
                break
        last_turn = state.turns + settings.depth
        for _ in range(settings.max_rollout_actions):
            if state.phase != Phase.PLAY or state.turns >= last_turn:
                break
            if deadline is not None and time.perf_counter() >= deadline:
                break
            state.step(ROLLOUT_POLICIES[settings.rollout](state, self.rng))
        values = seat_values(state, settings.value_scale)
        for visited in path:
            visited.visits += 1
            visited.total += values[visited.side]


__all__ = ["RummyISMCTS", "seat_values", "state_from_observation"]
