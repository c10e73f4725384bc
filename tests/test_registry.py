"""Agents by name (agents/registry.py, burako_env/plugins.py): built-in names,
``module:Class`` and installed plug-ins (entry points), for the library, the
Gymnasium env and every command line; bad names are clear errors."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest

from agents import play
from agents.heuristic import GreedyMelder
from agents.random_agent import RandomAgent
from agents.registry import AGENTS, agent_class, agent_names, is_agent, make_agent
from burako_env import plugins
from burako_env.engine import GameState

RANDOM = "agents.random_agent:RandomAgent"


def _moves(agent: RandomAgent, seed: int = 4, count: int = 30) -> list[int]:
    state = GameState.new_game(np.random.default_rng(seed), "burako", 2)
    agent.reset(0, state.rules, 2)
    moves = []
    for _ in range(count):
        action = agent.act({"action_mask": state.legal_mask()})
        moves.append(action)
        state.apply(action)
    return moves


def test_module_class_names_build_the_same_agent_as_registry_names() -> None:
    by_path = make_agent(RANDOM, seed=3)
    assert type(by_path) is RandomAgent and agent_class("greedy") is GreedyMelder
    assert _moves(by_path) == _moves(make_agent("random", seed=3))
    assert type(make_agent("agents.heuristic:Planner", seed=0)).__name__ == "Planner"
    assert is_agent(RANDOM) and is_agent("planner") and not is_agent("nobody") and not is_agent(7)  # type: ignore[arg-type]
    assert set(AGENTS) <= set(agent_names())


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("nobody", "unknown agent 'nobody'; known agents: .*greedy.*or give 'module:Class'"),
        ("", "non-empty string"),
        (":RandomAgent", "expected 'module:Class'"),
        ("agents.random_agent:", "expected 'module:Class'"),
        ("no_such_module_c13:Bot", "cannot import module 'no_such_module_c13'"),
        ("agents.random_agent:NoSuchAgent", "module 'agents.random_agent' has no 'NoSuchAgent'"),
        ("agents.registry:AGENTS", "is a dict, not a class or factory"),
    ],
)
def test_bad_agent_names_are_clear_errors(name: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        make_agent(name, seed=0)


def test_installed_plugins_resolve_through_entry_points(monkeypatch: pytest.MonkeyPatch) -> None:
    """A name no table knows is looked up among the ``burako_env.agents`` entry
    points (another package's agents), for the registry and for the env alike."""
    monkeypatch.setattr(plugins, "installed_agents", lambda: {"plugged": RANDOM})
    assert type(make_agent("plugged", seed=1)) is RandomAgent
    assert "plugged" in agent_names()
    assert type(plugins.make_agent("plugged", seed=1)) is RandomAgent
    monkeypatch.setattr(plugins, "installed_agents", dict)
    with pytest.raises(ValueError, match=r"no agents are installed: run `pip install -e \.`"):
        plugins.make_agent("planner")
    assert type(make_agent("planner", seed=0)).__name__ == "Planner"  # built-ins need no install


def test_gym_env_takes_module_class_and_plugin_names(monkeypatch: pytest.MonkeyPatch) -> None:
    from burako_env.gym import BurakoGymEnv

    env = BurakoGymEnv(opponents="agents.heuristic:GreedyMelder")
    obs, _ = env.reset(seed=0)
    assert type(env._opponents[0]) is GreedyMelder and obs["action_mask"].any()
    monkeypatch.setattr(plugins, "installed_agents", lambda: {"plugged": RANDOM})
    env = BurakoGymEnv(opponents="plugged", learner_seat=1)
    env.reset(seed=1)
    assert type(env._opponents[0]) is RandomAgent
    with pytest.raises(ValueError, match="unknown agent 'nobody'"):
        BurakoGymEnv(opponents="nobody")


def test_play_cli_takes_agent_names(capsys: pytest.CaptureFixture[str]) -> None:
    """``burako-play --agents``: one name per seat or one for all; a module:Class
    name plays exactly as the registry name it stands for."""
    assert play.main(["--seed", "2"]) == 0
    default = capsys.readouterr().out
    assert play.main(["--seed", "2", "--agents", f"{RANDOM},random"]) == 0
    assert capsys.readouterr().out == default
    assert "hand over after" in default
    assert play.main(["--seed", "2", "--agents", "greedy", "--players", "4"]) == 0
    assert "hand over after" in capsys.readouterr().out
    for bad, message in (
        (["--agents", "nobody"], "unknown agent"),
        (["--agents", "random,random,random"], "one per"),
        (["--agents", "random,rummy-greedy"], "agent 'rummy-greedy' plays rummy only, not burako"),
    ):
        assert play.main(["--seed", "2", *bad]) == 2
        out, err = capsys.readouterr()
        assert message in err and out == ""


def test_eval_human_tournament_and_training_take_module_class(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from agents import human
    from training import evaluate
    from training.ppo import PPOConfig
    from training.tournament import Participant

    argv = ["--a", RANDOM, "--b", "random", "--games", "2", "--seed", "1", "--no-progress"]
    assert evaluate.main(argv) == 0
    assert f"A = {RANDOM}" in capsys.readouterr().out
    monkeypatch.setattr("sys.stdin", io.StringIO("0\n" * 20000))
    assert human.main(["--opponent", RANDOM, "--seed", "0"]) == 0
    assert f"player_1 ({RANDOM}): " in capsys.readouterr().out
    assert human.main(["--opponent", "nobody"]) == 2
    assert "unknown agent 'nobody'" in capsys.readouterr().err
    # a Rummy agent, or an option the agent does not take: one line before the deal, no traceback
    for argv_bad, message in (
        (["--opponent", "rummy-greedy"], "agent 'rummy-greedy' plays rummy only, not burako"),
        (["--opponent", "random", "--opponent-opt", "foo=1"], "--opponent-opt for random: "),
    ):
        assert human.main(argv_bad) == 2
        out, err = capsys.readouterr()
        assert message in err and out == ""
    assert type(Participant.of("mine", RANDOM).spec().build(5)) is RandomAgent
    config = PPOConfig(run_root=str(tmp_path), league_baselines=[RANDOM, "planner"], eval_opponents=[RANDOM])
    assert config.league_baselines == [RANDOM, "planner"]
    with pytest.raises(ValueError, match=r"league_baselines: unknown agent\(s\).*nobody:Bot"):
        PPOConfig(run_root=str(tmp_path), league_baselines=["nobody:Bot"])
