"""The Rummy ISMCTS agent (``rummy-ismcts``, agents/rummy_search.py): legal, forced moves at once,
time budget, seeds, and E2 (it only ever sees its observation; the hidden tiles are re-dealt)."""

from __future__ import annotations

import time

import numpy as np
import pytest

from agents.registry import make_agent
from agents.rummy_search import RummyISMCTS, seat_values, state_from_observation
from burako_env.rummy import actions as A
from burako_env.rummy.engine import Phase, RummyState
from burako_env.rummy.observation import encode
from burako_env.rummy.scenario import build_rummy_state
from burako_env.scenario import tiles


def observe(state: RummyState) -> dict[str, np.ndarray]:
    return {"observation": encode(state, state.current), "action_mask": state.legal_mask()}


def agent_for(state: RummyState, seed: int | None = 0, **options: object) -> RummyISMCTS:
    agent = RummyISMCTS(seed=seed, **options)
    agent.reset(state.current, state.rules, state.num_players)
    return agent


def random_states(count: int, seed: int) -> list[RummyState]:
    """States met in random play (2 to 4 players), some in the middle of a pending play."""
    rng = np.random.default_rng(seed)
    found: list[RummyState] = []
    while len(found) < count:
        players = int(rng.integers(2, 5))
        state = RummyState.new_game(rng, "rummy", players)
        for _ in range(int(rng.integers(0, 100))):
            if state.phase != Phase.PLAY:
                break
            legal = np.flatnonzero(state.legal_mask())
            state.step(int(rng.choice(legal)))
        if state.phase == Phase.PLAY and np.count_nonzero(state.legal_mask()) > 1:
            found.append(state)
    return found


def test_e2_state_from_observation_keeps_everything_observed() -> None:
    """E2: the rebuilt state shows the same observation and the same exact mask as the real one,
    and holds every tile once (E1)."""
    for state in random_states(8, seed=3):
        seat = state.current
        rebuilt = state_from_observation(encode(state, seat), seat, state.rules, state.num_players)
        assert np.array_equal(encode(rebuilt, seat), encode(state, seat))
        assert np.array_equal(rebuilt.legal_mask(), state.legal_mask())
        rebuilt.check_conservation()


def test_inconsistent_observation_is_a_clear_error() -> None:
    state = RummyState.new_game(np.random.default_rng(0), "rummy", 2)
    obs = encode(state, state.current).copy()
    obs[:53] += 2  # more copies of each kind than exist
    with pytest.raises(ValueError, match="more tiles"):
        state_from_observation(obs, state.current, state.rules, 2)


def test_always_a_legal_action_for_2_to_4_players() -> None:
    for i, state in enumerate(random_states(10, seed=11)):
        agent = agent_for(state, seed=i, simulations=6)
        action = agent.act(observe(state))
        assert state.legal_mask()[action], (i, action)
        assert agent.last_simulations == 6


def test_forced_move_is_returned_at_once() -> None:
    """Only END_TURN is legal (no first play of 30 in the hand, R5): no search, even with a huge budget."""
    state = build_rummy_state(hands={0: "R1 B5 K9", 1: "Y5 Y6"}, closing="B9", stock="Y2 Y3")
    assert np.flatnonzero(state.legal_mask()).tolist() == [A.END_TURN]
    agent = agent_for(state, simulations=10**9)
    start = time.perf_counter()
    assert agent.act(observe(state)) == A.END_TURN
    assert time.perf_counter() - start < 0.05
    assert agent.last_simulations == 0


def test_time_budget_within_20_percent() -> None:
    state = random_states(1, seed=5)[0]
    agent = agent_for(state, time_per_move=0.25)
    start = time.perf_counter()
    action = agent.act(observe(state))
    elapsed = time.perf_counter() - start
    assert state.legal_mask()[action]
    assert 0.25 <= elapsed <= 0.25 * 1.2, elapsed
    assert agent.last_simulations >= 1


def test_same_seed_same_decisions() -> None:
    for state in random_states(4, seed=8):
        first = agent_for(state, seed=42, simulations=8).act(observe(state))
        again = agent_for(state, seed=42, simulations=8).act(observe(state))
        assert first == again


def test_e2_hidden_tiles_swapped_same_decision() -> None:
    """E2: re-dealing the other hands and the stock (a different, consistent deal with the same
    observation) does not change the decision of a seeded agent: it never reads hidden tiles."""
    for i, state in enumerate(random_states(4, seed=21)):
        other = state.determinize(state.current, np.random.default_rng(100 + i))
        hidden = [p for p in range(state.num_players) if p != state.current]
        assert any(not np.array_equal(other.hands[p], state.hands[p]) for p in hidden) or other.stock != state.stock
        assert np.array_equal(encode(other, other.current), encode(state, state.current))
        a = agent_for(state, seed=i, simulations=8).act(observe(state))
        b = agent_for(other, seed=i, simulations=8).act(observe(other))
        assert a == b


def test_only_determinizations_are_simulated(monkeypatch: pytest.MonkeyPatch) -> None:
    """E2: each simulation runs on a fresh determinization of the rebuilt state, never on another object."""
    state = random_states(1, seed=2)[0]
    agent = agent_for(state, simulations=5)
    made: list[int] = []
    seen: list[int] = []
    determinize = RummyState.determinize

    def counted(self: RummyState, observer: int, rng: np.random.Generator) -> RummyState:
        assert observer == state.current
        out = determinize(self, observer, rng)
        made.append(id(out))
        return out

    simulate = agent._simulate
    monkeypatch.setattr(RummyState, "determinize", counted)
    monkeypatch.setattr(agent, "_simulate", lambda root, s, *rest: (seen.append(id(s)), simulate(root, s, *rest)))
    agent.act(observe(state))
    assert len(made) == 5 and seen == made


def test_r8_closes_when_it_can() -> None:
    """R8: with the closing play legal, the search finds it (a closed hand is worth +1) and closes."""
    state = build_rummy_state(
        hands={0: "R5 R6 R7 K1 K2", 1: "Y5 Y6 Y7 Y9"},
        table=["B1 B2 B3"],
        closing="K3",
        first_play={0: True, 1: True},
        stock="Y2 Y3",
    )
    assert state.legal_mask()[A.ADD_CLOSING]
    agent = agent_for(state, seed=0, simulations=24)
    for _ in range(8):  # the closing play is 7 decisions
        if state.phase != Phase.PLAY or state.current != 0:
            break
        state.step(agent.act(observe(state)))
    assert state.closer == 0 and state.hand_scores == [0, 27]


def test_r10_values_of_a_finished_hand() -> None:
    """R10: a finished hand is valued by its result: the closer +1, the others share -1."""
    state = build_rummy_state(
        num_players=3,
        hands={0: "R5 R6 R7", 1: "Y5", 2: "Y9"},
        closing="R8",
        first_play={0: True},
        stock="",
    )
    for action in (A.ADD_CLOSING, *(A.ADD_TILE + kind for kind in tiles("R5 R6 R7")), A.COMMIT):
        state.step(action)
    assert state.closer == 0
    assert seat_values(state, 100.0) == [1.0, -0.5, -0.5]


def test_options_and_registry() -> None:
    agent = make_agent("rummy-ismcts", seed=1, simulations=3, exploration=1.0)
    assert isinstance(agent, RummyISMCTS) and agent.settings.simulations == 3
    with pytest.raises(TypeError, match="root_actions"):
        RummyISMCTS(root_actions=2)
    with pytest.raises(ValueError, match="simulations"):
        RummyISMCTS(simulations=0)


def test_prior_choice_kept_unless_beaten_by_margin() -> None:
    """With an unreachable margin the search plays the rummy-heuristic's choice (its root prior)."""
    from agents.rummy_heuristic import RummyHeuristic

    for state in random_states(5, seed=13):
        heuristic = RummyHeuristic()
        heuristic.reset(state.current, state.rules, state.num_players)
        agent = agent_for(state, simulations=3, margin=1e9)
        assert agent.act(observe(state)) == heuristic.act(observe(state))


def test_rummy_agents_read_rules_given_as_data_not_only_as_objects() -> None:
    """R5: rules passed to reset as a mapping (or a preset name) were ignored, so the agents planned
    first plays for the default 30 points whatever the table's minimum."""
    from agents.rummy_heuristic import RummyHeuristic
    from agents.rummy_search import RummyISMCTS

    for agent in (RummyHeuristic(seed=1), RummyISMCTS(seed=1)):
        agent.reset(0, {"name": "high", "first_play_minimum": 50}, 2)
        assert agent.rules.first_play_minimum == 50
        agent.reset(0, "rummy", 2)
        assert agent.rules.first_play_minimum == 30
