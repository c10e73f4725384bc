"""Play one Rummy hand between agents (the duplicate evaluation of two agents
is :mod:`training.rummy_evaluate`, a layer above).

    result = play_rummy_hand([RummyHeuristic(), RandomAgent(seed=1)], "rummy", 2, deal_seed=7)
    result.hand_scores, result.winners, result.record

A hand is dealt by ``RummyState.new_game(np.random.default_rng(deal_seed),
rules, num_players)``; each agent is ``reset(seat, rules, num_players)``, then
asked ``act({"observation", "action_mask"})`` (the env's observation, nothing
hidden, E2) at each of its decisions. An agent that raises, exits, answers an
illegal action or overruns ``move_time_limit`` stops the hand with
:class:`agents.runner.AgentFault`, as in :func:`agents.runner.play_game`.
"""

from __future__ import annotations

import time
import traceback
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from agents.runner import AgentFault, MoveAlarm, MoveTimeout, fault_of_raise, plain_action
from burako_env.records import build_rummy_record
from burako_env.rummy.engine import Phase, RummyState
from burako_env.rummy.observation import encode
from burako_env.rummy.rules import RummyRules
from burako_env.safe_yaml import is_integer


@dataclass
class RummyHandResult:
    """One finished hand: per-seat totals (R10), the closer (None: blocked), the winners."""

    hand_scores: list[int]
    closer: int | None
    winners: list[int]
    turns: int
    num_actions: int
    record: dict[str, Any] | None = field(default=None, repr=False)


def play_rummy_hand(
    agents: Sequence[Any],
    rules: RummyRules | str = "rummy",
    num_players: int = 2,
    deal_seed: int = 0,
    *,
    record: bool = True,
    agent_names: Sequence[str] | None = None,
    meta: dict[str, Any] | None = None,
    move_time_limit: float | None = None,
) -> RummyHandResult:
    """Play one hand of deal ``deal_seed`` with ``agents[i]`` in seat ``i`` (see the module docstring).
    Faults are :func:`agents.runner.play_game`'s: an agent that raises or exits in ``reset`` or ``act``,
    answers an illegal action, or (``move_time_limit``, seconds) overruns the limit, with the same
    SIGALRM interruption (:class:`agents.runner.MoveAlarm`)."""
    if len(agents) != num_players:
        raise ValueError(f"play_rummy_hand: {len(agents)} agents for {num_players} seats")
    if deal_seed < 0:
        raise ValueError(f"play_rummy_hand: deal_seed must be >= 0, got {deal_seed}")
    state = RummyState.new_game(np.random.default_rng(deal_seed), rules, num_players)
    starter = state.starter
    names = [getattr(a, "name", type(a).__name__) for a in agents] if agent_names is None else list(agent_names)

    def fault(kind: str, seat: int, what: str, action: Any = None, exc: BaseException | None = None) -> AgentFault:
        where = f"at action {len(actions)} (turn {state.turns}) of deal {deal_seed}"
        cause = None if exc is None else f"{type(exc).__name__}: {exc}"
        return AgentFault(
            f"agent {names[seat]!r} in seat {seat} {what} {where}" + (f": {cause}" if cause else ""),
            kind=kind,
            agent=names[seat],
            seat=seat,
            side=seat,  # each for himself
            action=plain_action(action),
            step=len(actions),
            turn=state.turns,
            phase=state.phase.name,
            deal_seed=deal_seed,
            cause=cause,
            cause_traceback=None if exc is None else "".join(traceback.format_exception(exc)),
        )

    actions: list[int] = []
    for seat, agent in enumerate(agents):
        try:
            agent.reset(seat, state.rules, num_players)
        except (Exception, SystemExit) as exc:
            kind, what = fault_of_raise(exc, "reset()")
            raise fault(kind, seat, what, exc=exc) from exc
    alarm = MoveAlarm(move_time_limit)
    with alarm:
        while state.phase == Phase.PLAY:
            seat = state.current
            mask = state.legal_mask()
            started = time.perf_counter()
            try:
                alarm.arm()
                try:
                    action = agents[seat].act({"observation": encode(state, seat), "action_mask": mask})
                finally:
                    alarm.disarm()
            except MoveTimeout as exc:
                what = f"did not answer within the move time limit ({move_time_limit:g} s); it was interrupted"
                raise fault("timeout", seat, what) from exc
            except (Exception, SystemExit) as exc:
                kind, what = fault_of_raise(exc, "act()")
                raise fault(kind, seat, what, exc=exc) from exc
            took = time.perf_counter() - started
            if move_time_limit is not None and took > move_time_limit:
                what = f"took {took:.2f} s to answer (the limit is {move_time_limit:g} s)"
                raise fault("timeout", seat, what, action)
            legal = is_integer(action) and 0 <= action < len(mask) and bool(mask[int(action)])
            if not legal:
                raise fault("illegal", seat, f"answered the illegal action {action!r}", action)
            state.step(int(action))
            actions.append(int(action))
    hand_record = build_rummy_record(state, deal_seed, starter, names, actions, meta) if record else None
    return RummyHandResult(
        hand_scores=list(state.hand_scores or []),
        closer=state.closer,
        winners=state.hand_winners(),
        turns=state.turns,
        num_actions=len(actions),
        record=hand_record,
    )


# ---------------------------------------------------------------------- duplicate evaluation
