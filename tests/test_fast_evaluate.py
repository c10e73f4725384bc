"""training/fast_evaluate.py: the training's evaluations on the compiled core play the games
``evaluate()`` plays on the readable engine, game for game."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import torch

from agents import checkpoint as ckpt
from agents.network import NetworkShape, PolicyNet
from agents.policy import DEFAULT_CHECKPOINT, PolicyAgent
from burako_env.rules import load_rules
from training.duplicate import AgentSpec
from training.evaluate import evaluate
from training.fast_evaluate import evaluate_network
from training.ppo import PPOConfig, Trainer


def game_facts(outcomes: list) -> list[tuple]:
    """What a result row says about its game (not the record, which only evaluate() writes)."""
    return [
        (o.deal, o.seating, o.a_seats, o.a_score, o.b_score, o.end_reason, o.turns, o.actions, o.deal_seed)
        for o in outcomes
    ]


def both_ways(net: PolicyNet, opponent: str, games: int, seed: int, rules: str = "burako", players: int = 2):
    def factory(seed: int) -> PolicyAgent:
        return PolicyAgent(seed=seed, net=net)

    spec = AgentSpec.of(opponent)
    fast = evaluate_network(net, spec, games=games, seed=seed, rules=rules, num_players=players)
    slow = evaluate(AgentSpec("policy", (), factory), spec, games=games, seed=seed, rules=rules, num_players=players)
    assert fast is not None
    return fast, slow


def summary_figures(evaluation) -> dict:
    figures = evaluation.summary.to_dict()
    figures.pop("seconds")
    return figures


def test_the_shipped_bot_plays_the_readable_evaluations_games_against_the_planner() -> None:
    """The trained network (greedy) against the compiled planner: the same games as evaluate()'s
    (deals, both seatings, every move: scores, turns and action counts), so the same summary."""
    net, _ = ckpt.build_policy(ckpt.load(str(DEFAULT_CHECKPOINT)), source="shipped")
    net = net.float().eval()
    fast, slow = both_ways(net, "planner", games=24, seed=12345)
    assert game_facts(fast.outcomes) == game_facts(slow.outcomes)
    assert summary_figures(fast) == summary_figures(slow)
    assert len({o.a_score - o.b_score for o in fast.outcomes}) > 5  # real games, not a degenerate match


@pytest.mark.parametrize(
    ("opponent", "rules", "players"),
    [("greedy", "burako", 2), ("planner", "burako", 4), ("planner", "buraco_cards", 2)],
)
def test_untrained_networks_play_the_same_games_both_ways(opponent: str, rules: str, players: int) -> None:
    """Greedy as the opponent, partnerships (A in seats 0+2, then 1+3) and another preset's rules."""
    r = load_rules(rules)
    torch.manual_seed(3)
    net = PolicyNet(NetworkShape.for_env(players, r, hidden=32, slot_embed=4), r).eval()
    fast, slow = both_ways(net, opponent, games=6, seed=5, rules=rules, players=players)
    assert game_facts(fast.outcomes) == game_facts(slow.outcomes)
    assert summary_figures(fast) == summary_figures(slow)


def test_opponents_it_cannot_play_are_left_to_evaluate_and_bad_networks_refused() -> None:
    rules = load_rules("burako")
    net = PolicyNet(NetworkShape.for_env(2, rules, hidden=16, slot_embed=4), rules).eval()
    for spec in (AgentSpec.of("random"), AgentSpec.of("planner", {"simulations": 10}), AgentSpec.of("ismcts")):
        assert evaluate_network(net, spec, games=2, seed=0) is None
    with pytest.raises(ValueError, match="positive even number"):
        evaluate_network(net, AgentSpec.of("planner"), games=3, seed=0)
    with pytest.raises(ValueError, match="seed must be >= 0"):
        evaluate_network(net, AgentSpec.of("planner"), games=2, seed=-1)
    with pytest.raises(ValueError, match="float32 network on the CPU"):
        evaluate_network(net.half(), AgentSpec.of("planner"), games=2, seed=0)
    four = PolicyNet(NetworkShape.for_env(4, rules, hidden=16, slot_embed=4), rules).eval()
    with pytest.raises(ckpt.CheckpointError, match="layout"):
        evaluate_network(four, AgentSpec.of("planner"), games=2, seed=0)


def test_the_trainer_evaluates_on_the_compiled_core_with_the_same_curve_point(tmp_path: Path) -> None:
    """``compiled_evaluations`` changes where the training's evaluation games are played, not its
    figures; an opponent the compiled core cannot play still plays through evaluate()."""
    rows = {}
    for compiled in (True, False):
        config = PPOConfig(
            run_root=str(tmp_path / str(compiled)), num_envs=1, hidden=16, slot_embed=4, workers=1,
            minibatch_size=64, eval_games=4, eval_opponents=["planner", "random"], eval_seed=3,
            compiled_evaluations=compiled, seed=2,
        )  # fmt: skip
        trainer = Trainer(config, progress=False)
        trainer.started = time.perf_counter()
        rows[compiled] = trainer.evaluate_now()
        trainer.lock.release()
        trainer.writer.close()
    assert rows[True]["planner"] == rows[False]["planner"]
    assert rows[True]["random"] == rows[False]["random"]
