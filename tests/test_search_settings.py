"""One SearchSettings for the three search agents: shared defaults and
checks, one name for the time budget (``time_per_move``; ``seconds`` and
``c_puct`` still work with a DeprecationWarning), and clear errors for an
option an agent does not read."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pytest
import torch

from agents.fast_search import FastISMCTSAgent
from agents.registry import make_agent
from agents.search import ISMCTSAgent
from agents.search_settings import SearchSettings


def test_the_ismcts_agents_share_their_defaults() -> None:
    assert ISMCTSAgent().settings == FastISMCTSAgent().settings == SearchSettings()
    assert set(FastISMCTSAgent.uses_settings) == set(SearchSettings.field_names()) - {"rollout"}


def test_options_and_settings_build_the_same_agent() -> None:
    settings = SearchSettings(simulations=9, time_per_move=0.5, exploration=0.3, depth=2)
    for name in ("ismcts", "fast_ismcts"):
        by_options = make_agent(name, seed=0, simulations=9, time_per_move=0.5, exploration=0.3, depth=2)
        whole = make_agent(name, seed=0, settings=settings)
        assert by_options.settings == whole.settings == settings
        # options change a given settings object
        assert make_agent(name, settings=settings, depth=3).settings == dataclasses.replace(settings, depth=3)


def test_seconds_is_the_deprecated_name_of_time_per_move() -> None:
    with pytest.warns(DeprecationWarning, match=r"seconds= is deprecated, use time_per_move="):
        agent = make_agent("ismcts", seed=0, seconds=0.25)
    assert agent.settings.time_per_move == 0.25
    with pytest.raises(TypeError, match="give time_per_move= only"):
        ISMCTSAgent(seconds=1.0, time_per_move=1.0)


@pytest.mark.parametrize(
    ("options", "error", "message"),
    [
        ({"simulations": 0}, ValueError, "simulations must be a whole number >= 1"),
        ({"simulations": 2.5}, ValueError, "simulations must be a whole number >= 1"),
        ({"time_per_move": 0}, ValueError, "time_per_move must be > 0 seconds"),
        ({"time_per_move": float("inf")}, ValueError, "time_per_move must be > 0 seconds"),
        ({"depth": 0}, ValueError, "depth must be a whole number >= 1"),
        ({"exploration": -1.0}, ValueError, "exploration must be >= 0"),
        ({"value_scale": 0}, ValueError, "value_scale must be > 0"),
        ({"margin": "big"}, ValueError, "margin must be a finite number"),
        ({"simulatons": 5}, TypeError, "unknown option 'simulatons'"),
    ],
)
def test_bad_settings_are_clear_errors(options: dict[str, Any], error: type[Exception], message: str) -> None:
    for name in ("ismcts", "fast_ismcts"):
        with pytest.raises(error, match=message):
            make_agent(name, **options)


def test_an_option_the_agent_does_not_read_is_an_error() -> None:
    with pytest.raises(TypeError, match="fast_ismcts does not use the search setting 'rollout'"):
        FastISMCTSAgent(rollout="greedy")
    with pytest.raises(ValueError, match="unknown rollout policy 'nope'"):
        ISMCTSAgent(rollout="nope")
    with pytest.raises(TypeError, match="settings must be a SearchSettings"):
        ISMCTSAgent(settings={"simulations": 3})  # type: ignore[arg-type]


def test_neural_search_settings() -> None:
    """The neural agent reads the budget and the exploration constant (its
    c_puct) from the same settings; c_puct= is the deprecated name."""
    pytest.importorskip("torch")
    from agents.neural_search import NeuralISMCTSAgent

    agent = NeuralISMCTSAgent(seed=0, time_per_move=0.2)
    assert agent.settings == SearchSettings(simulations=256, exploration=1.5, time_per_move=0.2)
    with pytest.warns(DeprecationWarning, match="c_puct= is deprecated, use exploration="):
        assert NeuralISMCTSAgent(c_puct=2.0).settings.exploration == 2.0
    with pytest.raises(TypeError, match="neural_ismcts does not use the search setting 'root_actions'"):
        NeuralISMCTSAgent(root_actions=3)
    with pytest.raises(ValueError, match="exploration"):
        NeuralISMCTSAgent(exploration=0.0)


# --------------------------------------------------------------------------- faults found in review (2026-12-05)
def test_the_compiled_searches_build_their_tables_in_reset_not_on_the_moves_clock() -> None:
    """Built in the first act (4-7 s per rules), the tables overran time_per_move ~100x, and a
    tournament's move_time_limit interrupted every first move, so every game was forfeited."""
    from agents.neural_search import NeuralISMCTSAgent
    from burako_env.fast import fast_tables
    from burako_env.rules import load_rules

    rules = load_rules("burako_casual")
    for agent in (FastISMCTSAgent(seed=0, simulations=8), NeuralISMCTSAgent(seed=0, simulations=8)):
        agent.reset(0, rules, 2)
        assert agent._work is not None and agent._work.tables is fast_tables(rules, 2)


def test_the_compiled_searches_first_move_in_a_fresh_process_keeps_its_time() -> None:
    """With the tables built in reset, a first act still loaded numba's kernels from the disk cache
    (~1.6 s): 1.4-2.0 s for time_per_move 0.1, and a move_time_limit forfeited the game. reset loads
    them now (agents.fast_search.warm_kernels). A fresh process, so the kernels are not loaded yet."""
    import subprocess
    import sys

    script = """
import time
import numpy as np
from agents.fast_search import FastISMCTSAgent
from burako_env.engine import GameState
from burako_env.views import SeatView

state = GameState.new_game(np.random.default_rng(1), "burako", 2)
agent = FastISMCTSAgent(seed=0, time_per_move=0.1)
agent.reset(state.current, state.rules, 2)
times = []
for _ in range(2):
    start = time.perf_counter()
    agent.act({"action_mask": state.legal_mask().copy()}, SeatView(state, state.current, np.random.default_rng(0)))
    times.append(time.perf_counter() - start)
print(*times)
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    first, second = map(float, done.stdout.split())
    assert first < max(0.75, 3 * second), (first, second)


def test_ismcts_keeps_time_per_move_within_a_round(monkeypatch: pytest.MonkeyPatch) -> None:
    """The deadline was read only between whole rounds (one simulation per root candidate): a round of
    long rollouts ran ~4x over the budget. A fake clock: each simulation takes 1 s, the budget is 2.5 s."""
    import agents.search as search
    from agents.base import SeatView
    from burako_env.scenario import build_state

    clock = [0.0]
    monkeypatch.setattr(search.time, "perf_counter", lambda: clock[0])

    def simulate(self: ISMCTSAgent, root: Any, state: Any, action: int) -> None:
        clock[0] += 1.0

    monkeypatch.setattr(ISMCTSAgent, "_simulate", simulate)
    state = build_state(hands={0: "R3 R4 R5 B7 B8 B9 K1 K1 Y12", 1: "K3 K4"}, stock="B1 B2 B3")
    agent = ISMCTSAgent(seed=0, time_per_move=2.5, root_actions=6)
    agent.reset(0, state.rules, 2)
    agent.act(None, SeatView(state, 0, np.random.default_rng(0)))  # type: ignore[arg-type]
    assert agent.last_simulations == 3  # the 3rd simulation ends past the deadline: the round stops there


def test_neural_ismcts_reads_a_checkpoint_replaced_under_the_same_path(tmp_path: Any) -> None:
    """Its network was cached by path: a new bot copied over the file kept playing as the old one, while
    tournaments fingerprinted the new file's bytes."""
    import os
    import shutil

    from agents.neural_search import NeuralISMCTSAgent
    from agents.policy import DEFAULT_CHECKPOINT

    bot = tmp_path / "bot.pt"
    shutil.copyfile(DEFAULT_CHECKPOINT, bot)
    first = NeuralISMCTSAgent(seed=0, checkpoint=str(bot))
    assert NeuralISMCTSAgent(seed=0, checkpoint=str(bot)).net is first.net  # still read once per version
    shutil.copyfile(DEFAULT_CHECKPOINT.with_name("burako_ppo_2026-12-01.pt"), bot)
    os.utime(bot, ns=(1, 1))  # another version even within the file system's clock resolution
    second = NeuralISMCTSAgent(seed=0, checkpoint=str(bot))
    weights = [next(a.net.parameters()).detach().flatten()[:8] for a in (first, second)]
    assert second.net is not first.net and not bool((weights[0] == weights[1]).all())


@pytest.mark.parametrize(
    ("agent", "options", "message"),
    [
        ("policy", {"temperature": float("inf"), "greedy": False}, "temperature must be a finite number"),
        ("policy", {"temperature": float("nan"), "greedy": False}, "temperature must be a finite number"),
        ("policy", {"temperature": "abc"}, "temperature must be a finite number"),
        ("policy", {"greedy": "no"}, "greedy must be true or false, got 'no'"),
        ("neural_ismcts", {"leaf_batch": 2.5}, "leaf_batch must be a whole number >= 1, got 2.5"),
        ("neural_ismcts", {"leaf_batch": True}, "leaf_batch must be a whole number"),
        ("neural_ismcts", {"torch_threads": 1.5}, "torch_threads must be a whole number"),
        ("neural_ismcts", {"planner_prior": True}, "planner_prior must be a finite number"),
        ("neural_ismcts", {"rollout_weight": "abc"}, "rollout_weight must be a finite number"),
        ("neural_ismcts", {"fpu_reduction": "abc"}, "fpu_reduction must be a finite number"),
    ],
)
def test_agent_options_of_the_wrong_type_are_refused_by_name(agent: str, options: dict, message: str) -> None:
    """greedy="no" played greedy (a non-empty string is true), temperature=inf played illegal moves,
    leaf_batch=2.5 crashed at the first move, and "abc" gave a bare comparison error."""
    with pytest.raises(ValueError, match=message):
        make_agent(agent, seed=0, **options)


def test_a_settings_object_may_not_carry_settings_the_agent_does_not_read() -> None:
    """Options an agent does not read are refused; fields of a whole settings object were not."""
    odd = SearchSettings(rollout="greedy", root_actions=2, tree_actions=9, margin=50)
    with pytest.raises(TypeError, match="neural_ismcts does not use the search setting"):
        make_agent("neural_ismcts", seed=0, settings=odd)
    with pytest.raises(TypeError, match=r"fast_ismcts does not use the search setting\(s\) rollout"):
        make_agent("fast_ismcts", seed=0, settings=SearchSettings(rollout="greedy"))
    with pytest.raises(ValueError, match="rollout must be a rollout policy's name"):
        SearchSettings(rollout=["x"])  # type: ignore[arg-type]


def test_the_policy_agent_samples_legal_moves_at_any_finite_temperature() -> None:
    """The mask was applied before the temperature divided the logits: at 1e38 illegal moves took 195
    of 200 picks, and a tiny temperature overflowed the legal logits (softmax NaN, a bare RuntimeError)."""
    from agents.policy import PolicyAgent
    from burako_env.engine import GameState
    from burako_env.observation import Observer
    from burako_env.rules import load_rules

    state = GameState.new_game(np.random.default_rng(0))
    mask = state.legal_mask()
    observation = {"observation": Observer(2, load_rules("burako")).encode(state, state.current), "action_mask": mask}
    for temperature in (1e-300, 1e-38, 1.0, 1e38, 3e38):
        agent = PolicyAgent(seed=0, greedy=False, temperature=temperature)
        agent.reset(0, None, 2)
        assert all(mask[agent.act(observation)] for _ in range(50)), temperature
    greedy = PolicyAgent(seed=0)
    greedy.reset(0, None, 2)
    tiny = PolicyAgent(seed=0, greedy=False, temperature=1e-300)  # a near-zero temperature is greedy
    tiny.reset(0, None, 2)
    assert tiny.act(observation) == greedy.act(observation)
    # a half network failed at the first real move with "mat1 and mat2 must have the same dtype"
    with pytest.raises(ValueError, match=r"PolicyAgent plays a float32 network, got parameters of \['torch.float16'\]"):
        PolicyAgent(net=greedy.net.half())


def test_the_network_search_refuses_a_checkpoint_whose_reward_settings_are_not_numbers(tmp_path: Any) -> None:
    """The search scores its leaves with the run's reward, read from the checkpoint's config with float():
    "abc" was a bare ValueError, None a TypeError, a NaN or 0 reward_scale was accepted."""
    from agents import checkpoint as ckpt
    from agents.neural_search import NeuralISMCTSAgent
    from agents.policy import DEFAULT_CHECKPOINT

    for name, value in (
        ("win_weight", "abc"),
        ("reward_scale", None),
        ("reward_scale", float("nan")),
        ("reward_scale", 0),
    ):
        data = torch.load(DEFAULT_CHECKPOINT, map_location="cpu", weights_only=True)
        data["config"][name] = value
        path = tmp_path / f"{name}.pt"
        torch.save(data, path)
        with pytest.raises(ckpt.CheckpointError, match=rf"its training config's {name} is .*; a finite number"):
            NeuralISMCTSAgent(seed=0, checkpoint=str(path), simulations=4)
