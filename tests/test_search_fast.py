"""Search on the compiled core (issue 16): ``FastGame.determinize`` (E1, E2)
and the search agents (a legal move, a forced move at once, the time budget)."""

from __future__ import annotations

import numpy as np
import pytest

from burako_env import fast as F
from burako_env.engine import GameState, Phase
from burako_env.fast import KNOWN, NK, FastGame
from burako_env.observation import Observer
from burako_env.rules import load_rules


def _random_states(seed: int, rules: str, num_players: int, every: int) -> list[FastGame]:
    """Every ``every``-th state of one hand played by uniform random moves."""
    game = FastGame.new_game(np.random.default_rng(seed), rules, num_players)
    rng = np.random.default_rng(seed + 1)
    out: list[FastGame] = []
    step = 0
    while not game.hand_over:
        if step % every == 0 or game.phase == Phase.PRIVILEGE:
            out.append(game.clone())
        game.apply(int(rng.choice(np.flatnonzero(game.legal_mask()))))
        step += 1
    return out


def _tile_counts(game: FastGame) -> np.ndarray:
    return game.to_game_state().tile_counts()


@pytest.mark.parametrize(("rules", "num_players"), [("burako", 2), ("burako", 4), ("burako_casual", 3)])
def test_e2_fast_determinize_same_draws_as_engine(rules: str, num_players: int) -> None:
    """E2/E1: from the same generator state, ``FastGame.determinize`` gives
    exactly ``GameState.determinize``'s state (so the same distribution), the
    observer's observation and mask do not change, the tiles are conserved,
    and hidden parts do change."""
    full = load_rules(rules).full_counts()
    observer = Observer(num_players, load_rules(rules))
    checked = changed = 0
    for seed in (1, 2):
        for game in _random_states(seed, rules, num_players, every=12):
            state = game.to_game_state()
            assert FastGame.from_game_state(state).to_dict() == game.to_dict()
            for player in range(num_players):
                fast = game.determinize(player, np.random.default_rng(checked))
                slow = state.determinize(player, np.random.default_rng(checked))
                assert fast.to_dict() == slow.to_dict()
                assert np.array_equal(fast.encode(player), game.encode(player))
                assert np.array_equal(fast.encode(player), observer.encode(slow, player))
                if player == game.current:
                    assert np.array_equal(fast.legal_mask(), game.legal_mask())
                else:
                    assert np.array_equal(fast.legal_mask(), slow.legal_mask().astype(np.int8))
                assert np.array_equal(_tile_counts(fast), full)
                changed += fast.to_dict()["stock"] != game.to_dict()["stock"]
                checked += 1
    assert checked >= 40 and changed >= 0.9 * checked


def test_e2_fast_determinize_distribution_matches_engine() -> None:
    """E2, statistically: with independent generators, the opponent's
    resampled hand has the same per-kind distribution in both engines (a
    chi-square test of homogeneity on 53 kinds, 2,000 samples each), and
    the known tiles (taken with the pile) are always in it."""
    chi2 = pytest.importorskip("scipy.stats").chi2
    rng = np.random.default_rng(7)
    game = FastGame.new_game(np.random.default_rng(7), "burako", 2)
    # play until the opponent (seat 1) holds some tiles known from a pile take
    while not (game.current == 0 and game.phase == Phase.DRAW and game.st[KNOWN + NK : KNOWN + 2 * NK].sum() > 0):
        mask = game.legal_mask()
        take = 1 if mask[1] else None  # TAKE_PILE whenever legal, so tiles become known
        game.apply(take if take is not None else int(rng.choice(np.flatnonzero(mask))))
        if game.hand_over:
            pytest.fail("the hand ended before a pile take")
    state = game.to_game_state()
    known = state.known[1].astype(np.int64)
    samples = 2000
    fast_counts = np.zeros(53, dtype=np.int64)
    slow_counts = np.zeros(53, dtype=np.int64)
    fast_rng, slow_rng = np.random.default_rng(11), np.random.default_rng(12)
    for _ in range(samples):
        hand = game.determinize(0, fast_rng).to_dict()["hands"][1]
        assert np.all(np.asarray(hand) >= known)
        fast_counts += hand
        slow_counts += state.determinize(0, slow_rng).hands[1]
    fast_counts -= samples * known
    slow_counts -= samples * known
    used = (fast_counts + slow_counts) > 0
    table = np.stack([fast_counts[used], slow_counts[used]]).astype(float)
    expected = table.sum(axis=0) * table.sum(axis=1, keepdims=True) / table.sum()
    statistic = float(((table - expected) ** 2 / expected).sum())
    assert statistic < chi2.ppf(0.999, int(used.sum()) - 1), statistic


def test_fast_determinize_rejects_a_bad_seat() -> None:
    game = FastGame.new_game(np.random.default_rng(0))
    before = game.to_dict()
    with pytest.raises(ValueError, match="not a seat"):
        game.determinize(2, np.random.default_rng(0))
    assert game.to_dict() == before


def test_from_game_state_round_trips_a_finished_hand() -> None:
    """Scores, end reason and closer come back too (the search's leaves)."""
    game = FastGame.new_game(np.random.default_rng(3))
    rng = np.random.default_rng(4)
    while not game.hand_over:
        game.apply(int(rng.choice(np.flatnonzero(game.legal_mask()))))
    state: GameState = game.to_game_state()
    back = FastGame.from_game_state(state)
    assert back.to_dict() == game.to_dict()
    assert back.side_rewards() == state.side_rewards()


# --------------------------------------------------------------------------- the search agents


def _policy_states(seed: int, rules: str, num_players: int) -> list[FastGame]:
    """Every state of one hand played by the compiled rollout policy (melds
    and canastas, unlike random play)."""
    from agents.fast_search import best_actions, eval_tables

    game = FastGame.new_game(np.random.default_rng(seed), rules, num_players)
    E = eval_tables(game.tables.rules, num_players)
    buf = np.zeros((F.SCRATCH_DEPTH, F.SCRATCH_WIDTH), dtype=np.int32)
    mask = np.zeros(F.NUM_ACTIONS, dtype=np.int8)
    scores = np.zeros(F.NUM_ACTIONS)
    out = np.zeros(1, dtype=np.int64)
    states = [game.clone()]
    while not game.hand_over:
        _, written = best_actions(game.st, game.args, E, buf, mask, scores, 1, out)
        assert written == 1 and np.array_equal(mask, game.legal_mask())
        game.apply(int(out[0]))
        states.append(game.clone())
    return states


@pytest.mark.parametrize(("rules", "num_players"), [("burako", 2), ("burako", 4)])
def test_compiled_evaluation_is_the_heuristic_evaluation(rules: str, num_players: int) -> None:
    """``fast_search.evaluate_sides`` (numba) gives ``heuristic.evaluate_sides``'s
    numbers on every state of a hand of the compiled policy, finished hand
    (its real scores) included; the policy only plays legal moves."""
    from agents.fast_search import eval_tables, evaluate_sides
    from agents.heuristic import evaluate_sides as reference

    states = _policy_states(4, rules, num_players)
    E = eval_tables(states[0].tables.rules, num_players)
    out = np.zeros(states[0].num_sides)
    melds = 0
    for game in [*states[::3], states[-1]]:
        evaluate_sides(game.st, game.args, E, out)
        assert np.allclose(out, reference(game.to_game_state())), game.turn
        melds = max(melds, int(game.st[F.N_MELDS : F.N_MELDS + game.num_sides].sum()))
    assert states[-1].hand_over and melds >= 3


def _decision(seed: int = 5) -> tuple[GameState, dict[str, np.ndarray]]:
    """A play-phase decision with 3+ legal moves, from a game of the compiled policy."""
    for game in _policy_states(seed, "burako", 2):
        if game.phase == Phase.PLAY and game.legal_mask().sum() >= 3 and game.turn >= 6:
            state = game.to_game_state()
            observation = {"observation": game.encode(game.current), "action_mask": game.legal_mask().copy()}
            return state, observation
    raise AssertionError("no decision found")


def _search_agents(**options: object) -> list[object]:
    from agents.registry import make_agent

    return [
        make_agent("fast_ismcts", seed=0, **options),
        make_agent("neural_ismcts", seed=0, leaf_batch=4, **options),
    ]


def test_search_agents_return_a_forced_move_at_once() -> None:
    """One legal action: returned without a simulation (and the neural search
    keeps no tree of an earlier move as if it were this one's)."""
    import dataclasses

    from agents.base import SeatView

    state = GameState.new_game(np.random.default_rng(0), "burako_br", 2)  # no privilege (B17)
    observation = {
        "observation": Observer(2, state.rules).encode(state, state.current),
        "action_mask": state.legal_mask().copy(),
    }
    assert state.legal_actions() == [0]
    searched, searched_observation = _decision()
    for agent in _search_agents(simulations=1000):
        if hasattr(agent, "last_root"):  # a searched move first: its tree must not outlive it
            agent.settings = dataclasses.replace(agent.settings, simulations=8)
            agent.reset(searched.current, searched.rules, 2)
            agent.act(searched_observation, SeatView(searched, searched.current, np.random.default_rng(0)))
            assert agent.last_root is not None
        agent.reset(state.current, state.rules, 2)
        assert agent.act(observation, SeatView(state, state.current, np.random.default_rng(0))) == 0
        assert agent.last_simulations == 0
        assert getattr(agent, "last_root", None) is None


def test_search_agents_respect_budgets() -> None:
    """``simulations`` bounds the simulations; ``time_per_move`` the time
    within 20% (measured around ``act``), and the budget is used (at least
    60% of it: the neural search stops a batch early rather than overrun).
    Wall-clock on a shared machine: a move is timed up to three times and one
    must fall in the band (a busy core stretched single moves to 1.3x)."""
    import time

    from agents.base import SeatView

    state, observation = _decision()
    legal = np.flatnonzero(observation["action_mask"])
    for agent in _search_agents(simulations=12):
        agent.reset(state.current, state.rules, 2)
        assert agent.act(observation, SeatView(state, state.current, np.random.default_rng(0))) in legal
        assert 1 <= agent.last_simulations <= 12
    budget = 0.15
    for agent in _search_agents(time_per_move=budget):
        agent.reset(state.current, state.rules, 2)
        times = []
        for _ in range(3):
            start = time.perf_counter()
            action = agent.act(observation, SeatView(state, state.current, np.random.default_rng(0)))
            times.append(time.perf_counter() - start)
            assert action in legal and agent.last_simulations > 12
            if 0.6 * budget <= times[-1] <= 1.2 * budget:
                break
        else:
            raise AssertionError(f"{type(agent).__name__} took {times} s for a {budget} s budget")


@pytest.mark.parametrize(
    ("name", "rules", "num_players", "options"),
    [
        ("fast_ismcts", "burako_casual", 3, {"simulations": 6, "root_actions": 2}),
        ("neural_ismcts", "burako", 2, {"simulations": 6, "leaf_batch": 3}),
        ("neural_ismcts", "burako", 2, {"simulations": 6, "leaf_batch": 3, "fpu_reduction": 0.2, "rollout_weight": 1}),
        ("neural_ismcts", "burako", 2, {"simulations": 6, "leaf_batch": 3, "planner_prior": 0.5}),
    ],
)
def test_search_agents_play_only_legal_moves(name: str, rules: str, num_players: int, options: dict) -> None:
    """A whole hand through the game runner (which faults an illegal move),
    the search agent in seat 0 against Planners."""
    from agents.heuristic import Planner
    from agents.registry import make_agent
    from agents.runner import play_game

    agents = [make_agent(name, seed=1, **options)] + [Planner(seed=p) for p in range(1, num_players)]
    result = play_game(agents, rules, num_players, 21, record=False)
    assert result.end_reason is not None


def test_search_agents_reject_bad_options_and_layouts() -> None:
    from agents.checkpoint import CheckpointError
    from agents.fast_search import FastISMCTSAgent
    from agents.neural_search import NeuralISMCTSAgent

    with pytest.raises(ValueError, match="time_per_move"):
        FastISMCTSAgent(time_per_move=0)
    with pytest.raises(ValueError, match="simulations"):
        NeuralISMCTSAgent(simulations=0)
    with pytest.raises(CheckpointError, match="layout"):
        NeuralISMCTSAgent().reset(0, "burako", 4)  # the shipped bot plays 2 players
    with pytest.raises(ValueError, match="fpu_reduction"):
        NeuralISMCTSAgent(fpu_reduction=-0.1)
    with pytest.raises(ValueError, match="rollout_weight"):
        NeuralISMCTSAgent(rollout_weight=1.5)
    with pytest.raises(ValueError, match="planner_prior"):
        NeuralISMCTSAgent(planner_prior=-0.5)


def test_neural_search_first_play_urgency() -> None:
    """``fpu_reduction``: an untried move counts as the node's mean value
    minus the reduction, not as 0, so a winning side also tries its other
    moves. Numbers by hand: c_puct 1.5, equal priors; move 0 tried once
    (value 1.0), the node's own value 1.0 -> mean 1.0, untried 0.8:
    move 0 scores 1 + 1.5 * 0.5 * sqrt(2) / 2 = 1.53, move 1 scores
    0.8 + 1.5 * 0.5 * sqrt(2) = 1.86 (but 0 + 1.06 without urgency)."""
    from agents.neural_search import NeuralISMCTSAgent, _Node

    node = _Node(side=0)
    node.logits = np.zeros(F.NUM_ACTIONS, dtype=np.float32)
    node.value = 1.0
    node.visits[0], node.total[0] = 1.0, 1.0
    legal = np.array([0, 1])
    assert NeuralISMCTSAgent(exploration=1.5)._select(node, legal) == 0
    assert NeuralISMCTSAgent(exploration=1.5, fpu_reduction=0.2)._select(node, legal) == 1
    assert NeuralISMCTSAgent(exploration=1.5, fpu_reduction=0.8)._select(node, legal) == 0  # 0.2 + 1.06 < 1.53


def test_neural_search_scores_a_truncated_hand_as_training_did() -> None:
    """V3a: a hand cut at ``max_turns`` has no score; the search counts it
    as the checkpoint's ``truncated_reward`` for every side (0 for a void hand)."""
    from agents.neural_search import NeuralISMCTSAgent
    from agents.policy import DEFAULT_CHECKPOINT

    before = NeuralISMCTSAgent(checkpoint=str(DEFAULT_CHECKPOINT.with_name("burako_ppo_2026-12-01.pt")))
    assert before.truncated_reward == 0.0  # the bot shipped until 2026-12-05 was trained without one
    agent = NeuralISMCTSAgent()
    assert agent.truncated_reward == -0.5  # the shipped bot's run (configs/ppo_reference.yaml)
    st = FastGame.new_game(np.random.default_rng(0), "burako", 2).st.copy()
    st[F.HAS_SCORES], st[F.END_REASON] = 0, F.END_TRUNCATED
    assert agent._terminal_values(st, 2).tolist() == [-0.5, -0.5]
    st[F.END_REASON] = F.END_VOID
    assert agent._terminal_values(st, 2).tolist() == [0.0, 0.0]


@pytest.mark.parametrize("weight", [0.0, 1.0])
def test_neural_search_rollout_weight_blends_the_leaf_values(weight: float) -> None:
    """``rollout_weight``: a leaf's value is (1 - w) x the value head + w x
    the compiled rollout's. A value head answering 100 everywhere shows in
    the root's mean values at w = 0 and vanishes at w = 1 (a rollout's value
    is at most win_weight + 3 x value_scale / reward_scale = 1.4 here)."""
    import torch

    from agents.base import SeatView
    from agents.neural_search import NeuralISMCTSAgent

    state, observation = _decision()
    agent = NeuralISMCTSAgent(seed=0, simulations=32, leaf_batch=8, rollout_weight=weight)
    real = agent._evaluate

    def evaluate(obs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        logits, _ = real(obs)
        return logits, np.full(len(obs), 100.0, dtype=np.float32)

    agent._evaluate = evaluate  # type: ignore[method-assign]
    agent.reset(state.current, state.rules, 2)
    with torch.no_grad():
        agent.act(observation, SeatView(state, state.current, np.random.default_rng(0)))
    root = agent.last_root
    assert root is not None and agent.last_simulations == 32
    tried = root.visits > 0
    means = np.abs(root.total[tried] / root.visits[tried])
    if weight == 0.0:
        assert means.max() > 50.0
    else:
        assert means.max() <= 1.4 + 1e-6


@pytest.mark.parametrize("weight", [0.0, 0.3, 1.0])
def test_neural_search_planner_prior_mixes_the_root_prior(weight: float) -> None:
    """``planner_prior`` m: the root's prior over the legal moves is
    (1 - m) x the policy head's + m on the Planner's choice; an illegal
    move keeps no prior, and a hint that is not legal is refused."""
    from agents.base import SeatView
    from agents.heuristic.policies import PlannerPolicy
    from agents.neural_search import NeuralISMCTSAgent

    state, observation = _decision()
    legal = np.flatnonzero(observation["action_mask"])
    agent = NeuralISMCTSAgent(seed=0, simulations=8, leaf_batch=4, planner_prior=weight)
    agent.reset(state.current, state.rules, 2)
    agent.act(observation, SeatView(state, state.current, np.random.default_rng(0)))
    root = agent.last_root
    assert root is not None and root.logits is not None
    net_logits, _ = agent._evaluate(np.asarray(observation["observation"], dtype=np.float32)[None, :])
    net = np.exp(net_logits[0][legal] - net_logits[0][legal].max())
    net /= net.sum()
    hint = PlannerPolicy().choose(state, legal.tolist())
    expected = (1 - weight) * net + weight * (legal == hint)
    prior = np.exp(root.logits[legal].astype(np.float64) - root.logits[legal].max())
    np.testing.assert_allclose(prior / prior.sum(), expected, atol=1e-5)
    if weight > 0:
        illegal = np.setdiff1d(np.arange(F.NUM_ACTIONS), legal)
        assert np.isneginf(root.logits[illegal]).all()
        with pytest.raises(ValueError, match="not a legal root move"):
            agent._hinted_logits(net_logits[0], legal, int(illegal[0]))
