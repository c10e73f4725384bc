"""RLlib PPO with action masking against a fixed opponent.

    bash scripts/install_rllib.sh            # its own venv, .venv-rllib (see below)
    .venv-rllib/bin/python -m examples.rllib_ppo --minutes 10 --opponent random --eval-games 400

Trains RLlib's PPO (new API stack) on :class:`burako_env.gym.BurakoGymEnv`
through :func:`burako_env.rllib.rllib_env`, which hands RLlib the observation
as its action-masking RL module expects it (``"observations"`` and a float
``"action_mask"``); the module is RLlib's own
``ActionMaskingTorchRLModule``: the mask sets the logits of illegal actions to
the most negative float before sampling. Then the greedy policy plays
``--eval-games`` duplicate games (``training.evaluate``: each deal twice,
seats swapped) against each ``--eval-opponents``.

Why a venv of its own: ``ray[rllib]`` 2.60 pins ``gymnasium==1.2.2`` while the
project's main venv has a newer gymnasium; burako_env runs on both, so
``scripts/install_rllib.sh`` installs the project (core, with the
``tournament`` extra for the evaluation) and ``ray[rllib]`` into
``.venv-rllib``. Everything runs in this process (no remote env runners or
learners): RLlib's own workers would only fight over a small machine's cores.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import numpy as np

from examples.common import add_evaluation_arguments, finish


class RLlibAgent:
    """A trained RLlib module as an agent (``agents/base.py``): greedy over
    the legal actions."""

    name = "rllib"

    def __init__(self, module: Any) -> None:
        self.module = module

    def reset(self, seat: int, rules: Any = None, num_players: int = 2) -> None:
        pass

    def act(self, observation: Any, view: Any = None) -> int:
        import torch
        from ray.rllib.core.columns import Columns

        mask = np.asarray(observation["action_mask"], dtype=np.float32)
        batch = {
            Columns.OBS: {
                "observations": torch.from_numpy(np.asarray(observation["observation"], dtype=np.float32))[None],
                "action_mask": torch.from_numpy(mask)[None],
            }
        }
        with torch.no_grad():
            logits = self.module.forward_inference(batch)[Columns.ACTION_DIST_INPUTS][0].numpy()
        logits = np.where(mask > 0, logits, -np.inf)
        return int(np.argmax(logits))


def build(*, opponent: str, seed: int, batch_size: int, minibatch_size: int, epochs: int, hidden: int) -> Any:
    """The PPO algorithm, all in this process."""
    import ray
    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.rllib.core.rl_module.rl_module import RLModuleSpec
    from ray.rllib.examples.rl_modules.classes.action_masking_rlm import ActionMaskingTorchRLModule
    from ray.tune.registry import register_env

    from burako_env.rllib import rllib_env

    if not ray.is_initialized():
        ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False, configure_logging=False)
    register_env("burako_single", rllib_env)
    config = (
        PPOConfig()
        .environment("burako_single", env_config={"opponents": opponent, "learner_seat": "random"})
        .env_runners(num_env_runners=0, num_envs_per_env_runner=1)
        .learners(num_learners=0)
        .rl_module(
            rl_module_spec=RLModuleSpec(
                module_class=ActionMaskingTorchRLModule,
                model_config={"fcnet_hiddens": [hidden, hidden], "head_fcnet_hiddens": [hidden]},
            )
        )
        .training(
            train_batch_size_per_learner=batch_size,
            minibatch_size=minibatch_size,
            num_epochs=epochs,
            lr=3e-4,
            gamma=0.999,
            lambda_=0.95,
            entropy_coeff=0.01,
        )
        .debugging(seed=seed)
    )
    return config.build_algo()


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description="RLlib PPO with action masking on burako_env.rllib.rllib_env")
    parser.add_argument("--opponent", default="random", help="registry name of the training opponent")
    parser.add_argument("--iterations", type=int, default=1_000_000, help="PPO iterations at most")
    parser.add_argument("--minutes", type=float, default=10.0, help="wall-clock training budget")
    parser.add_argument("--batch-size", type=int, default=2048, help="learner steps per iteration")
    parser.add_argument("--minibatch-size", type=int, default=256)
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--hidden", type=int, default=128)
    add_evaluation_arguments(parser)
    args = parser.parse_args(argv)

    import ray
    import torch

    torch.set_num_threads(1)
    algo = build(
        opponent=args.opponent,
        seed=args.seed,
        batch_size=args.batch_size,
        minibatch_size=args.minibatch_size,
        epochs=args.epochs,
        hidden=args.hidden,
    )
    start = time.monotonic()
    stop_at = start + args.minutes * 60.0
    iterations, returns = 0, []
    while iterations < args.iterations and time.monotonic() < stop_at:
        result = algo.train()
        iterations += 1
        returns.append(float(result.get("env_runners", {}).get("episode_return_mean", float("nan"))))
    seconds = time.monotonic() - start
    learner_steps = int(result.get("num_env_steps_sampled_lifetime", 0) or 0) if iterations else 0
    results: dict[str, Any] = {
        "library": f"ray[rllib] {ray.__version__} PPO + ActionMaskingTorchRLModule",
        "train_opponent": args.opponent,
        "iterations": iterations,
        "learner_steps": learner_steps,
        "train_seconds": round(seconds, 1),
        "steps_per_second": round(learner_steps / max(seconds, 1e-9), 1),
        "episode_return_mean_by_iteration": [round(r, 4) for r in returns],
    }
    agent = RLlibAgent(algo.get_module())
    finish(results, "rllib", lambda: agent, args)
    algo.stop()
    ray.shutdown()
    return results


if __name__ == "__main__":
    main()
