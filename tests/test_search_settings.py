"""One SearchSettings for the three search agents: shared defaults and
checks, one name for the time budget (``time_per_move``; ``seconds`` and
``c_puct`` still work with a DeprecationWarning), and clear errors for an
option an agent does not read."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

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
