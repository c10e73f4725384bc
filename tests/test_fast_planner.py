"""The compiled heuristics (agents/fast_planner.py) against the Python policies they
compile: the same action at every decision, on every preset, player count and the
extreme tables, with the presets' weights and with changed ones; and the training
league's games with compiled baselines equal the Python baselines' games."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from test_extreme_rules import EXTREMES
from test_training_vector import vector_config

from agents import fast_planner
from agents.heuristic import GreedyPolicy, HeuristicPolicy, PlannerPolicy
from burako_env.engine import GameState
from burako_env.fast import FastGame
from burako_env.rules import Rules, load_rules, preset_names
from training.ppo import Trainer

TABLES = [(preset, n) for preset in preset_names() for n in load_rules(preset).players]


def compare(rules: Rules, num_players: int, style: str, games: int, seed: int, weights: Any = None) -> int:
    """Play ``games`` hands (the policy's move 4 times in 5, else a random legal one, so positions
    leave the policy's own path) and assert at every decision that the compiled heuristic picks
    the Python policy's action, the policy asked about the seat's view (a determinization, as
    ``view.public_state()`` gives the agents). Returns the decisions compared."""
    policy: HeuristicPolicy = PlannerPolicy(weights) if style == "planner" else GreedyPolicy(weights)
    tables = fast_planner.tables_for(rules, num_players, weights, style).kernel_args
    rng = np.random.default_rng(seed)
    compared = 0
    for g in range(games):
        state = GameState.new_game(np.random.default_rng([seed, g]), rules, num_players)
        while not state.hand_over:
            legal = np.flatnonzero(state.legal_mask()).tolist()
            game = FastGame.from_game_state(state)
            compiled = fast_planner.choose_game(game, tables)
            python = policy.choose(state.determinize(state.current, rng), legal)
            assert compiled == python, (
                f"{style} on {rules.name} {num_players}p, hand {g} of seed {seed}, phase {state.phase.name}: "
                f"Python {state.describe(python)}, compiled {state.describe(compiled)}"
            )
            compared += len(legal) > 1
            state.apply(python if rng.random() < 0.8 else int(rng.choice(legal)))
    return compared


@pytest.mark.parametrize("style", ["planner", "greedy"])
@pytest.mark.parametrize(("preset", "num_players"), TABLES)
def test_compiled_heuristics_choose_as_the_python_policies(preset: str, num_players: int, style: str) -> None:
    assert compare(load_rules(preset), num_players, style, games=3, seed=11) > 150


@pytest.mark.parametrize("style", ["planner", "greedy"])
def test_compiled_heuristics_follow_changed_weights(style: str) -> None:
    """Every weight reaches the kernels by name: changed ones (thresholds crossed the other way,
    costs raised and lowered) still give the Python policy's actions."""
    weights = {
        "take_threshold": -5.0,
        "take_threshold_blind": 10.0,
        "feed_base": 5.0,
        "feed_known_share": 2.0,
        "keep_pattern_cap": 10.0,
        "wild_add_hold": 12.0,
        "wild_meld_hold": 3.0,
        "danger_stock": 40,
        "close_late_stock": 40,
        "privilege_keep_threshold": 40.0,
        "canasta_share": (0.0, 0.0, 0.0, 0.5, 0.6, 0.7, 0.9),
        "dump_late_stock": 60,
    }
    for preset, n in (("burako", 4), ("burako_casual", 3), ("buraco_cards", 2)):
        assert compare(load_rules(preset), n, style, games=2, seed=12, weights=weights) > 80


def test_compiled_planner_on_the_extreme_tables() -> None:
    """The extreme tables (tests/test_extreme_rules.py: a hand of one tile, the largest hand and
    muerto, the match targets) reach branches the presets rarely do."""
    for i, (preset, n, overrides) in enumerate(EXTREMES[::3]):
        compare(load_rules(preset, overrides), n, "planner", games=1, seed=100 + i)


@pytest.mark.slow
@pytest.mark.parametrize("style", ["planner", "greedy"])
def test_compiled_heuristics_choose_as_the_python_policies_slow(style: str) -> None:
    """The same over 40 hands of every table and every extreme table (~10 minutes):
    ``pytest -m slow tests/test_fast_planner.py``."""
    for preset, n in TABLES:
        compare(load_rules(preset), n, style, games=40, seed=13)
    for i, (preset, n, overrides) in enumerate(EXTREMES):
        compare(load_rules(preset, overrides), n, style, games=3, seed=200 + i)


def test_every_weight_the_policies_read_reaches_the_kernels() -> None:
    """A new ``HeuristicWeights`` field is read by name into the kernels' weights vector: all of them but
    ``canasta_share`` (read through the melds' worth) and the search's static evaluation (``eval_*``)."""
    import dataclasses

    from agents.heuristic import HeuristicWeights

    fields = {f.name for f in dataclasses.fields(HeuristicWeights)}
    assert set(fast_planner.WEIGHT_NAMES) == {n for n in fields if not n.startswith("eval_")} - {"canasta_share"}


def test_compiled_tables_only_for_the_heuristics_with_weights() -> None:
    rules = load_rules("burako")
    assert fast_planner.compiled_tables("planner", {}, rules, 2) is not None
    assert fast_planner.compiled_tables("greedy", {"weights": {"feed_base": 3}}, rules, 2) is not None
    assert fast_planner.compiled_tables("random", {}, rules, 2) is None
    assert fast_planner.compiled_tables("planner", {"other": 1}, rules, 2) is None
    with pytest.raises(ValueError, match="unknown heuristic weight"):
        fast_planner.compiled_tables("planner", {"weights": {"nope": 1}}, rules, 2)


@pytest.mark.parametrize(("num_players", "worker_share"), [(2, 0.0), (4, 0.5)])
def test_compiled_baselines_play_the_python_baselines_games(
    tmp_path: Path, num_players: int, worker_share: float
) -> None:
    """``compiled_baselines`` changes where the planner and greedy move, nothing else: every move of
    every game, every stored decision and every credited episode equal the Python agents' rollout
    from the same seed (beside a baseline that stays Python, with and without the worker process),
    though the compiled moves are chosen in a second thread while the forward passes run."""
    results = []
    for compiled in (False, True):
        cfg = vector_config(
            tmp_path / str(compiled),
            num_players=num_players,
            league_baselines=["planner", "greedy", "random"],
            league_baseline_options={"greedy": {"weights": {"feed_base": 10.0}}},
            self_play_fraction=0.2,
            baseline_fraction=0.6,
            num_envs=6,
            baseline_worker_share=worker_share,
            compiled_baselines=compiled,
        )
        trainer = Trainer(cfg, progress=False)
        rollout = trainer.vector
        assert rollout is not None
        assert set(rollout.compiled) == ({"planner", "greedy"} if compiled else set())
        rollout.trace = []
        try:
            episodes = rollout.collect(600) + rollout.collect(600)
            opponents = {ep.opponent for ep in episodes}
            stored = [(ep.seat, ep.opponent, ep.reward, rollout.store.actions[ep.rows].tolist()) for ep in episodes]
            if compiled:  # no readable mirror of a game the compiled heuristics play
                assert not {i for i in rollout.mirrors if rollout.opponent[i] in ("planner", "greedy")}
                # they chose in their own thread beside the forward passes (training/rollout.py)
                assert rollout._compiled_thread is not None
            results.append((rollout.trace, stored, opponents, trainer.episodes_done))
        finally:
            trainer.close()
        assert rollout._compiled_thread is None  # closed with the trainer
    (trace, stored, opponents, hands), (trace_c, stored_c, _, hands_c) = results
    assert {"planner", "greedy"} <= opponents and hands >= 6
    assert trace_c == trace
    assert stored_c == stored and hands_c == hands


def test_an_interrupted_step_waits_for_the_compiled_baselines_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C during the forward passes (a notebook): the step re-raises only once the compiled baselines'
    kernel has stopped reading the games, so a step or reset right after cannot move them under it."""
    import time

    import training.rollout as rollout_module

    cfg = vector_config(tmp_path, league_baselines=["planner"], self_play_fraction=0.2, baseline_fraction=0.8)
    trainer = Trainer(cfg, progress=False)
    rollout = trainer.vector
    assert rollout is not None
    finished: list[bool] = []

    def slow_choices(compiled_rows: dict[str, list[int]], masks: np.ndarray) -> list[Any]:
        time.sleep(0.3)
        finished.append(True)
        return []

    def interrupted(*args: Any, **kwargs: Any) -> Any:
        raise KeyboardInterrupt

    monkeypatch.setattr(rollout, "_compiled_choices", slow_choices)
    monkeypatch.setattr(rollout_module, "sample_actions", interrupted)
    try:
        for _ in range(50):  # until a step has planner moves beside learner rows
            before = len(finished)
            try:
                rollout.step([])
            except KeyboardInterrupt:
                if rollout._compiled_thread is not None:
                    break
        assert rollout._compiled_thread is not None
        assert len(finished) == before + 1  # the threaded kernel call had finished when the step raised
    finally:
        trainer.close()


@pytest.mark.parametrize(
    ("num_players", "teacher", "options"), [(2, "planner", {}), (4, "greedy", {"weights": {"feed_base": 9.0}})]
)
def test_compiled_teacher_games_record_the_python_teachers_decisions(
    num_players: int, teacher: str, options: dict[str, Any]
) -> None:
    """The warm start's teacher games (training/cloning.py) played compiled record exactly what the
    Python agents record: observations, masks, moves, value targets and policy targets, deal by deal."""
    from training.cloning import _teacher_games

    args = ("burako", teacher, options, False, "burako", num_players, 5, [0, 1, 2, 3], 0.5, 1.0, 1000.0, -0.5, False)
    compiled, python = _teacher_games(args), _teacher_games(args, compiled=False)  # type: ignore[arg-type]
    assert compiled["actions"].size > 150
    for key in ("obs", "masks", "actions", "targets", "policy"):
        np.testing.assert_array_equal(compiled[key], python[key], err_msg=key)
