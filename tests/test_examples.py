"""Each example under examples/ runs, briefly, with tiny settings."""

from __future__ import annotations

import pytest


def test_sb3_maskable_ppo_example_trains_and_evaluates() -> None:
    pytest.importorskip("sb3_contrib")
    from examples import sb3_maskable_ppo

    result = sb3_maskable_ppo.main(
        ["--opponent", "random", "--steps", "256", "--minutes", "1", "--n-envs", "2", "--n-steps", "64",
         "--batch-size", "64", "--eval-games", "2"]
    )  # fmt: skip
    assert result["learner_steps"] >= 256
    (evaluation,) = result["evaluations"]
    assert evaluation["games"] == 2 and 0.0 <= evaluation["win_rate"] <= 1.0


def test_cleanrl_ppo_example_runs() -> None:
    from examples import cleanrl_ppo

    result = cleanrl_ppo.main(["--num-envs", "4", "--num-steps", "32", "--total-steps", "256", "--hidden", "32"])
    assert result["learner_steps"] == 256


def test_openspiel_ismcts_example_runs() -> None:
    pytest.importorskip("pyspiel")
    from examples import openspiel_ismcts

    result = openspiel_ismcts.play(games=2, simulations=3, seed=0, max_moves=6)
    assert result["moves"] == 12 and result["unfinished"] == 2
