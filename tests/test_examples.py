"""Each example under examples/ runs, briefly, with tiny settings."""

from __future__ import annotations

import json
import os
import subprocess
import warnings
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
RLLIB_PYTHON = ROOT / ".venv-rllib" / "bin" / "python"


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


def test_rllib_observation_is_what_rllibs_action_masking_module_reads() -> None:
    """``burako_env.rllib``: keys ``observations`` and a float ``action_mask``
    (RLlib takes its log), in the declared space; gymnasium's checker passes."""
    from gymnasium.utils.env_checker import check_env

    from burako_env.gym import BurakoGymEnv
    from burako_env.rllib import rllib_env

    env = rllib_env({"opponents": "random", "learner_seat": 1})
    twin = BurakoGymEnv(opponents="random", learner_seat=1)
    obs, _ = env.reset(seed=3)
    raw, _ = twin.reset(seed=3)
    assert set(obs) == {"observations", "action_mask"} and obs["action_mask"].dtype == np.float32
    assert env.observation_space.contains(obs)
    assert np.array_equal(obs["observations"], raw["observation"])
    assert np.array_equal(obs["action_mask"], raw["action_mask"].astype(np.float32))
    assert np.array_equal(env.action_masks(), obs["action_mask"] > 0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # unbounded Box warnings (scores)
        check_env(rllib_env({"opponents": "random"}), skip_render_check=True)


def test_rllib_ppo_example_trains_and_evaluates_in_its_own_venv() -> None:
    """examples/rllib_ppo.py, one tiny PPO iteration, in .venv-rllib
    (scripts/install_rllib.sh; RLlib pins an older gymnasium). CI installs
    that venv, so there a missing one is a failure, not a skip."""
    if not RLLIB_PYTHON.exists():
        if os.environ.get("CI"):
            pytest.fail(".venv-rllib is missing: scripts/test.sh runs scripts/install_rllib.sh")
        pytest.skip("no .venv-rllib (bash scripts/install_rllib.sh)")
    args = ["--iterations", "1", "--batch-size", "256", "--minibatch-size", "64", "--epochs", "1"]
    args += ["--hidden", "32", "--eval-games", "2", "--minutes", "5"]
    done = subprocess.run(
        [str(RLLIB_PYTHON), "-m", "examples.rllib_ppo", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "RAY_DISABLE_USAGE_STATS": "1", "PYTHONWARNINGS": "ignore"},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout[done.stdout.index("{\n") :])
    assert result["iterations"] == 1 and result["learner_steps"] >= 256
    (evaluation,) = result["evaluations"]
    assert evaluation["games"] == 2 and 0.0 <= evaluation["win_rate"] <= 1.0


def test_the_readmes_python_snippets_run_as_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every ```python block of README.md runs (the rules block with a real YAML file for its
    ``path/to/my_table.yaml``). The engine snippet played an unseeded hand and read its scores: a void
    hand (about 6 in 10) has none, so it failed with a TypeError most of the time."""
    import re

    text = (ROOT / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    assert len(blocks) >= 5
    (tmp_path / "path" / "to").mkdir(parents=True)
    (tmp_path / "path" / "to" / "my_table.yaml").write_text("preset: burako\ntarget: 2000\n")
    monkeypatch.chdir(tmp_path)
    for block in blocks:
        namespace: dict[str, object] = {}
        if "burako_env.env(" in block and "import burako_env" not in block:
            exec("import burako_env", namespace)  # the rules block continues the quick example
        exec(compile(block, "README.md", "exec"), namespace)
