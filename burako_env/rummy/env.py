"""PettingZoo AEC environment ``rummy_v0``: a thin translation of the Rummy engine.

Agents ``player_0 … player_{n-1}`` (2 to 4, each for himself, R2). Observations
``{"observation": float32 (rummy/observation.py), "action_mask": int8 over the
56 actions of rummy/actions.py}``; agents not to act get an all-zero mask.

Rewards, zero-sum (E5, R11h), given when a hand ends:

- ``reward="score"`` (default): the mean of the other players' hand totals
  minus the agent's own, divided by ``reward_scale``;
- ``reward="win"``: the closer +1, every other player -1/(n-1); a blocked
  hand's lowest totals share the win. With ``match=True`` the win rewards
  are given at the end of the match, by match totals (R10).

``match=False`` (default): one hand per episode; ``match=True``:
``hands_per_match`` hands (R10). Every hand ends (R9), so nothing is
truncated.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
from gymnasium import spaces
from gymnasium.utils import seeding
from pettingzoo import AECEnv
from pettingzoo.utils import wrappers

from burako_env.env import ActionIdFirst, GameOverLast, GameOverStep, check_flag, check_seed, game_over_error
from burako_env.outcomes import check_reward
from burako_env.rules import RulesError
from burako_env.rummy import actions as A
from burako_env.rummy.engine import Phase, RummyState
from burako_env.rummy.observation import encode, observation_bounds
from burako_env.rummy.render import render_image, render_text
from burako_env.rummy.rules import RummyRules, load_rummy_rules
from burako_env.safe_yaml import is_integer, short_repr


def rummy_env(**kwargs: Any) -> AECEnv:
    """The environment with PettingZoo's standard wrappers for classic games."""
    wrapped: AECEnv = _TerminateIllegal(rummy_raw_env(**kwargs), illegal_reward=-1)
    wrapped = wrappers.AssertOutOfBoundsWrapper(wrapped)
    return _OrderEnforcing(wrapped)


class _TerminateIllegal(ActionIdFirst, wrappers.TerminateIllegalWrapper):
    """PettingZoo's wrapper, the action checked as an id first (:class:`~burako_env.env.ActionIdFirst`)."""


class _OrderEnforcing(GameOverLast, GameOverStep, wrappers.OrderEnforcingWrapper):
    """PettingZoo's wrapper; ``last()`` and ``step()`` after the game say so (burako_env.env)."""


class rummy_raw_env(GameOverLast, AECEnv):
    metadata: ClassVar[dict[str, Any]] = {
        "name": "rummy_v0",
        "render_modes": ["ansi", "human", "rgb_array"],
        "is_parallelizable": False,
        "render_fps": 1,
    }

    def __init__(
        self,
        num_players: int = 2,
        rules: str | RummyRules | dict[str, Any] = "rummy",
        rule_overrides: dict[str, Any] | None = None,
        render_mode: str | None = None,
        reward: str = "score",
        reward_scale: float = 100.0,
        match: bool = False,
    ) -> None:
        super().__init__()
        self.rules = load_rummy_rules(rules, rule_overrides)
        if not is_integer(num_players):
            raise RulesError(f"num_players must be an integer, got {num_players!r}")
        self.rules.check_players(int(num_players))
        check_reward(reward, reward_scale)
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode must be one of {self.metadata['render_modes']} or None, got {render_mode!r}")
        self.num_players = int(num_players)
        self.render_mode = render_mode
        self.reward_mode = reward
        self.reward_scale = float(reward_scale)
        self.match = check_flag(match, "match")
        self.possible_agents = [f"player_{i}" for i in range(self.num_players)]
        self.agent_name_mapping = {a: i for i, a in enumerate(self.possible_agents)}
        low, high = observation_bounds()
        obs_space = spaces.Dict(
            {
                "observation": spaces.Box(low=low, high=high, dtype=np.float32),
                "action_mask": spaces.Box(low=0, high=1, shape=(A.NUM_ACTIONS,), dtype=np.int8),
            }
        )
        self.observation_spaces = dict.fromkeys(self.possible_agents, obs_space)
        self.action_spaces = dict.fromkeys(self.possible_agents, spaces.Discrete(A.NUM_ACTIONS))
        self.state_: RummyState | None = None
        self.np_random, _ = seeding.np_random(None)

    def observation_space(self, agent: str) -> spaces.Space:
        return self.observation_spaces[agent]

    def action_space(self, agent: str) -> spaces.Space:
        return self.action_spaces[agent]

    @property
    def game(self) -> RummyState:
        if self.state_ is None:
            raise RuntimeError("call reset() before using the environment")
        return self.state_

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> None:
        if seed is not None:
            self.np_random, _ = seeding.np_random(check_seed(seed))
        self.state_ = RummyState.new_game(self.np_random, self.rules, self.num_players)
        self.agents = self.possible_agents[:]
        self.rewards = dict.fromkeys(self.agents, 0.0)
        self._cumulative_rewards = dict.fromkeys(self.agents, 0.0)
        self.terminations = dict.fromkeys(self.agents, False)
        self.truncations = dict.fromkeys(self.agents, False)
        self.infos = {a: {} for a in self.agents}
        self.agent_selection = self.possible_agents[self.state_.current]

    def observe(self, agent: str) -> dict[str, np.ndarray]:
        state = self.game
        player = self.agent_name_mapping[agent]
        if player == state.current and not state.hand_over and not self.terminations.get(agent, True):
            mask = state.legal_mask().copy()
        else:
            mask = np.zeros(A.NUM_ACTIONS, dtype=np.int8)
        return {"observation": encode(state, player), "action_mask": mask}

    def step(self, action: int) -> None:
        state = self.game  # before reset(): a clear RuntimeError
        agent = self.agent_selection
        terminated = self.terminations.get(agent)
        if terminated is None:
            raise game_over_error(f"step({short_repr(action)})")
        if terminated or self.truncations[agent]:
            self._was_dead_step(action)
            return
        state.step(action)  # a non-integer or illegal action raises and changes nothing
        if self.infos[agent]:
            # the last hand's summary has been seen (match=True): it does not stay for the whole next hand
            self.infos[agent] = {}
        self._cumulative_rewards[agent] = 0.0
        self.rewards = dict.fromkeys(self.agents, 0.0)
        if state.phase != Phase.PLAY:
            self._finish_hand(state)
        if not all(self.terminations.values()):
            self.agent_selection = self.possible_agents[state.current]
        self._accumulate_rewards()
        if self.render_mode == "human":
            self.render()

    def _finish_hand(self, state: RummyState) -> None:
        if self.reward_mode == "score":
            hand = state.hand_rewards("score", self.reward_scale)
            for agent, value in zip(self.possible_agents, hand, strict=True):
                self.rewards[agent] += value
        elif not self.match or state.match_over:
            winners = state.match_winners() if self.match else state.hand_winners()
            n = self.num_players
            if len(winners) < n:
                for i, agent in enumerate(self.possible_agents):
                    self.rewards[agent] += 1.0 / len(winners) if i in winners else -1.0 / (n - len(winners))
        for i, agent in enumerate(self.possible_agents):
            self.infos[agent] = {
                "hand_over": True,
                "hand_number": state.hand_number,
                "match_over": state.match_over,
                "hand_scores": list(state.hand_scores or []),
                "match_scores": list(state.match_scores),
                "closer": state.closer,
                "blocked": state.blocked,
                "player": i,
            }
        if self.match and not state.match_over:
            state.next_hand(self.np_random)
            return
        self.terminations = dict.fromkeys(self.agents, True)

    def render(self) -> str | np.ndarray | None:
        """``ansi``: text; ``human``: printed; ``rgb_array``: a picture (every hand face up)."""
        if self.render_mode is None:
            return None
        if self.render_mode == "rgb_array":
            return render_image(self.game)
        text = render_text(self.game)
        if self.render_mode == "human":
            print(text)
            return None
        return text

    def close(self) -> None:
        pass

    def describe_action(self, action: int) -> str:
        return A.describe_action(action)
