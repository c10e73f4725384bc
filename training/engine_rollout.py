"""Rollouts on the readable engine (``rollout: engine``), one game at a time.

The path before the batched compiled core (:mod:`training.rollout`, the
default), kept for comparison (``bench/bench_training.py``) and as the
readable reference of what a rollout does: ``num_envs`` :class:`Table` s,
each a :class:`~burako_env.engine.GameState` and who plays each seat (the
learner, a frozen ``snapshot:N``, or a baseline agent). Every step, every
table makes one decision; forced moves are played without being stored;
learner seats of all tables are batched through the network, snapshots per
snapshot. A learner seat's decisions of one hand form an :class:`Episode`,
rewarded at the end of the hand with its own side's result
(:func:`hand_reward`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from agents.network import PolicyNet
from agents.runner import LazyObservation
from burako_env.engine import TRUNCATED, GameState
from burako_env.fast import FastGame
from burako_env.outcomes import side_reward
from burako_env.views import LazySeatView
from training.league import SELF, SNAPSHOT_PREFIX
from training.network import sample_actions, sample_actions_dense
from training.rollout import close_hand, play_until, ready_opponent

if TYPE_CHECKING:
    from training.ppo import Trainer

LEARNER = "learner"


class SeatEpisode:
    """One learner seat's stored decisions in the current hand."""

    __slots__ = ("actions", "logprobs", "masks", "obs", "values")

    def __init__(self) -> None:
        self.obs: list[np.ndarray] = []
        self.masks: list[np.ndarray] = []
        self.actions: list[int] = []
        self.logprobs: list[float] = []
        self.values: list[float] = []


@dataclass
class Episode:
    """A finished episode of one learner seat, ready for GAE."""

    obs: np.ndarray
    masks: np.ndarray
    actions: np.ndarray
    logprobs: np.ndarray
    values: np.ndarray
    reward: float
    #: the seat whose decisions these are, the hand they come from, who the opponent was
    seat: int = -1
    hand: int = -1
    opponent: str = ""


class Table:
    """One of the games of the rollout: a state and who plays each seat."""

    def __init__(self, index: int) -> None:
        self.index = index
        self.state: GameState | None = None
        self.opponent = SELF
        self.learner_side = 0
        self.controllers: list[str] = []
        self.episodes: dict[int, SeatEpisode] = {}
        self.agents: dict[tuple[int, str], Any] = {}
        self.view_rngs: list[np.random.Generator] = []


def hand_reward(
    state: GameState | FastGame,
    side: int,
    win_weight: float,
    score_weight: float,
    scale: float,
    truncated_reward: float = 0.0,
) -> float:
    """The learner side's reward for a finished hand (0 for void hands; ``truncated_reward`` for truncated ones);
    on either engine's state (both give ``end_reason`` and ``side_rewards``)."""
    truncated = state.end_reason == TRUNCATED
    return side_reward(state.side_rewards()[side], truncated, win_weight, score_weight, scale, truncated_reward)


class EngineRollout:
    """The trainer's games on the readable engine (module docstring)."""

    def __init__(self, trainer: Trainer) -> None:
        self.trainer = trainer
        cfg = trainer.cfg
        self.obs_buf = np.zeros((cfg.num_envs, trainer.observer.size), dtype=np.float32)
        self.mask_buf = np.zeros((cfg.num_envs, trainer.net.policy_head.out_features), dtype=bool)
        self.tables = [Table(i) for i in range(cfg.num_envs)]
        for table in self.tables:
            self._new_hand(table)

    def opponents_in_play(self) -> set[str]:
        return {table.opponent for table in self.tables}

    def _new_hand(self, table: Table) -> None:
        t = self.trainer
        table.state = GameState.new_game(t.rng, t.rules, t.n)
        table.opponent = t.league.sample(t.rng)
        sides = t.rules.num_sides(t.n)
        table.learner_side = int(t.rng.integers(sides))
        table.controllers = [
            LEARNER if (table.opponent == SELF or table.state.side_of[s] == table.learner_side) else table.opponent
            for s in range(t.n)
        ]
        table.episodes = {s: SeatEpisode() for s in range(t.n) if table.controllers[s] == LEARNER}
        table.view_rngs = [np.random.default_rng(t.rng.integers(2**63)) for _ in range(t.n)]
        seats = [s for s in range(t.n) if table.controllers[s] == table.opponent]
        ready_opponent(t, table.opponent, seats, table.agents)

    def _apply(self, table: Table, action: int, finished: list[Episode]) -> None:
        t = self.trainer
        state = table.state
        assert state is not None
        state.apply(action)
        if not state.hand_over:
            return
        cfg = t.cfg
        start = len(finished)
        for seat, ep in table.episodes.items():
            if not ep.actions:
                continue
            reward = hand_reward(
                state, state.side_of[seat], cfg.win_weight, cfg.score_weight, cfg.reward_scale, cfg.truncated_reward
            )
            finished.append(
                Episode(
                    obs=np.stack(ep.obs),
                    masks=np.stack(ep.masks),
                    actions=np.asarray(ep.actions, dtype=np.int64),
                    logprobs=np.asarray(ep.logprobs, dtype=np.float32),
                    values=np.asarray(ep.values, dtype=np.float32),
                    reward=reward,
                    seat=seat,
                    hand=t.episodes_done,
                    opponent=table.opponent,
                )
            )
        # void/truncated hands (no hand scores) say nothing about strength
        result = state.side_rewards()[table.learner_side] if state.hand_scores is not None else None
        close_hand(t, table.opponent, finished[start:], result, state.end_reason == TRUNCATED)
        self._new_hand(table)

    @torch.no_grad()
    def _policy_actions(self, net: PolicyNet, rows: list[Table]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Encode the current seat of each table, run ``net``, sample; (actions, logprobs, values)."""
        t = self.trainer
        k = len(rows)
        for i, table in enumerate(rows):
            state = table.state
            assert state is not None
            t.observer.encode(state, state.current, out=self.obs_buf[i])
            self.mask_buf[i] = state.legal_mask()
        sample = sample_actions if t.cfg.policy_head == "legal" else sample_actions_dense
        with t.autocast():
            actions, logprobs, values = sample(
                net, torch.from_numpy(self.obs_buf[:k]).to(t.device), torch.from_numpy(self.mask_buf[:k]).to(t.device)
            )
        return actions.cpu().numpy(), logprobs.cpu().numpy(), values.cpu().numpy()

    def _step_all(self, finished: list[Episode]) -> int:
        """Every table makes one decision; returns the learner decisions stored."""
        t = self.trainer
        learner_rows: list[Table] = []
        snapshot_rows: dict[str, list[Table]] = {}
        for table in self.tables:
            state = table.state
            assert state is not None
            seat = state.current
            mask = state.legal_mask()
            legal = np.flatnonzero(mask)
            if legal.size == 1:
                self._apply(table, int(legal[0]), finished)
                continue
            controller = table.controllers[seat]
            if controller == LEARNER:
                learner_rows.append(table)
            elif controller.startswith(SNAPSHOT_PREFIX):
                snapshot_rows.setdefault(controller, []).append(table)
            else:
                obs = LazyObservation(t.observer, state, seat, mask.copy())
                view = LazySeatView(state, seat, table.view_rngs[seat])
                action = int(table.agents[(seat, controller)].act(obs, view))
                obs.expire()
                view.expire()
                self._apply(table, action, finished)
        for name, rows in snapshot_rows.items():
            actions, _, _ = self._policy_actions(t._snapshot_net(name), rows)
            for table, action in zip(rows, actions, strict=True):
                self._apply(table, int(action), finished)
        if learner_rows:
            actions, logprobs, values = self._policy_actions(t.net, learner_rows)
            for i, table in enumerate(learner_rows):
                state = table.state
                assert state is not None
                ep = table.episodes[state.current]
                ep.obs.append(self.obs_buf[i].copy())
                ep.masks.append(self.mask_buf[i].copy())
                ep.actions.append(int(actions[i]))
                ep.logprobs.append(float(logprobs[i]))
                ep.values.append(float(values[i]))
                self._apply(table, int(actions[i]), finished)
        return len(learner_rows)

    def collect(self, batch_size: int) -> list[Episode]:
        """Play until at least ``batch_size`` learner decisions lie in finished episodes."""
        return play_until(self._step_all, batch_size)
