"""Rollouts of Rummy (``game: rummy``) on its pure engine, one game per table.

``num_envs`` :class:`RummyTable` s, each a :class:`~burako_env.rummy.engine.RummyState`
(one hand: a new deal when it ends) and who plays each seat. Rummy is each
for himself (R2), so a hand seats the learner in one seat drawn at random
and the league's opponent in every other seat (a baseline agent, or a frozen
``snapshot:N``), or, in self-play, the current policy in every seat. Every
step each table makes one decision, as in :mod:`training.engine_rollout`:

- forced moves (one legal action, often "end the turn") are played without
  being stored;
- learner seats of all tables are encoded (burako_env/rummy/observation.py)
  and batched through the network in one forward pass, sampled over the
  exact mask (burako_env/rummy/actions.py) only;
- snapshots are batched per snapshot; baselines answer ``act`` on the env's
  observation dict (nothing hidden, E2), as in ``agents.rummy_runner``.

Decisions go to a :class:`~training.rollout.DecisionStore` (56 actions,
masks bit-packed) and come back as :class:`~training.rollout.StoredEpisode` s,
so the PPO update is the same code as Burako's. ``timing`` splits the
rollout's seconds as the compiled-core rollout's does (logged as
``rollout/<part>_share``): ``learner`` and ``snapshots`` (forward passes),
``baselines`` (the agents' ``act``), ``env`` (masks, encoding, steps and the
rest).

Credit is per seat: every learner seat's decisions of a hand form one
episode, rewarded with its own result (:func:`rummy_hand_reward`): Burako's
convention (``burako_env.outcomes.blended_reward`` of the zero-sum score
difference) on the negated hand totals, since the lower total wins (R10; the
closer has 0). With 2 players the win term is exactly "the lower total wins"
(a tie 0), as ``training.rummy_evaluate`` counts it; with 3 or 4 it is the
sign of the seat's total against the mean of the others'.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from burako_env.outcomes import blended_reward, zero_sum_from_totals
from burako_env.rummy.actions import NUM_ACTIONS
from burako_env.rummy.engine import RummyState
from burako_env.rummy.observation import OBSERVATION_SIZE, encode
from training.league import SELF, SNAPSHOT_PREFIX
from training.network import sample_actions, sample_actions_dense
from training.rollout import DecisionStore, StoredCollect, StoredEpisode, close_hand, ready_opponent

if TYPE_CHECKING:
    from training.ppo import Trainer

LEARNER = "learner"


def rummy_results(hand_scores: Sequence[int]) -> list[float]:
    """Each seat's zero-sum result of a finished hand: the mean of the others'
    totals minus its own (R10: lower is better), Burako's E5 on negated totals."""
    return zero_sum_from_totals([-float(total) for total in hand_scores])


def rummy_hand_reward(
    hand_scores: Sequence[int], seat: int, win_weight: float, score_weight: float, scale: float
) -> float:
    """A seat's training reward for a finished hand (module docstring)."""
    return blended_reward(rummy_results(hand_scores)[seat], win_weight, score_weight, scale)


class RummyTable:
    """One of the games of the rollout: a hand in play and who plays each seat."""

    def __init__(self, index: int) -> None:
        self.index = index
        self.state: RummyState | None = None
        self.opponent = SELF
        self.learner_seat = 0
        self.controllers: list[str] = []
        #: store rows of each learner seat's decisions in the current hand
        self.rows: dict[int, list[int]] = {}
        self.agents: dict[tuple[int, str], Any] = {}


class RummyRollout(StoredCollect):
    """The trainer's Rummy games (module docstring)."""

    def __init__(self, trainer: Trainer) -> None:
        self.trainer = trainer
        cfg = trainer.cfg
        self.store = DecisionStore(OBSERVATION_SIZE, NUM_ACTIONS, capacity=max(1024, cfg.batch_size))
        self.obs_buf = np.zeros((cfg.num_envs, OBSERVATION_SIZE), dtype=np.float32)
        self.mask_buf = np.zeros((cfg.num_envs, NUM_ACTIONS), dtype=np.bool_)
        self.tables = [RummyTable(i) for i in range(cfg.num_envs)]
        #: when a list: (table, seat, action, legal mask, store row or -1) of every move, for tests
        self.trace: list[tuple[int, int, int, np.ndarray, int]] | None = None
        #: rows of the episodes handed to the last update, freed at the next collect
        self._learned: list[list[np.ndarray]] = []
        #: seconds per part of the loop since the trainer last read them (module docstring)
        self.timing = {"env": 0.0, "learner": 0.0, "snapshots": 0.0, "baselines": 0.0}
        for table in self.tables:
            self._new_hand(table)

    def opponents_in_play(self) -> set[str]:
        return {table.opponent for table in self.tables}

    # ------------------------------------------------------------------ hands
    def _new_hand(self, table: RummyTable) -> None:
        t = self.trainer
        table.state = RummyState.new_game(t.rng, t.rules, t.n)
        table.opponent = t.league.sample(t.rng)
        table.learner_seat = int(t.rng.integers(t.n))
        table.controllers = [
            LEARNER if (table.opponent == SELF or s == table.learner_seat) else table.opponent for s in range(t.n)
        ]
        table.rows = {s: [] for s in range(t.n) if table.controllers[s] == LEARNER}
        seats = [s for s in range(t.n) if table.controllers[s] == table.opponent]
        ready_opponent(t, table.opponent, seats, table.agents)

    def _apply(self, table: RummyTable, action: int, finished: list[StoredEpisode]) -> None:
        t = self.trainer
        state = table.state
        assert state is not None
        state.step(action)
        if not state.hand_over:
            return
        cfg = t.cfg
        scores = list(state.hand_scores or [])
        start = len(finished)
        for seat, rows in table.rows.items():
            if not rows:
                continue
            reward = rummy_hand_reward(scores, seat, cfg.win_weight, cfg.score_weight, cfg.reward_scale)
            finished.append(
                StoredEpisode(
                    self.store,
                    np.asarray(rows, dtype=np.int64),
                    reward,
                    seat=seat,
                    hand=t.episodes_done,
                    opponent=table.opponent,
                )
            )
        close_hand(t, table.opponent, finished[start:], rummy_results(scores)[table.learner_seat])
        self._new_hand(table)

    # ------------------------------------------------------------------ stepping
    @torch.inference_mode()
    def _sample(self, net: Any, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Sample the first ``k`` rows of the buffers: (actions, log-probabilities, values)."""
        t = self.trainer
        sample = sample_actions if t.cfg.policy_head == "legal" else sample_actions_dense
        obs = torch.from_numpy(self.obs_buf[:k]).to(t.device)
        mask = torch.from_numpy(self.mask_buf[:k]).to(t.device)
        with t.autocast():
            actions, logprobs, values = sample(net, obs, mask)
        return actions.cpu().numpy(), logprobs.cpu().numpy(), values.cpu().numpy()

    def _fill(self, tables: list[RummyTable]) -> None:
        for i, table in enumerate(tables):
            state = table.state
            assert state is not None
            self.obs_buf[i] = encode(state, state.current)
            self.mask_buf[i] = state.legal_mask()

    def _traced(self, table: RummyTable, action: int, row: int = -1) -> None:
        if self.trace is not None:
            state = table.state
            assert state is not None
            self.trace.append((table.index, state.current, action, state.legal_mask().copy(), row))

    def step(self, finished: list[StoredEpisode]) -> int:
        """Every table makes one decision; returns the learner decisions stored."""
        t = self.trainer
        clock = time.perf_counter
        start = clock()
        spent = {"learner": 0.0, "snapshots": 0.0, "baselines": 0.0}
        learner_tables: list[RummyTable] = []
        snapshot_tables: dict[str, list[RummyTable]] = {}
        for table in self.tables:
            state = table.state
            assert state is not None
            seat = state.current
            mask = state.legal_mask()
            legal = np.flatnonzero(mask)
            if legal.size == 1:
                self._traced(table, int(legal[0]))
                self._apply(table, int(legal[0]), finished)
                continue
            controller = table.controllers[seat]
            if controller == LEARNER:
                learner_tables.append(table)
            elif controller.startswith(SNAPSHOT_PREFIX):
                snapshot_tables.setdefault(controller, []).append(table)
            else:
                observation = {"observation": encode(state, seat), "action_mask": mask}
                t0 = clock()
                action = int(table.agents[(seat, controller)].act(observation, None))
                spent["baselines"] += clock() - t0
                self._traced(table, action)
                self._apply(table, action, finished)
        for name, tables in snapshot_tables.items():
            self._fill(tables)
            t0 = clock()
            actions, _, _ = self._sample(t._snapshot_net(name), len(tables))
            spent["snapshots"] += clock() - t0
            for table, action in zip(tables, actions.tolist(), strict=True):
                self._traced(table, action)
                self._apply(table, action, finished)
        k = len(learner_tables)
        if k:
            self._fill(learner_tables)
            rows = self.store.put(self.obs_buf[:k], self.mask_buf[:k])
            t0 = clock()
            actions, logprobs, values = self._sample(t.net, k)
            spent["learner"] += clock() - t0
            self.store.actions[rows] = actions
            self.store.logprobs[rows] = logprobs
            self.store.values[rows] = values
            for table, row, action in zip(learner_tables, rows.tolist(), actions.tolist(), strict=True):
                state = table.state
                assert state is not None
                table.rows[state.current].append(row)
                self._traced(table, action, row)
                self._apply(table, action, finished)
        for part, seconds in spent.items():
            self.timing[part] += seconds
        self.timing["env"] += clock() - start - sum(spent.values())
        return k
