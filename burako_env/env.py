"""PettingZoo AEC environment ``burako_v0``: a thin translation of the engine.

Agents are ``player_0 … player_{n-1}``; play passes from ``player_i`` to
``player_{i+1}`` (B3). Observations are ``{"observation": float32 vector
(observation.py), "action_mask": int8 over actions.NUM_ACTIONS}``; agents not
to act get an all-zero mask.

Rewards (given when a hand ends, to every agent; zero-sum, E5):

- ``reward="score"`` (default): the agent's side hand score minus the mean of
  the other sides' (the difference, with 2 sides), divided by ``reward_scale``.
- ``reward="win"``: +1 to the side that won (the hand, or the match with
  ``match=True``), -1 shared among the others, 0 for a tie, a void or a
  truncated hand.

``engine="fast"`` (default) plays on the compiled core (fast.py);
``engine="python"`` on the readable engine (engine.py). Both give identical
observations, masks and rewards (tests/test_fast.py). ``env.game`` is always
a readable :class:`GameState`; with the fast engine it is a fresh copy made
at each access (changing it does not change the game).

``match=False`` (default): one hand per episode. ``match=True``: hands are
dealt until a side reaches the target (B28); void hands are dealt again by
the same mano (B24).

A hand that reaches ``max_turns`` turns is truncated (``truncations``), no
score: players can trade the discard pile back and forth for ever.
``max_cycles`` (default None) truncates an episode after that many decisions
(actions of any agent), as PettingZoo's ``max_cycles`` convention expects.

Each agent's action space is a :class:`MaskedActionSpace`: ``sample()``
returns an action legal now when that agent is to act. :func:`parallel_env`
gives the game as a PettingZoo ``ParallelEnv`` (turn-based conversion).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np
from gymnasium import spaces
from gymnasium.utils import seeding
from pettingzoo import AECEnv
from pettingzoo.utils import wrappers

from burako_env import actions as A
from burako_env.engine import TRUNCATED, VOID, GameState, IllegalActionError
from burako_env.fast import FastGame
from burako_env.observation import Observer, observation_bounds
from burako_env.outcomes import check_reward, hand_rewards
from burako_env.render import render_table
from burako_env.rules import Rules, RulesError, load_rules
from burako_env.safe_yaml import action_id_problem, is_integer, short_repr

ENGINES = ("fast", "python")


#: the AEC bookkeeping attributes a loop reads several times per step
_HOT_ATTRIBUTES = (
    "agent_selection",
    "agents",
    "terminations",
    "truncations",
    "rewards",
    "infos",
    "_cumulative_rewards",
)


def _mirrored_attribute(name: str) -> property:
    """A raw-env attribute whose every assignment is also written into the
    instance dict of each wrapper around the env, so that reading it on a
    wrapper is a plain attribute lookup instead of a chain of
    ``BaseWrapper.__getattr__`` calls (a third of a step's time otherwise).
    Dicts are shared, so in-place changes need no copy."""
    key = "_mirror_" + name

    def getter(self: Any) -> Any:
        try:
            return self.__dict__[key]
        except KeyError:
            raise AttributeError(name) from None

    def setter(self: Any, value: Any) -> None:
        self.__dict__[key] = value
        for wrapper in self._mirrors:
            wrapper.__dict__[name] = value

    return property(getter, setter)


def _receive_mirrors(wrapper: Any) -> None:
    """Register a wrapper with its raw env and copy the current mirrored values."""
    raw = wrapper._raw_env
    if not any(w is wrapper for w in raw._mirrors):
        raw._mirrors.append(wrapper)
    for name in _HOT_ATTRIBUTES:
        if "_mirror_" + name in raw.__dict__:
            wrapper.__dict__[name] = raw.__dict__["_mirror_" + name]


def _fast(wrapper_cls: type, qualname: str) -> type:
    """PettingZoo's wrapper class, unchanged in behaviour, that receives the raw
    env's hot attributes as mirrors (``_mirrored_attribute``); before the first
    reset they are absent, so OrderEnforcingWrapper still raises on access.
    ``action_space`` / ``observation_space`` go straight to the raw env."""

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        wrapper_cls.__init__(self, *args, **kwargs)
        self._raw_env = self.env.unwrapped
        _receive_mirrors(self)

    def action_space(self: Any, agent: str) -> spaces.Space:
        return self._raw_env.action_spaces[agent]

    def observation_space(self: Any, agent: str) -> spaces.Space:
        return self._raw_env.observation_spaces[agent]

    def __setstate__(self: Any, state: dict[str, Any]) -> None:
        """copy, deepcopy and pickle: a copied wrapper receives the mirrors too."""
        self.__dict__.update(state)
        if "_raw_env" in self.__dict__:
            _receive_mirrors(self)

    namespace: dict[str, Any] = {
        "__init__": __init__,
        "__setstate__": __setstate__,
        "__qualname__": qualname,
        "__doc__": wrapper_cls.__doc__,
        "action_space": action_space,
        "observation_space": observation_space,
    }
    return type(wrapper_cls.__name__, (wrapper_cls,), namespace)


def game_over_error(call: str) -> RuntimeError:
    """The error of a call that needs a live agent after every agent is done (PettingZoo's own
    ``AECEnv.last`` fails there with a bare ``KeyError`` of the agent's name)."""
    return RuntimeError(f"{call}: the game is over (every agent is done); call reset() to play again")


class GameOverLast:
    """``last()`` once the game is over says so, on the raw envs and on the outermost wrapper (whose
    ``last`` PettingZoo runs on the wrapper itself, reading the raw env's dictionaries); before the
    first reset it fails as PettingZoo's does."""

    def last(self, observe: bool = True) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        raw = self.__dict__.get("_raw_env") or self.unwrapped  # type: ignore[attr-defined]
        cumulative = getattr(raw, "_cumulative_rewards", None)  # absent before the first reset
        if cumulative is not None and getattr(raw, "agent_selection", None) not in cumulative:
            raise game_over_error("last()")
        return super().last(observe)  # type: ignore[misc]


class ActionIdFirst:
    """Before PettingZoo's TerminateIllegalWrapper (Burako's and Rummy's): the action must be an id of
    the space. The wrapper indexes the mask with it, and ``True`` (which ``Discrete.contains`` takes)
    picked a row and ended in numpy's "truth value of an array is ambiguous". Refused with the raw
    env's message."""

    def step(self, action: Any) -> None:
        if action is not None:
            problem = action_id_problem(action, self.action_space(self.agent_selection).n)  # type: ignore[attr-defined]
            if problem is not None:
                raise ValueError(f"{self.agent_selection}: {problem}")  # type: ignore[attr-defined]
        super().step(action)  # type: ignore[misc]


class GameOverStep:
    """On OrderEnforcingWrapper (Burako's and Rummy's): a ``step`` after the game raises, as the raw
    env's does; PettingZoo's wrapper only printed a warning and returned None."""

    def step(self, action: Any) -> None:
        if self.__dict__.get("_has_reset") and not self.agents:  # type: ignore[attr-defined]
            raise game_over_error(f"step({short_repr(action)})")
        super().step(action)  # type: ignore[misc]


class _TerminateIllegal(ActionIdFirst, _fast(wrappers.TerminateIllegalWrapper, "_TerminateIllegal")):  # type: ignore[misc]
    pass


_AssertOutOfBounds = _fast(wrappers.AssertOutOfBoundsWrapper, "_AssertOutOfBounds")


class _OrderEnforcing(GameOverLast, GameOverStep, _fast(wrappers.OrderEnforcingWrapper, "_OrderEnforcing")):  # type: ignore[misc]
    pass


class ActionSpace(spaces.Discrete):
    """``gymnasium.spaces.Discrete`` with a fast path for plain ints in
    ``contains`` (AssertOutOfBoundsWrapper calls it every step; the generic
    version costs more than the rest of a step's checks). Same answers."""

    def contains(self, x: Any) -> bool:
        if type(x) is int:
            return self._low <= x < self._high
        return super().contains(x)

    def __init__(self, n: int) -> None:
        super().__init__(n)
        self._low = int(self.start)
        self._high = int(self.start) + int(self.n)


def rules_for_env(rules: Any, rule_overrides: Any, max_turns: Any, num_players: Any) -> Rules:
    """The rules of an env (``raw_env``, ``BurakoVectorEnv``), every argument checked:
    refused, never coerced (``num_players=2.7`` or ``"4"`` is an error)."""
    if rule_overrides is not None and not isinstance(rule_overrides, Mapping):
        raise RulesError(
            f"rule_overrides must be a dict of rules fields to values, got {type(rule_overrides).__name__} "
            f"{short_repr(rule_overrides)}"
        )
    overrides = dict(rule_overrides or {})
    if max_turns is not None:
        overrides["max_turns"] = max_turns
    result = load_rules(rules, overrides)
    result.check_players(num_players)
    return result


def check_flag(value: Any, name: str) -> bool:
    """An on/off option is a bool: "no" (truthy) or 0.0 are refused, not read as Python truth."""
    if not isinstance(value, (bool, np.bool_)):
        raise ValueError(f"{name} must be True or False, got {type(value).__name__} {short_repr(value)}")
    return bool(value)


def check_count(value: Any, name: str) -> int | None:
    """A positive whole number or None (numpy integers are integers; 1.7 and True are refused)."""
    if value is None:
        return None
    if not is_integer(value) or value < 1:
        raise ValueError(f"{name} must be a positive integer or None, got {short_repr(value)}")
    return int(value)


def check_seed(seed: Any) -> int:
    """A seed is a non-negative integer: 1.5 or "3" are refused, not rounded."""
    if not is_integer(seed) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer or None, got {type(seed).__name__} {short_repr(seed)}")
    return int(seed)


class MaskedActionSpace(ActionSpace):
    """The action space of one seat, whose ``sample()`` (without a mask)
    draws among the actions legal *now* when that seat is to act, from the
    space's own generator (``seed`` it for reproducible draws); otherwise,
    or with an explicit ``mask``/``probability``, it is a plain ``Discrete``.
    So the generic loops of PettingZoo's and Gymnasium's checkers, which
    sample ``action_space.sample()``, play real hands instead of ending them
    with an illegal action; ``contains`` is unchanged (every action id)."""

    def __init__(self, n: int, legal_mask: Any) -> None:
        super().__init__(n)
        #: a callable returning the seat's legal mask now, or None when it is not to act
        self._legal_mask = legal_mask

    def sample(self, mask: Any = None, probability: Any = None) -> np.int64:
        if mask is None and probability is None:
            legal = self._legal_mask()
            if legal is not None:
                actions = np.flatnonzero(legal)
                if actions.size:
                    return np.int64(actions[self.np_random.integers(actions.size)])
        return super().sample(mask=mask, probability=probability)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, spaces.Discrete) and self.n == other.n and self.start == other.start

    def __hash__(self) -> int:
        return hash((int(self.n), int(self.start)))


class _SeatMask:
    """``MaskedActionSpace``'s source for an AEC seat: its mask when it is to act."""

    def __init__(self, raw: raw_env, agent: str) -> None:
        self.raw, self.agent = raw, agent

    def __call__(self) -> np.ndarray | None:
        raw = self.raw
        state = raw.state_
        if state is None or not raw.agents or raw.agent_selection != self.agent or state.hand_over:
            return None
        if raw.terminations[self.agent] or raw.truncations[self.agent]:
            return None
        return state.legal_mask()


def parallel_env(**kwargs: Any) -> Any:
    """The game as a PettingZoo ``ParallelEnv`` through PettingZoo's
    turn-based conversion (``turn_based_aec_to_parallel_wrapper``): each ``step``
    applies the action of the one agent to act (``infos[a]["active_agent"]``
    names it; the other agents' actions are ignored), and every agent
    observes after each step. Same keyword arguments as :func:`env`.

    Changes to the conversion: the infos it returns are the caller's own (it
    handed out the AEC env's dicts, which the next step rewrote) and each
    agent's is handed out once (a hand's summary came again at every step
    until that agent acted); the reset infos name ``active_agent`` too; a
    ``step`` before ``reset`` or after the game raises as the AEC env does (an
    AttributeError; four empty dicts, not five values)."""
    from pettingzoo.utils.conversions import turn_based_aec_to_parallel_wrapper

    class TurnBasedParallel(turn_based_aec_to_parallel_wrapper):  # type: ignore[misc]
        def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[dict, dict]:
            observations, infos = super().reset(seed=seed, options=options)
            # as every step's infos say: the reset's did not name the first agent to act
            first = self.aec_env.agent_selection
            return observations, {agent: {**info, "active_agent": first} for agent, info in infos.items()}

        def step(self, actions: dict[str, Any]) -> tuple[dict, dict, dict, dict, dict]:
            if getattr(self, "agents", None) is None:  # an AttributeError on 'agents' before
                raise RuntimeError("call reset() before step()")
            if not self.agents:
                raise game_over_error("step()")
            *returned, infos = super().step(actions)
            # every agent has now seen its info: a hand's summary (match=True) stays in the AEC env until
            # that agent acts, and was handed out again at every step until then
            raw_infos = self.aec_env.unwrapped.infos
            for agent in raw_infos:
                raw_infos[agent] = {}
            return (*returned, {agent: dict(info) for agent, info in infos.items()})  # type: ignore[return-value]

    return TurnBasedParallel(env(**kwargs))


def env(**kwargs: Any) -> AECEnv:
    """The environment with PettingZoo's standard wrappers for classic games
    (TerminateIllegalWrapper: an illegal action ends the game with -1 for the
    offender; AssertOutOfBoundsWrapper; OrderEnforcingWrapper)."""
    base = raw_env(**kwargs)
    wrapped: AECEnv = _TerminateIllegal(base, illegal_reward=-1)
    wrapped = _AssertOutOfBounds(wrapped)
    return _OrderEnforcing(wrapped)


class raw_env(GameOverLast, AECEnv):
    metadata: ClassVar[dict[str, Any]] = {
        "name": "burako_v0",
        "render_modes": ["ansi", "human", "rgb_array"],
        "is_parallelizable": False,
        "render_fps": 1,
    }

    def __init__(
        self,
        num_players: int = 2,
        rules: str | Rules | dict[str, Any] = "burako",
        rule_overrides: dict[str, Any] | None = None,
        render_mode: str | None = None,
        reward: str = "score",
        reward_scale: float = 1000.0,
        match: bool = False,
        max_turns: int | None = None,
        engine: str = "fast",
        max_cycles: int | None = None,
    ) -> None:
        self._mirrors: list[AECEnv] = []  # wrappers that receive the hot attributes (_mirrored_attribute)
        super().__init__()
        self.rules = rules_for_env(rules, rule_overrides, max_turns, num_players)
        check_reward(reward, reward_scale)
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(
                f"render_mode must be one of {self.metadata['render_modes']} or None, got {short_repr(render_mode)}"
            )
        if engine not in ENGINES:
            raise ValueError(f"engine must be one of {ENGINES}, got {short_repr(engine)}")
        self.engine = engine
        self.max_cycles = check_count(max_cycles, "max_cycles")
        self._decisions = 0
        self.num_players = int(num_players)
        self.render_mode = render_mode
        self.reward_mode = reward
        self.reward_scale = float(reward_scale)
        self.match = check_flag(match, "match")
        self.possible_agents = [f"player_{i}" for i in range(self.num_players)]
        self.agent_name_mapping = {a: i for i, a in enumerate(self.possible_agents)}
        self.observer = Observer(self.num_players, self.rules)
        low, high = observation_bounds(self.num_players, self.rules)
        obs_space = spaces.Dict(
            {
                "observation": spaces.Box(low=low, high=high, dtype=np.float32),
                "action_mask": spaces.Box(low=0, high=1, shape=(A.NUM_ACTIONS,), dtype=np.int8),
            }
        )
        self.observation_spaces = dict.fromkeys(self.possible_agents, obs_space)
        self.action_spaces = {a: MaskedActionSpace(A.NUM_ACTIONS, _SeatMask(self, a)) for a in self.possible_agents}
        self.state_: GameState | FastGame | None = None
        self.np_random, _ = seeding.np_random(None)

    # ------------------------------------------------------------------ spaces
    def observation_space(self, agent: str) -> spaces.Space:
        return self.observation_spaces[agent]

    def action_space(self, agent: str) -> spaces.Space:
        return self.action_spaces[agent]

    # ------------------------------------------------------------------ API
    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> None:
        if seed is not None:
            self.np_random, _ = seeding.np_random(check_seed(seed))
        game_class = FastGame if self.engine == "fast" else GameState
        self.state_ = game_class.new_game(self.np_random, self.rules, self.num_players)
        self.agents = self.possible_agents[:]
        self.rewards = dict.fromkeys(self.agents, 0.0)
        self._cumulative_rewards = dict.fromkeys(self.agents, 0.0)
        self.terminations = dict.fromkeys(self.agents, False)
        self.truncations = dict.fromkeys(self.agents, False)
        self.infos = {a: {} for a in self.agents}
        self.agent_selection = self.possible_agents[self.state_.current]
        self._decisions = 0

    @property
    def game(self) -> GameState:
        """The readable engine state (call ``reset`` first); with the fast
        engine, a fresh copy of the current state at each access."""
        state = self.state_
        if state is None:
            raise RuntimeError("call reset() before using the environment")
        if isinstance(state, FastGame):
            return state.to_game_state()
        return state

    def _playing(self) -> GameState | FastGame:
        if self.state_ is None:
            raise RuntimeError("call reset() before using the environment")
        return self.state_

    def observe(self, agent: str) -> dict[str, np.ndarray]:
        state = self._playing()
        player = self.agent_name_mapping[agent]
        obs = state.encode(player) if isinstance(state, FastGame) else self.observer.encode(state, player)
        # max_cycles truncates agents mid-hand: a done agent has no legal action
        done = self.terminations.get(agent, True) or self.truncations.get(agent, True)
        if player == state.current and not state.hand_over and agent in self.agents and not done:
            mask = state.legal_mask().copy()
        else:
            mask = np.zeros(A.NUM_ACTIONS, dtype=np.int8)
        return {"observation": obs, "action_mask": mask}

    def step(self, action: int) -> None:
        state = self._playing()
        agent = self.agent_selection
        terminated = self.terminations.get(agent)
        if terminated is None:
            raise game_over_error(f"step({short_repr(action)})")
        if terminated or self.truncations[agent]:
            self._was_dead_step(action)
            return
        try:
            state.apply(action)
        except IllegalActionError as exc:  # refused: nothing changes, the last hand's summary included
            raise ValueError(f"{agent}: {exc}") from exc
        infos = self.infos
        if infos[agent]:
            # the last hand's summary has been seen (match=True): it does not stay for the next hand
            infos[agent] = {}
        rewards = self.rewards
        self._cumulative_rewards[agent] = 0.0
        for a in rewards:
            rewards[a] = 0.0
        self._decisions += 1
        hand_ended = state.hand_over
        if hand_ended:
            self._finish_hand(state)
        # also when a hand of a match ended on the last decision and the next one was dealt (it played one more)
        if self.max_cycles is not None and self._decisions >= self.max_cycles and self._episode_goes_on():
            self._cut_short(hand_ended)
        self.agent_selection = self.possible_agents[state.current]
        self._accumulate_rewards()
        if self.render_mode == "human":
            self.render()

    def _accumulate_rewards(self) -> None:
        """AECEnv._accumulate_rewards, reading each attribute once."""
        cumulative = self._cumulative_rewards
        for agent, reward in self.rewards.items():
            cumulative[agent] += reward

    def _finish_hand(self, state: GameState | FastGame) -> None:
        breakdown = None if state.hand_scores is None else [s.to_dict() for s in state.hand_scores]
        side_rewards = self._side_rewards(state)
        for a in self.agents:
            player = self.agent_name_mapping[a]
            self.rewards[a] = side_rewards[state.side_of[player]]
            self.infos[a] = {
                "hand_over": True,
                "end_reason": state.end_reason,
                "void": state.end_reason == VOID,
                "truncated": state.end_reason == TRUNCATED,
                "side": state.side_of[player],
                "score_breakdown": breakdown,
                "match_scores": list(state.match_scores),
                "hand_number": state.hand_number,
                "match_over": state.match_over,
                "match_winner": state.match_winner,
            }
        if state.end_reason == TRUNCATED:
            self.truncations = dict.fromkeys(self.agents, True)
        elif not self.match or state.match_over:
            self.terminations = dict.fromkeys(self.agents, True)
        else:
            state.next_hand(self.np_random)

    def _episode_goes_on(self) -> bool:
        return not any(self.terminations.values()) and not any(self.truncations.values())

    def _cut_short(self, hand_ended: bool = False) -> None:
        """``max_cycles`` decisions made: the episode is truncated, the hand in play unscored. Every
        agent's info says ``max_cycles: True``; when a hand of the match ended on that decision, its
        summary stays (it was replaced, so the agents yet to act never saw the hand's result)."""
        self.truncations = dict.fromkeys(self.agents, True)
        cut = {"hand_over": False, "truncated": True, "end_reason": "max_cycles"}
        for a in self.agents:
            self.infos[a] = {**(self.infos[a] if hand_ended else cut), "max_cycles": True}

    def _side_rewards(self, state: GameState | FastGame) -> list[float]:
        return hand_rewards(state, self.reward_mode, self.reward_scale, self.match)

    def render(self) -> str | np.ndarray | None:
        """``ansi``: the table as text; ``human``: printed; ``rgb_array``: a
        picture of the table (every hand face up, a spectator's view) as an
        (height, width, 3) uint8 array (``burako_env.graphics``). Its width is
        fixed, its height follows the hands and melds, so frames of one episode
        differ in height: pad them to the tallest before a video writer that
        needs one size."""
        if self.render_mode is None:
            return None
        if self.render_mode == "rgb_array":
            from burako_env.graphics import table_image  # Pillow and fonts only when asked for

            return table_image(self.game)
        text = render_table(self.game)
        if self.render_mode == "human":
            print(text)
            return None
        return text

    def close(self) -> None:
        pass

    def describe_action(self, action: int) -> str:
        """Human-readable text of an action in the current state."""
        return self.game.describe(action)


for _name in _HOT_ATTRIBUTES:
    setattr(raw_env, _name, _mirrored_attribute(_name))
