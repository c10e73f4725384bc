"""Play one Rummy hand between agents (the duplicate evaluation of two agents
is :mod:`training.rummy_evaluate`, a layer above).

    result = play_rummy_hand([RummyHeuristic(), RandomAgent(seed=1)], "rummy", 2, deal_seed=7)
    result.hand_scores, result.winners, result.record

A hand is dealt by ``RummyState.new_game(np.random.default_rng(deal_seed),
rules, num_players)``; each agent is ``reset(seat, rules, num_players)``, then
asked ``act({"observation", "action_mask"})`` (the env's observation, nothing
hidden, E2) at each of its decisions. An agent that raises or answers an
illegal action stops the hand with :class:`agents.runner.AgentFault`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from agents.runner import AgentFault
from burako_env.records import build_rummy_record
from burako_env.rummy.engine import Phase, RummyState
from burako_env.rummy.observation import encode
from burako_env.rummy.rules import RummyRules


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
) -> RummyHandResult:
    """Play one hand of deal ``deal_seed`` with ``agents[i]`` in seat ``i`` (see the module docstring)."""
    if len(agents) != num_players:
        raise ValueError(f"play_rummy_hand: {len(agents)} agents for {num_players} seats")
    if deal_seed < 0:
        raise ValueError(f"play_rummy_hand: deal_seed must be >= 0, got {deal_seed}")
    state = RummyState.new_game(np.random.default_rng(deal_seed), rules, num_players)
    starter = state.starter
    names = [getattr(a, "name", type(a).__name__) for a in agents] if agent_names is None else list(agent_names)
    for seat, agent in enumerate(agents):
        agent.reset(seat, state.rules, num_players)
    actions: list[int] = []
    while state.phase == Phase.PLAY:
        seat = state.current
        mask = state.legal_mask()
        try:
            action = agents[seat].act({"observation": encode(state, seat), "action_mask": mask})
        except (Exception, SystemExit) as exc:
            raise AgentFault(
                f"agent {names[seat]!r} in seat {seat} raised {type(exc).__name__}: {exc}",
                kind="exception",
                agent=names[seat],
                seat=seat,
                step=len(actions),
                turn=state.turns,
                deal_seed=deal_seed,
            ) from exc
        if isinstance(action, bool) or not isinstance(action, (int, np.integer)) or not 0 <= action < len(mask):
            legal = False
        else:
            legal = bool(mask[int(action)])
        if not legal:
            raise AgentFault(
                f"agent {names[seat]!r} in seat {seat} answered the illegal action {action!r}",
                kind="illegal",
                agent=names[seat],
                seat=seat,
                action=action,
                step=len(actions),
                turn=state.turns,
                deal_seed=deal_seed,
            )
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
