"""Neural ISMCTS: PUCT over determinizations, guided by a trained policy/value network.

Each simulation resamples what the seat cannot see (``FastGame``'s
determinization, E2), walks down one tree shared by every determinization
(single-observer ISMCTS) and stops at the first position the tree has not
evaluated yet; the network then gives that position's move prior (its
policy head, masked to the legal moves of this determinization) and its
value (the value head: the expected hand reward of the side to move, the
reward the network was trained on). Selection is PUCT (AlphaZero's rule)::

    Q(a) + c_puct * P(a) * sqrt(N + 1) / (1 + n(a))

with N the visits of the legal children (+1: the prior decides the first visit), so an action another player
cannot play in this determinization is simply not a candidate (ISMCTS
availability). Values are kept per side: a node's statistics are for the
side that moves there, so every player maximises its own side's value.

Leaves are evaluated in batches (``leaf_batch`` descents, each on its own
determinization, then one forward pass): a batch of 16 costs about as much
as three single positions on a CPU. A *virtual loss* on the path of a
pending descent steers the next descents of the same batch elsewhere.

A finished hand is scored exactly as the network's training reward:
``win_weight * sign(diff) + score_weight * diff / reward_scale``, with the
weights read from the checkpoint's training config (a hand cut at
``max_turns``: its ``truncated_reward``, 0 for checkpoints without one).

Options (the first two off by default):

* ``fpu_reduction`` (first-play urgency): an untried move counts as the
  node's mean value minus this, instead of 0. Values run from about -1.5 to
  +1.5, so with 0 a losing side spreads its visits over every untried move
  and a winning side never tries a second one.
* ``rollout_weight`` ``w``: each leaf's value is ``(1 - w)`` times the value
  head's plus ``w`` times a rollout's: :mod:`agents.fast_search`'s compiled
  greedy policy plays ``depth`` turns from the leaf and the heuristic
  evaluation scores where it stops (a side's lead ``L`` over ``value_scale``,
  as ``win_weight * tanh(L) + score_weight * L * value_scale / reward_scale``
  in the network's reward units). It costs about a third of the simulations.
* ``planner_prior`` ``m`` (default 0.5): the root's prior is ``(1 - m)``
  times the policy head's plus ``m`` on the Planner's choice (the move
  ``ismcts`` keeps unless another clearly beats it), so the search starts
  from the heuristic's move as well as the network's; deeper nodes keep the
  network's prior. At 0.2 s a move it lifted the search from 0.550 to 0.650
  against ``ismcts(simulations=30)`` and from 0.596 to 0.688 against the
  policy bot (400 duplicate games each, ``docs/evaluation/``); 0 is the
  network's prior alone.

Budget: ``simulations`` leaves per decision, or ``time_per_move`` seconds
(measured from the call, at least one descent; a batch stops early when the
deadline minus a running estimate of the forward pass's time is reached). The most visited root move is
played. A forced move (one legal action) is returned at once.
"""

from __future__ import annotations

import functools
import math
import os
import time
from collections.abc import Mapping
from typing import Any

import numpy as np
import torch

from agents import checkpoint as ckpt
from agents.base import SeatView
from agents.fast_search import Workspace, prepared_workspace, rollout_values
from agents.heuristic.policies import PlannerPolicy
from agents.options import real_option, whole_option
from agents.policy import DEFAULT_CHECKPOINT, PolicyAgent
from agents.search_settings import SearchSettings
from burako_env import fast as F
from burako_env.fast import FastGame, determinize_state
from burako_env.outcomes import side_reward, zero_sum_from_totals
from burako_env.safe_yaml import short_repr

#: the value a pending descent counts as, for each node on its path
VIRTUAL_LOSS = 1.0


def _load_network(path: str) -> tuple[torch.nn.Module, dict[str, Any]]:
    """The network (eval mode) and training config of a checkpoint, once per
    process and version of the file: evaluations and tournaments build an agent for every game, and a
    file replaced under the same path (a new bot; tournaments fingerprint its bytes) is read again."""
    try:
        stat = os.stat(path)
        version: tuple[int, int] | None = (stat.st_mtime_ns, stat.st_size)
    except OSError:
        version = None  # ckpt.load names the problem
    return _load_network_version(path, version)


@functools.lru_cache(maxsize=4)
def _load_network_version(path: str, version: tuple[int, int] | None) -> tuple[torch.nn.Module, dict[str, Any]]:
    data = ckpt.load(path)
    net, _ = ckpt.build_policy(data, source=path)
    if net.shape.privileged_value:
        raise ckpt.CheckpointError(
            f"{path}: its value was trained on what a seat cannot see (privileged_value), so a search cannot "
            "read it in play; play this checkpoint with the 'policy' agent"
        )
    if net.shape.score_potential:
        raise ckpt.CheckpointError(
            f"{path}: its value head learned a hand's result less the table's margin (score_potential), which "
            "a search does not add back; play this checkpoint with the 'policy' agent"
        )
    return net, dict(data.get("config") or {})


class _Node:
    """A decision point of the tree: per action, visits and the summed
    value for the side that moves here; the network's logits once evaluated."""

    __slots__ = ("children", "logits", "side", "total", "value", "visits")

    def __init__(self, side: int) -> None:
        self.side = side
        self.logits: np.ndarray | None = None
        #: the leaf value this node was evaluated with, for its side (first-play urgency's base)
        self.value = 0.0
        self.visits = np.zeros(F.NUM_ACTIONS, dtype=np.float32)
        self.total = np.zeros(F.NUM_ACTIONS, dtype=np.float32)
        self.children: dict[int, _Node] = {}


class _Rollouts:
    """The optional leaf rollouts (``rollout_weight``): the compiled greedy
    policy of :mod:`agents.fast_search` plays ``depth`` turns from each leaf,
    on the search's scratch arrays, and the heuristic evaluation scores where
    it stops; one row of values per leaf of a batch."""

    def __init__(self, work: Workspace, batch: int) -> None:
        self.work = work
        self.values = np.zeros((batch, work.tables.num_sides), dtype=np.float64)

    def play(self, st: np.ndarray, row: int, settings: SearchSettings) -> None:
        w = self.work
        rollout_values(
            st,
            w.args,
            w.evals,
            w.buf,
            w.mask,
            w.scores,
            int(st[F.TURN]),
            settings.depth,
            settings.max_rollout_actions,
            settings.value_scale,
            self.values[row],
        )


def _reward_setting(config: Mapping[str, Any], name: str, default: float, source: str, positive: bool) -> float:
    """A reward setting of the checkpoint's training config: a finite number (``positive``: > 0), or a
    CheckpointError naming the file and the field ("abc" was a bare ValueError, a NaN scale accepted)."""
    value = config.get(name, default)
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    if not number or not math.isfinite(value) or (positive and value <= 0):
        raise ckpt.CheckpointError(
            f"{source}: its training config's {name} is {short_repr(value)}; a finite number"
            f"{' > 0' if positive else ''} is needed to score the search's leaves"
        )
    return float(value)


class NeuralISMCTSAgent:
    """PUCT ISMCTS with the network's prior and value (module docstring).

    ``checkpoint``: a policy or training checkpoint (default: the shipped
    bot, ``agents/checkpoints/burako_ppo.pt``), loaded through
    :mod:`agents.checkpoint` and checked against the table's layout at
    ``reset`` as :class:`agents.policy.PolicyAgent` does. Search options:
    :class:`agents.search_settings.SearchSettings`'s ``simulations``,
    ``time_per_move`` and ``exploration`` (PUCT's c_puct; ``c_puct`` is its
    deprecated name), as keywords or whole as ``settings=``; ``depth``,
    ``max_rollout_actions`` and ``value_scale`` for the rollouts.
    ``fpu_reduction``, ``rollout_weight`` and ``planner_prior``: module docstring. ``torch_threads``:
    torch's thread count during a search (restored afterwards; None leaves it
    as it is). One thread is the default because the forward passes are
    small: on a busy 2-core machine a 2-thread pass took 17-120 ms against
    2.7 ms for one thread.
    """

    name = "neural_ismcts"
    #: the defaults of this agent's search settings, and the fields it reads
    default_settings = SearchSettings(simulations=256, exploration=1.5)
    uses_settings = ("simulations", "time_per_move", "exploration", "depth", "max_rollout_actions", "value_scale")

    @staticmethod
    def checkpoint_file(checkpoint: str | None) -> str:
        """The checkpoint an agent built with ``checkpoint=`` loads: it, or the shipped bot."""
        return str(checkpoint if checkpoint is not None else DEFAULT_CHECKPOINT)

    @classmethod
    def files_read(cls, options: Mapping[str, Any]) -> list[str]:
        """The checkpoint an agent built with ``options`` loads (:func:`agents.registry.agent_files`)."""
        return [cls.checkpoint_file(options.get("checkpoint"))]

    def __init__(
        self,
        seed: int | None = None,
        checkpoint: str | None = None,
        settings: SearchSettings | None = None,
        leaf_batch: int = 16,
        torch_threads: int | None = 1,
        fpu_reduction: float | None = None,
        rollout_weight: float = 0.0,
        planner_prior: float = 0.5,
        **options: Any,
    ) -> None:
        self.settings = SearchSettings.for_agent(
            self.name, self.default_settings, self.uses_settings, settings, options
        )
        if self.settings.exploration <= 0:
            raise ValueError(f"exploration (c_puct) must be > 0, got {self.settings.exploration}")
        # each option's type too: leaf_batch=2.5 or torch_threads=1.5 crashed at the first move, true passed for 1
        leaf_batch = whole_option("leaf_batch", leaf_batch, 1)
        if torch_threads is not None:
            torch_threads = whole_option("torch_threads", torch_threads, 1)
        self.planner_prior = real_option("planner_prior", planner_prior, 0.0, 1.0)
        self.planner = PlannerPolicy() if self.planner_prior > 0 else None
        self.fpu_reduction = None if fpu_reduction is None else real_option("fpu_reduction", fpu_reduction, 0.0)
        self.rollout_weight = real_option("rollout_weight", rollout_weight, 0.0, 1.0)
        path = self.checkpoint_file(checkpoint)
        net, config = _load_network(path)
        self.policy = PolicyAgent(seed=seed, net=net)  # the layout check at reset
        self.policy.source = path
        self.net = net
        # the run's reward, read from its checkpoint: a bad value there is the file's fault, named as such
        self.win_weight, self.score_weight, self.reward_scale, self.truncated_reward = (
            _reward_setting(config, name, default, path, positive)
            for name, default, positive in (
                ("win_weight", 0.5, False),
                ("score_weight", 1.0, False),
                ("reward_scale", 1000.0, True),
                ("truncated_reward", 0.0, False),
            )
        )
        self.rng = np.random.default_rng(seed)
        self.leaf_batch = leaf_batch
        self.torch_threads = torch_threads
        self.seat = -1
        #: statistics of the last search (for tests, tuning and the benchmark)
        self.last_simulations = 0
        #: the root of the last search: its visits and summed values per action
        self.last_root: _Node | None = None
        #: seconds of one forward pass of a batch (a running estimate, for ``time_per_move``)
        self._forward_s = 0.0
        #: scratch arrays of the compiled kernels, for the tables of the last search
        self._work: Workspace | None = None

    def reset(self, seat: int, rules: Any = None, num_players: int = 2) -> None:
        """Called at the start of each hand; refuses a network made for another layout, and builds the
        compiled tables of these rules (not on a move's clock: ``fast_search.prepared_workspace``)."""
        self.policy.reset(seat, rules, num_players)
        self.seat = seat
        if rules is not None:
            self._work = prepared_workspace(self._work, rules, num_players, evals=self.rollout_weight > 0)

    # ----------------------------------------------------------------- decision
    def act(self, observation: dict[str, np.ndarray], view: SeatView) -> int:
        start = time.perf_counter()
        mask = np.asarray(observation["action_mask"], dtype=bool)
        legal = np.flatnonzero(mask)
        if legal.size == 0:
            raise ValueError("NeuralISMCTSAgent.act: no legal action in the mask")
        self.last_simulations = 0
        self.last_root = None
        self.seat = view.seat
        if legal.size == 1:
            return int(legal[0])
        public = view.public_state()
        game = FastGame.from_game_state(public)
        hint = None if self.planner is None else self.planner.choose(public, legal.tolist())
        budget = self.settings.time_per_move
        deadline = None if budget is None else start + budget
        threads = torch.get_num_threads()
        try:
            if self.torch_threads is not None:
                torch.set_num_threads(self.torch_threads)
            obs = np.asarray(observation["observation"], dtype=np.float32)
            return self.search(game, obs, legal, deadline, hint)
        finally:
            torch.set_num_threads(threads)

    @torch.no_grad()
    def _evaluate(self, obs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        logits, value = self.net(torch.from_numpy(obs))
        return logits.numpy(), value.numpy()

    def search(
        self,
        game: FastGame,
        observation: np.ndarray,
        legal: np.ndarray,
        deadline: float | None,
        hint: int | None = None,
    ) -> int:
        """PUCT simulations from ``game`` (the seat's view, its hidden parts
        resampled each simulation); returns the most visited legal root move.
        ``hint``: the Planner's choice, weighted into the root's prior by ``planner_prior``."""
        tables = game.tables
        if self.seat < 0:
            self.seat = game.current
        args = tables.kernel_args
        sides = tables.num_sides
        root = _Node(self.seat % sides)
        began = time.perf_counter()
        root_logits, root_value = self._evaluate(observation[None, :])
        root.logits, root.value = root_logits[0], float(root_value[0])
        if hint is not None and self.planner_prior > 0:
            root.logits = self._hinted_logits(root.logits, legal, hint)
        self._forward_s = max(self._forward_s, time.perf_counter() - began)
        batch = self.leaf_batch
        obs = np.zeros((batch, tables.obs_size), dtype=np.float32)
        if self._work is None or self._work.tables is not tables:
            self._work = Workspace(tables)
        work = self._work  # the descents' and the rollouts' scratch: they take turns
        states = np.zeros((batch, F.STATE_SIZE), dtype=np.int32)
        rollouts = _Rollouts(work, batch) if self.rollout_weight > 0 else None
        done = 0
        while True:
            if deadline is None:
                if done >= self.settings.simulations:
                    break
                size = min(batch, self.settings.simulations - done)
            else:
                if done > 0 and time.perf_counter() + self._forward_s >= deadline:
                    break
                size = batch
            pending: list[tuple[list[tuple[_Node, int]], _Node | None, int, np.ndarray | None]] = []
            rows = 0
            for i in range(size):
                if deadline is not None and i > 0 and time.perf_counter() + self._forward_s >= deadline:
                    size = i
                    break
                st = states[i]
                st[:] = game.st
                determinize_state(st, self.seat, self.rng, args)
                path, leaf, values = self._descend(root, st, args, work.buf, work.mask, legal, sides)
                for node, action in path:  # virtual loss
                    node.visits[action] += 1
                    node.total[action] -= VIRTUAL_LOSS
                if values is None:
                    F.encode(st, int(st[F.CURRENT]), args, obs[rows])
                    if rollouts is not None:  # st is not needed after the encoding: the rollout plays on it
                        rollouts.play(st, rows, self.settings)
                    pending.append((path, leaf, rows, None))
                    rows += 1
                else:
                    pending.append((path, None, -1, values))
            if rows:
                began = time.perf_counter()
                logits, value = self._evaluate(obs[:rows])
                # a running estimate of one forward pass, kept out of the time budget's last batch
                self._forward_s = 0.7 * self._forward_s + 0.3 * (time.perf_counter() - began)
            for path, leaf, row, values in pending:
                if values is None:
                    assert leaf is not None
                    values = self._side_values(float(value[row]), leaf.side, sides)
                    if rollouts is not None:
                        values = (1.0 - self.rollout_weight) * values + self.rollout_weight * self._rollout_reward(
                            rollouts.values[row]
                        )
                    if leaf.logits is None:
                        leaf.logits = logits[row]
                        leaf.value = float(values[leaf.side])
                for node, action in path:
                    node.total[action] += VIRTUAL_LOSS + values[node.side]  # the virtual visit becomes real
            done += size
        self.last_simulations = done
        self.last_root = root
        visits = root.visits[legal]
        best = np.flatnonzero(visits == visits.max())
        if best.size > 1:  # ties (a tiny budget): the network's preference
            return int(legal[best[np.argmax(root.logits[legal][best])]])
        return int(legal[best[0]])

    def _descend(
        self,
        root: _Node,
        st: np.ndarray,
        args: tuple[np.ndarray, ...],
        buf: np.ndarray,
        mask: np.ndarray,
        root_legal: np.ndarray,
        sides: int,
    ) -> tuple[list[tuple[_Node, int]], _Node, np.ndarray | None]:
        """Walk down by PUCT on the determinization ``st`` (in place) to the
        first node without an evaluation or to the end of the hand; returns
        the path of (node, action), the leaf, and the values of a finished hand."""
        node = root
        legal = root_legal
        path: list[tuple[_Node, int]] = []
        while True:
            if legal.size == 1:
                action = int(legal[0])
            elif node.logits is None:
                return path, node, None
            else:
                action = self._select(node, legal)
            path.append((node, action))
            F.apply_unchecked(st, action, args)
            if st[F.PHASE] == F.P_HAND_OVER:
                return path, node, self._terminal_values(st, sides)
            child = node.children.get(action)
            if child is None:
                child = node.children[action] = _Node(int(st[F.CURRENT]) % sides)
            node = child
            F.legal_mask(st, args, buf, mask)
            legal = np.flatnonzero(mask)
            if legal.size == 0:  # defensive: never expected (E3)
                return path, node, np.zeros(sides)

    def _select(self, node: _Node, legal: np.ndarray) -> int:
        """PUCT over the legal actions of this determinization."""
        assert node.logits is not None
        logits = node.logits[legal]
        prior = np.exp(logits - logits.max())
        prior /= prior.sum()
        n = node.visits[legal]
        unvisited = 0.0  # the value an untried move counts as
        if self.fpu_reduction is not None:  # first-play urgency: the node's mean value, minus a reduction
            unvisited = (node.value + float(node.total.sum())) / (1.0 + float(node.visits.sum())) - self.fpu_reduction
        q = np.divide(node.total[legal], n, out=np.full_like(n, unvisited), where=n > 0)
        score = q + self.settings.exploration * prior * math.sqrt(float(n.sum()) + 1.0) / (1.0 + n)
        return int(legal[int(np.argmax(score))])

    def _hinted_logits(self, logits: np.ndarray, legal: np.ndarray, hint: int) -> np.ndarray:
        """Logits whose softmax over ``legal`` is ``(1 - m)`` x the network's
        prior + ``m`` on ``hint`` (``m``: ``planner_prior``)."""
        if hint not in legal:
            raise ValueError(f"the Planner's choice {hint} is not a legal root move")
        prior = np.exp(logits[legal] - logits[legal].max())
        prior *= (1.0 - self.planner_prior) / prior.sum()
        prior[np.flatnonzero(legal == hint)[0]] += self.planner_prior
        out = np.full(F.NUM_ACTIONS, -np.inf, dtype=np.float32)
        with np.errstate(divide="ignore"):  # a zero prior (m = 1) is a move PUCT never explores first
            out[legal] = np.log(prior)
        return out

    def _side_values(self, value: float, side: int, sides: int) -> np.ndarray:
        """The network's value for the side to move, as zero-sum side values."""
        out = np.full(sides, -value / (sides - 1))
        out[side] = value
        return out

    def _rollout_reward(self, lead: np.ndarray) -> np.ndarray:
        """A rollout's values (each side's evaluation lead over ``value_scale``)
        in the network's reward units: the win term smoothed by tanh."""
        points = lead * self.settings.value_scale
        return self.win_weight * np.tanh(lead) + self.score_weight * points / self.reward_scale

    def _terminal_values(self, st: np.ndarray, sides: int) -> np.ndarray:
        """The training reward of a finished hand, per side
        (:func:`burako_env.outcomes.side_reward`): 0 for a void hand, the
        checkpoint's ``truncated_reward`` for one cut at ``max_turns``."""
        truncated = not st[F.HAS_SCORES] and st[F.END_REASON] == F.END_TRUNCATED
        diffs = zero_sum_from_totals([F.side_total(st, s) for s in range(sides)]) if st[F.HAS_SCORES] else [0.0] * sides
        weights = (self.win_weight, self.score_weight, self.reward_scale, self.truncated_reward)
        return np.array([side_reward(d, truncated, *weights) for d in diffs])


__all__ = ["NeuralISMCTSAgent"]
