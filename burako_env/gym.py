"""Single-agent Gymnasium env: one learner seat against fixed opponents.

    from burako_env.gym import BurakoGymEnv
    env = BurakoGymEnv(opponents="planner")          # 2 players, learner in seat 0
    obs, info = env.reset(seed=0)
    obs, reward, terminated, truncated, info = env.step(env.action_space.sample())

What libraries such as Stable-Baselines3 / sb3-contrib ``MaskablePPO``
expect from a game: ``step`` takes the learner's action, then plays every
opponent decision until the learner is to act again (or the hand ends), on
the compiled core.

- Observation: the AEC env's dict, ``{"observation": float32 vector,
  "action_mask": int8}``, for the learner's seat (fresh arrays every call).
- ``action_masks()``: the learner's legal actions as a bool array (the
  method MaskablePPO looks for). ``action_space.sample()`` draws a legal
  action (:class:`~burako_env.env.MaskedActionSpace`).
- Reward: the learner's *own* side's hand result when a hand ends
  (``reward="score"``: its side's hand score minus the others', /
  ``reward_scale``; ``"win"``: +1 / -1 / 0), zero otherwise; the same
  function as the AEC env (``env.hand_rewards``).
- ``terminated`` when the hand (or, with ``match=True``, the match) is over;
  ``truncated`` at ``max_turns`` (no score).
- An illegal action ends the episode with ``illegal_reward`` (default -1)
  and ``info["illegal_action"] = True`` (PettingZoo's classic-game
  convention), or raises ``ValueError`` with ``illegal="raise"``. A value
  that is no action id at all (a float, a batch of one, an id outside the
  space) always raises ``ValueError`` and changes nothing: it is the
  caller's fault, not a move to learn from. An integer or a 0-d integer
  array (SB3's ``predict`` for one observation) is an action id.
- Opponents: ``opponents`` is an agent name (``"random"``, ``"greedy"``,
  ``"planner"``, ``"ismcts"``, ``"policy"``: the project's agents, declared
  as ``burako_env.agents`` entry points, so resolved once it is installed;
  or ``"module:Class"``; ``burako_env/plugins.py``), an agent object
  (``reset``/``act``, the protocol of ``agents/base.py``), a callable
  ``policy(observation_dict) -> action``, or a list with one of these per
  opponent seat, counted from the learner's left: ``opponents[k]`` sits
  ``k + 1`` seats after the learner, so with 4 players ``opponents[1]`` is
  always the partner, whatever seat the learner drew. Agents get the same ``(observation, view)`` a game runner
  gives them (``agents.runner``): the view is lazy, so an agent that never
  reads it costs nothing, and one that does pays one conversion of the
  compiled state (~50 us) plus its determinization.
- Seeds: ``reset(seed=s)`` seeds the deals, rebuilds agents given by name
  with seeds derived from ``s`` (and reseeds the ``rng`` of agent objects
  that have one), and seeds each opponent's view generator, so an episode is
  a function of ``s`` and the learner's actions.
- ``learner_seat``: an int, or ``"random"`` (drawn at each reset from the
  env's generator, so the learner learns every seat).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any, ClassVar

import gymnasium
import numpy as np
from gymnasium import spaces

from burako_env import actions as A
from burako_env.engine import TRUNCATED, GameState
from burako_env.env import MaskedActionSpace, check_flag, check_reward, check_seed, rules_for_env
from burako_env.fast import FastGame, fast_tables
from burako_env.observation import observation_bounds
from burako_env.outcomes import hand_rewards
from burako_env.plugins import make_agent
from burako_env.render import render_table
from burako_env.rules import Rules
from burako_env.views import LazySeatView, view_generator

Opponent = Any  # a registry name, an agent object, or a callable policy(observation) -> action


def as_action_id(answer: Any, who: str) -> int:
    """The action id a policy answered: a Python or numpy integer, or a 0-d integer array (what SB3's
    ``predict`` returns for one observation). Anything else (a float, a bool, a batch of one, an id
    outside ``Discrete(NUM_ACTIONS)``) is a ``ValueError`` naming ``who`` and the value."""
    try:  # a 0-d array is its number there (safe_yaml.action_id_problem)
        return A.action_id(answer)
    except ValueError as exc:
        raise ValueError(f"{who} gave no action id of Discrete({A.NUM_ACTIONS}): {exc}") from None


class _FastSeatView(LazySeatView):
    """A lazy :class:`~burako_env.views.SeatView` over a compiled game: the
    readable state is built only when the agent reads the view."""

    def __init__(self, game: FastGame, seat: int, rng: np.random.Generator) -> None:
        self.seat = seat
        self.rules = game.tables.rules
        self.num_players = game.tables.num_players
        self._rng = rng
        self._game: FastGame | None = game
        self._source = None
        self._determinized = None

    @property
    def _state(self) -> GameState:  # type: ignore[override]
        if self._determinized is None:
            if self._game is None:
                raise RuntimeError("this view expired: read it during act(), not after")
            # resampled on the flat state (compiled, same distribution as
            # GameState.determinize: E2), then read once into a GameState
            self._determinized = self._game.determinize(self.seat, self._rng).to_game_state()
            self._game = None
        return self._determinized

    def expire(self) -> None:
        self._game = None


class _CallableAgent:
    """A plain function ``policy(observation) -> action`` as an agent."""

    def __init__(self, policy: Callable[[dict[str, np.ndarray]], int]) -> None:
        self.policy = policy
        self.name = getattr(policy, "__name__", "policy")

    def reset(self, seat: int, rules: Any = None, num_players: int = 2) -> None:
        pass

    def act(self, observation: dict[str, np.ndarray], view: Any = None) -> int:
        return self.policy(observation)


#: deals a reset tries before it gives up on the learner ever getting a decision
MAX_DEALS_PER_RESET = 1000


class BurakoGymEnv(gymnasium.Env):
    """One learner seat against fixed opponents (module docstring)."""

    metadata: ClassVar[dict[str, Any]] = {"render_modes": ["ansi", "human"], "render_fps": 1}

    def __init__(
        self,
        opponents: Opponent | Sequence[Opponent] = "random",
        num_players: int = 2,
        learner_seat: int | str = 0,
        rules: str | Rules | dict[str, Any] = "burako",
        rule_overrides: dict[str, Any] | None = None,
        reward: str = "score",
        reward_scale: float = 1000.0,
        match: bool = False,
        max_turns: int | None = None,
        illegal: str = "terminate",
        illegal_reward: float = -1.0,
        render_mode: str | None = None,
    ) -> None:
        self.rules = rules_for_env(rules, rule_overrides, max_turns, num_players)
        self.num_players = int(num_players)
        check_reward(reward, reward_scale)
        if illegal not in ("terminate", "raise"):
            raise ValueError(f"illegal must be 'terminate' or 'raise', got {illegal!r}")
        if learner_seat != "random" and (
            isinstance(learner_seat, bool)
            or not isinstance(learner_seat, (int, np.integer))
            or not 0 <= learner_seat < self.num_players
        ):
            seats = f"0..{self.num_players - 1}"
            raise ValueError(f"learner_seat must be 'random' or a seat in {seats}, got {learner_seat!r}")
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode must be one of {self.metadata['render_modes']} or None, got {render_mode!r}")
        self.reward_mode = reward
        self.reward_scale = float(reward_scale)
        self.match = check_flag(match, "match")
        self.illegal = illegal
        self.illegal_reward = float(illegal_reward)
        if not math.isfinite(self.illegal_reward):
            raise ValueError(f"illegal_reward must be a finite number, got {illegal_reward!r}")
        self.learner_seat_option = learner_seat
        self.render_mode = render_mode
        self.tables = fast_tables(self.rules, self.num_players)
        specs = list(opponents) if isinstance(opponents, (list, tuple)) else [opponents] * (self.num_players - 1)
        if len(specs) != self.num_players - 1:
            raise ValueError(f"opponents: {len(specs)} given for {self.num_players - 1} opponent seats")
        for spec in specs:
            if not (isinstance(spec, str) or hasattr(spec, "act") or callable(spec)):
                raise ValueError(f"an opponent must be a registry name, an agent or a callable, got {spec!r}")
        self._opponent_specs = specs
        self._opponents: list[Any] = [self._build(spec, None) for spec in specs]
        low, high = observation_bounds(self.num_players, self.rules)
        self.observation_space = spaces.Dict(
            {
                "observation": spaces.Box(low=low, high=high, dtype=np.float32),
                "action_mask": spaces.Box(low=0, high=1, shape=(A.NUM_ACTIONS,), dtype=np.int8),
            }
        )
        self.action_space = MaskedActionSpace(A.NUM_ACTIONS, self._learner_mask)
        self.game: FastGame | None = None
        self.learner_seat = 0 if learner_seat == "random" else int(learner_seat)
        self._seat_agents: dict[int, Any] = {}
        self._view_rngs: list[np.random.Generator] = []
        self._done = True

    # ------------------------------------------------------------------ opponents
    @staticmethod
    def _build(spec: Opponent, seed: int | None) -> Any:
        if isinstance(spec, str):
            return make_agent(spec, seed=seed)
        if hasattr(spec, "act"):
            if seed is not None and isinstance(getattr(spec, "rng", None), np.random.Generator):
                spec.rng = np.random.default_rng(seed)
            return spec
        return _CallableAgent(spec)

    def _learner_mask(self) -> np.ndarray | None:
        game = self.game
        if game is None or self._done or game.hand_over:
            return None
        return game.legal_mask()

    # ------------------------------------------------------------------ API
    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        seed = None if seed is None else check_seed(seed)  # np.int64(3) was refused and True taken as 1
        super().reset(seed=seed)
        if seed is not None:
            seeds = np.random.SeedSequence(seed).generate_state(self.num_players + 1)
            self._opponents = [self._build(spec, int(s)) for spec, s in zip(self._opponent_specs, seeds, strict=False)]
            self._view_rngs = [view_generator(seed, seat) for seat in range(self.num_players)]
            self.action_space.seed(int(seeds[-1]))
        elif not self._view_rngs:
            self._view_rngs = [np.random.default_rng(self.np_random.integers(2**63)) for _ in range(self.num_players)]
        if self.learner_seat_option == "random":
            self.learner_seat = int(self.np_random.integers(self.num_players))
        # from the learner's left: with absolute seat order the partner's agent changed with the seat drawn
        others = [(self.learner_seat + k) % self.num_players for k in range(1, self.num_players)]
        self._seat_agents = dict(zip(others, self._opponents, strict=True))
        # a deal the opponents end before the learner's first decision (a small max_turns) has nothing
        # for the learner to do: it is dealt again, as BurakoGymVectorEnv does
        for _ in range(MAX_DEALS_PER_RESET):
            self.game = FastGame.new_game(self.np_random, self.rules, self.num_players)
            self._done = True  # until every opponent took its seat: one that fails leaves nothing to step
            self._reset_agents()
            self._done = False
            _, info = self._play_opponents()
            if not self._done:
                return self._observe(), info
        raise RuntimeError(
            f"reset: {MAX_DEALS_PER_RESET} deals in a row ended before the learner's first decision "
            f"(max_turns {self.rules.max_turns} too small for these opponents?)"
        )

    def _reset_agents(self) -> None:
        for seat, agent in self._seat_agents.items():
            agent.reset(seat, self.rules, self.num_players)

    def step(self, action: Any) -> tuple[dict[str, np.ndarray], float, bool, bool, dict[str, Any]]:
        game = self.game
        if game is None or self._done:
            raise RuntimeError("call reset() before step() (the episode is over)")
        mask = game.legal_mask()
        # no action id at all (a float, a batch of one) is the caller's fault, not a move: an error whatever
        # `illegal` says (it ended the episode with illegal_reward, and training learned from it)
        action = as_action_id(action, f"step() of the learner (seat {self.learner_seat})")
        if not mask[action]:
            if self.illegal == "raise":
                raise ValueError(f"illegal action {action!r} for the learner (seat {self.learner_seat})")
            self._done = True
            info = {"illegal_action": True, "learner_seat": self.learner_seat}
            return self._observe(), self.illegal_reward, True, False, info
        game.apply(int(action))
        reward, info = self._after_move()
        if not self._done:
            more, more_info = self._play_opponents()
            reward += more
            info = more_info or info  # with match: the hand the learner's move ended, unless a later one ended
        terminated = self._done and not info.get("truncated", False)
        truncated = self._done and bool(info.get("truncated", False))
        if self.render_mode == "human":
            self.render()
        return self._observe(), reward, terminated, truncated, info

    def _after_move(self) -> tuple[float, dict[str, Any]]:
        """The learner's reward and the episode's end after any move."""
        game = self.game
        assert game is not None
        if not game.hand_over:
            return 0.0, {}
        side = game.side_of[self.learner_seat]
        reward = hand_rewards(game, self.reward_mode, self.reward_scale, self.match)[side]
        scores = game.hand_scores
        info: dict[str, Any] = {
            "hand_over": True,
            "end_reason": game.end_reason,
            "truncated": game.end_reason == TRUNCATED,
            "learner_seat": self.learner_seat,
            "side": side,
            "score_breakdown": None if scores is None else [s.to_dict() for s in scores],
            "hand_score": None if scores is None else scores[side].total,
            "match_scores": game.match_scores,
            "match_over": game.match_over,
        }
        if game.end_reason == TRUNCATED or not self.match or game.match_over:
            self._done = True
        else:
            game.next_hand(self.np_random)
            try:
                self._reset_agents()
            except BaseException:  # an opponent that cannot take its seat: nothing left to step
                self._done = True
                raise
        return reward, info

    def _play_opponents(self) -> tuple[float, dict[str, Any]]:
        """Opponents' decisions until the learner is to act or the episode ends. An opponent
        that fails (an illegal answer, an exception) ends the episode: the game stopped between
        two seats' moves, so a later step would play the learner's action in another seat."""
        try:
            return self._opponent_moves()
        except BaseException:
            self._done = True
            raise

    def _opponent_moves(self) -> tuple[float, dict[str, Any]]:
        game = self.game
        assert game is not None
        reward, info = 0.0, {}
        while not self._done and game.current != self.learner_seat:
            seat = game.current
            mask = game.legal_mask()
            observation = {"observation": game.encode(seat), "action_mask": mask.copy()}
            view = _FastSeatView(game, seat, self._view_rngs[seat])
            try:
                answer = self._seat_agents[seat].act(observation, view)
            finally:
                view.expire()
            try:
                answer = as_action_id(answer, f"opponent in seat {seat}")
            except ValueError as exc:
                raise ValueError(f"{exc}; the episode ends here (call reset())") from None
            if not mask[answer]:
                raise ValueError(
                    f"opponent in seat {seat} answered an illegal action {answer!r}; the episode ends here "
                    "(call reset())"
                )
            game.apply(int(answer))
            got, step_info = self._after_move()
            reward += got
            if step_info:
                info = step_info
        return reward, info

    def _observe(self) -> dict[str, np.ndarray]:
        game = self.game
        assert game is not None
        mask = self._learner_mask()
        return {
            "observation": game.encode(self.learner_seat),
            "action_mask": np.zeros(A.NUM_ACTIONS, dtype=np.int8) if mask is None else mask.copy(),
        }

    def action_masks(self) -> np.ndarray:
        """The learner's legal actions (bool), as sb3-contrib's MaskablePPO asks."""
        mask = self._learner_mask()
        if mask is None:
            return np.zeros(A.NUM_ACTIONS, dtype=bool)
        return mask.astype(bool)

    def render(self) -> str | None:
        if self.render_mode is None or self.game is None:
            return None
        text = render_table(self.game.to_game_state(), viewer=self.learner_seat)
        if self.render_mode == "human":
            print(text)
            return None
        return text

    def describe_action(self, action: int) -> str:
        """Human-readable text of an action in the current state."""
        if self.game is None:
            raise RuntimeError("call reset() first")
        return self.game.to_game_state().describe(action)
