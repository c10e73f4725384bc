"""Play one hand between agents: the loop behind evaluations, tournaments and records.

    result = play_game([RandomAgent(seed=1), RandomAgent(seed=2)], "burako", 2, deal_seed=7)
    result.side_totals, result.winner, result.record

One game is one hand (an episode, as in the env's default), dealt by
``GameState.new_game(np.random.default_rng(deal_seed), rules, num_players)``,
so a deal seed names the same tiles for every seating. Seat ``i`` is played by
``agents[i]``; each agent is ``reset(seat, rules, num_players)`` first, then
asked ``act(observation, view)`` at each of its decisions (the protocol of
``agents/base.py``).

Why this loop does not go through the PettingZoo env: it talks to the engine
directly so that it can skip work nobody asks for. The observation dict is a
:class:`LazyObservation` (the action mask is ready; the observation vector is
encoded on first access) and the view a :class:`LazySeatView` (the hidden
information is resampled on first access), so a random agent pays for
neither, while an agent that reads them gets exactly what the env and
:class:`~agents.base.SeatView` would give. Both expire when ``act`` returns:
they describe one decision, never a later state.

Each seat's view has its own generator, ``burako_env.views.view_generator(view_seed,
seat)`` (``view_seed`` defaults to the deal seed; a stream apart from the deal's), so
resampling is reproducible and does not depend on what the other seats did with theirs.

An agent that raises, calls ``sys.exit`` (``SystemExit``), returns something
that is not a legal action, or (with ``move_time_limit``) takes longer than
that to answer, stops the game with :class:`AgentFault`, which carries the
agent, seat, action and step (a tournament turns it into a forfeit). Only
``KeyboardInterrupt`` passes through: it is the user's, not the agent's.
"""

from __future__ import annotations

import signal
import threading
import time
import traceback
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from burako_env import actions as A
from burako_env.engine import GameState
from burako_env.observation import Observer
from burako_env.outcomes import hand_winner
from burako_env.records import build_record
from burako_env.rules import Rules, load_rules
from burako_env.views import LazySeatView, view_generator


class AgentFault(RuntimeError):
    """An agent broke the protocol: it raised (``kind="exception"``), called
    ``sys.exit`` (``kind="exit"``), returned an action that is not legal now
    (``kind="illegal"``) or answered after the move time limit
    (``kind="timeout"``). A tournament adds ``kind="crash"`` for an agent
    whose worker process died. The state was not changed by the faulty answer.

    Every detail is an attribute so a tournament can record a forfeit without
    parsing the message; all have defaults so the exception pickles across
    worker processes (``BaseException`` pickles ``args`` plus ``__dict__``).
    """

    def __init__(
        self,
        message: str = "",
        *,
        kind: str = "",
        agent: str = "",
        seat: int = -1,
        side: int = -1,
        action: Any = None,
        step: int = -1,
        turn: int = -1,
        phase: str = "",
        deal_seed: int | None = None,
        cause: str | None = None,
        cause_traceback: str | None = None,
    ) -> None:
        super().__init__(message)
        self.kind = kind
        self.agent = agent
        self.seat = seat
        self.side = side
        self.action = action
        self.step = step
        self.turn = turn
        self.phase = phase
        self.deal_seed = deal_seed
        self.cause = cause
        self.cause_traceback = cause_traceback


class LazyObservation(Mapping[str, np.ndarray]):
    """The env's observation dict (``observation``, ``action_mask``) with the
    observation vector encoded only when first read. A read-only Mapping, so
    ``obs["observation"]``, ``dict(obs)`` and iteration all behave like the
    env's dict."""

    __slots__ = ("_mask", "_obs", "_observer", "_player", "_state")
    KEYS = ("observation", "action_mask")

    def __init__(self, observer: Observer, state: GameState, player: int, mask: np.ndarray) -> None:
        self._observer = observer
        self._state: GameState | None = state
        self._player = player
        self._mask = mask
        self._obs: np.ndarray | None = None

    def __getitem__(self, key: str) -> np.ndarray:
        if key == "action_mask":
            return self._mask
        if key == "observation":
            if self._obs is None:
                if self._state is None:
                    raise RuntimeError("this observation expired: read it during act(), not after")
                self._obs = self._observer.encode(self._state, self._player)
            return self._obs
        raise KeyError(key)

    def __iter__(self) -> Iterator[str]:
        return iter(self.KEYS)

    def __len__(self) -> int:
        return 2

    def expire(self) -> None:
        """Forget the live state (called when ``act`` returns)."""
        self._state = None


@dataclass
class GameResult:
    """The outcome of one hand. Scores are per side (``side_of[seat]``)."""

    deal_seed: int
    num_players: int
    agent_names: list[str]
    side_of: tuple[int, ...]
    end_reason: str
    #: per side ``SideScore.to_dict()``; None for a void or truncated hand
    hand_scores: list[dict[str, int]] | None
    #: per side hand total; None for a void or truncated hand
    side_totals: list[int] | None
    #: ``state.side_rewards()`` (zero-sum; all 0 without a score)
    side_rewards: list[float]
    #: side with the unique highest total, or None (tie, void, truncated)
    winner: int | None
    turns: int
    num_actions: int
    #: the JSON record (burako_env.records), or None with ``record=False``
    record: dict[str, Any] | None
    #: the final engine state (not pickled into results of worker processes by the evaluation)
    state: GameState = field(repr=False, compare=False)


def _name_of(agent: Any) -> str:
    return str(getattr(agent, "name", type(agent).__name__))


def play_game(
    agents: Sequence[Any],
    rules: Rules | str | Mapping[str, Any],
    num_players: int,
    deal_seed: int,
    *,
    record: bool = True,
    agent_names: Sequence[str] | None = None,
    view_seed: int | None = None,
    meta: Mapping[str, Any] | None = None,
    move_time_limit: float | None = None,
) -> GameResult:
    """Play one hand of deal ``deal_seed`` with ``agents[i]`` in seat ``i``.

    ``agent_names`` label the seats in the result and record (default: each
    agent's ``name``). ``record=False`` skips the descriptions and the record
    (faster). ``meta`` is stored in the record as is. Raises
    :class:`AgentFault` if an agent raises, exits, answers an illegal action,
    or takes more than ``move_time_limit`` seconds (interrupted then with
    SIGALRM in the main thread on Unix, else checked when it answers; code
    stuck in C needs a watchdog outside, as the tournament's process pool has).
    """
    rules = load_rules(rules)
    rules.check_players(num_players)
    if len(agents) != num_players:
        raise ValueError(f"play_game: {len(agents)} agents for {num_players} seats")
    seen: dict[int, int] = {}
    for seat, agent in enumerate(agents):
        if id(agent) in seen:
            raise ValueError(
                f"play_game: the same agent object sits in seats {seen[id(agent)]} and {seat}; "
                "give each seat its own instance (reset() binds an agent to one seat)"
            )
        seen[id(agent)] = seat
    names = [_name_of(a) for a in agents] if agent_names is None else [str(n) for n in agent_names]
    if len(names) != num_players:
        raise ValueError(f"play_game: {len(names)} agent names for {num_players} seats")
    if deal_seed < 0:
        raise ValueError(f"play_game: deal_seed must be >= 0, got {deal_seed}")
    vseed = deal_seed if view_seed is None else view_seed
    view_rngs = [view_generator(vseed, seat) for seat in range(num_players)]

    state = GameState.new_game(np.random.default_rng(deal_seed), rules, num_players)
    mano = state.mano
    observer = Observer(num_players, rules)
    for seat, agent in enumerate(agents):
        try:
            agent.reset(seat, rules, num_players)
        except (Exception, SystemExit) as exc:
            kind, what = fault_of_raise(exc, "reset()")
            raise _fault(kind, names, state, seat, None, 0, deal_seed, exc, what) from exc

    actions: list[int] = []
    descriptions: list[str] = []
    alarm = MoveAlarm(move_time_limit)
    with alarm:
        while not state.hand_over:
            seat = state.current
            mask = state.legal_mask()
            obs = LazyObservation(observer, state, seat, mask.copy())
            view = LazySeatView(state, seat, view_rngs[seat])
            started = time.perf_counter() if move_time_limit is not None else 0.0
            try:
                alarm.arm()
                try:
                    answer = agents[seat].act(obs, view)
                finally:
                    alarm.disarm()
                    obs.expire()
                    view.expire()
            except MoveTimeout as exc:
                raise _fault(
                    "timeout", names, state, seat, None, len(actions), deal_seed,
                    what=f"did not answer within the move time limit ({move_time_limit:g} s); it was interrupted",
                ) from exc  # fmt: skip
            except (Exception, SystemExit) as exc:
                kind, what = fault_of_raise(exc, "act()")
                raise _fault(kind, names, state, seat, None, len(actions), deal_seed, exc, what) from exc
            if move_time_limit is not None:
                took = time.perf_counter() - started
                if took > move_time_limit:
                    raise _fault(
                        "timeout", names, state, seat, answer, len(actions), deal_seed,
                        what=f"took {took:.2f} s to answer (the limit is {move_time_limit:g} s)",
                    )  # fmt: skip
            if isinstance(answer, (int, np.integer)) and not isinstance(answer, (bool, np.bool_)):
                action = int(answer)
                legal = 0 <= action < A.NUM_ACTIONS and bool(mask[action])
            else:
                action, legal = answer, False
            if not legal:
                raise _fault("illegal", names, state, seat, answer, len(actions), deal_seed)
            if record:
                descriptions.append(state.describe(action))
            state.apply(action)
            actions.append(action)

    result_record = None
    if record:
        result_record = build_record(state, deal_seed, mano, names, actions, descriptions, meta)
    return GameResult(
        deal_seed=deal_seed,
        num_players=num_players,
        agent_names=names,
        side_of=state.side_of,
        end_reason=str(state.end_reason),
        hand_scores=None if state.hand_scores is None else [s.to_dict() for s in state.hand_scores],
        side_totals=None if state.hand_scores is None else [s.total for s in state.hand_scores],
        side_rewards=state.side_rewards(),
        winner=hand_winner(state),
        turns=state.turn,
        num_actions=len(actions),
        record=result_record,
        state=state,
    )


class MoveTimeout(BaseException):
    """Raised inside an agent's ``act`` when the move time limit passes (a
    BaseException, so that an agent's ``except Exception`` cannot swallow it)."""


class MoveAlarm:
    """Interrupts an agent that overruns the move time limit, with SIGALRM
    (Unix, main thread only; elsewhere the limit is checked when the agent
    answers). Code stuck inside C without returning to Python is not
    interrupted: the tournament's process pool stops such a worker."""

    def __init__(self, limit: float | None) -> None:
        self.limit = limit
        self.enabled = (
            limit is not None and hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()
        )
        self.previous: Any = None

    @staticmethod
    def _ring(signum: int, frame: Any) -> None:
        raise MoveTimeout()

    def __enter__(self) -> MoveAlarm:
        if self.enabled:
            self.previous = signal.signal(signal.SIGALRM, self._ring)
        return self

    def arm(self) -> None:
        if self.enabled:
            signal.setitimer(signal.ITIMER_REAL, self.limit)

    def disarm(self) -> None:
        if self.enabled:
            signal.setitimer(signal.ITIMER_REAL, 0)

    def __exit__(self, *exc: object) -> None:
        if self.enabled:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, self.previous)


def fault_of_raise(exc: BaseException, where: str) -> tuple[str, str]:
    """The fault kind and wording of an exception raised in an agent's method."""
    if isinstance(exc, SystemExit):
        return "exit", f"called sys.exit({exc.code!r}) in {where}"
    return "exception", f"raised in {where}"


def _fault(
    kind: str,
    names: list[str],
    state: GameState,
    seat: int,
    action: Any,
    step: int,
    deal_seed: int,
    exc: BaseException | None = None,
    what: str = "",
) -> AgentFault:
    """Build the :class:`AgentFault` for a seat, with a message that says it all."""
    where = f"at action {step} (turn {state.turn}, phase {state.phase.name}) of deal {deal_seed}"
    who = f"agent {names[seat]!r} in seat {seat}"
    if kind in ("exception", "exit"):
        assert exc is not None
        message = f"{who} {what} {where}: {type(exc).__name__}: {exc}"
    elif kind == "timeout":
        message = f"{who} {what} {where}; forfeit"
    else:
        if isinstance(action, (int, np.integer)) and not isinstance(action, (bool, np.bool_)):
            if 0 <= int(action) < A.NUM_ACTIONS:
                text = f"action {int(action)} ({state.describe(int(action))}) is not legal"
            else:
                text = f"action {int(action)} is out of range 0..{A.NUM_ACTIONS - 1}"
        else:
            text = f"returned {type(action).__name__} {action!r}, not an action (an int)"
        legal = state.legal_actions()
        message = f"{who} played an illegal action {where}: {text}; {len(legal)} legal actions"
    return AgentFault(
        message,
        kind=kind,
        agent=names[seat],
        seat=seat,
        side=state.side_of[seat],
        action=plain_action(action),
        step=step,
        turn=state.turn,
        phase=state.phase.name,
        deal_seed=deal_seed,
        cause=None if exc is None else f"{type(exc).__name__}: {exc}",
        cause_traceback=None if exc is None else "".join(traceback.format_exception(exc)),
    )


def plain_action(action: Any) -> int | str | None:
    """The faulty answer as plain data (an int, or its repr), so the fault pickles."""
    if action is None:
        return None
    if isinstance(action, (int, np.integer)) and not isinstance(action, (bool, np.bool_)):
        return int(action)
    return repr(action)
