"""Stable-Baselines3 (sb3-contrib MaskablePPO) against a fixed opponent.

    pip install -e ".[sb3]"     # or: bash scripts/install.sh (CI installs every extra)
    python -m examples.sb3_maskable_ppo --minutes 10 --opponent planner --eval-games 400

Trains sb3-contrib's ``MaskablePPO`` on :class:`burako_env.gym.BurakoGymEnv`
(one learner seat, the opponents played inside ``step``; the learner's seat
is drawn at each reset), for ``--minutes`` of wall time or ``--steps``
learner steps, whichever comes first, then evaluates the trained policy on
``--eval-games`` duplicate games (``training.evaluate``: each deal played
twice with the seats swapped) against ``random`` and, if asked, the planner.
The policy's network reads both entries of the observation dict (the vector
and the mask); the mask also goes to the masked distribution
(``action_masks()``), as MaskablePPO expects.

Torch runs on one thread (``torch.set_num_threads(1)``): on a small CPU
machine more threads only fight over the cores with the env.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import numpy as np

from examples.common import add_evaluation_arguments, finish


class SB3Agent:
    """A trained MaskablePPO policy as an agent (``agents/base.py``):
    greedy (deterministic) over the legal actions."""

    name = "sb3"

    def __init__(self, model: Any, seed: int | None = None) -> None:
        self.model = model
        self.seat = -1

    def reset(self, seat: int, rules: Any = None, num_players: int = 2) -> None:
        self.seat = seat

    def act(self, observation: Any, view: Any = None) -> int:
        mask = np.asarray(observation["action_mask"])
        obs = {"observation": np.asarray(observation["observation"]), "action_mask": mask}
        action, _ = self.model.predict(obs, action_masks=mask.astype(bool), deterministic=True)
        return int(action)


def make_env(opponent: str, seed: int) -> Any:
    from burako_env.gym import BurakoGymEnv

    env = BurakoGymEnv(opponents=opponent, learner_seat="random")
    env.reset(seed=seed)
    return env


class _Deadline:
    """An SB3 callback that stops training at a wall-clock deadline."""

    def __new__(cls, seconds: float) -> Any:
        from stable_baselines3.common.callbacks import BaseCallback

        class Deadline(BaseCallback):
            def __init__(self) -> None:
                super().__init__()
                self.stop_at = time.monotonic() + seconds

            def _on_step(self) -> bool:
                return time.monotonic() < self.stop_at

        return Deadline()


def train(
    *, opponent: str, steps: int, minutes: float, seed: int, n_envs: int = 8, n_steps: int = 128, batch_size: int = 256
) -> tuple[Any, dict[str, Any]]:
    import torch
    from sb3_contrib import MaskablePPO
    from stable_baselines3.common.vec_env import DummyVecEnv, VecMonitor

    torch.set_num_threads(1)
    # several games in one process: the policy runs once per batch of decisions
    env = VecMonitor(DummyVecEnv([lambda i=i: make_env(opponent, seed + i) for i in range(n_envs)]))

    model = MaskablePPO(
        "MultiInputPolicy",
        env,
        n_steps=n_steps,
        batch_size=batch_size,
        n_epochs=4,
        learning_rate=3e-4,
        gamma=0.999,
        gae_lambda=0.95,
        ent_coef=0.01,
        policy_kwargs={"net_arch": [128, 128]},
        seed=seed,
        verbose=0,
    )
    start = time.monotonic()
    model.learn(total_timesteps=steps, callback=_Deadline(minutes * 60.0))
    seconds = time.monotonic() - start
    returns = [float(info["r"]) for info in model.ep_info_buffer]
    tail = returns[-100:]
    return model, {
        "learner_steps": int(model.num_timesteps),
        "train_seconds": round(seconds, 1),
        "steps_per_second": round(model.num_timesteps / max(seconds, 1e-9), 1),
        "episodes": len(returns),
        "mean_return_last_100": float(np.mean(tail)) if tail else None,  # NaN is not JSON
    }


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description="MaskablePPO (sb3-contrib) on burako_env.gym.BurakoGymEnv")
    parser.add_argument("--opponent", default="planner", help="registry name of the training opponent")
    parser.add_argument(
        "--steps",
        type=int,
        default=10_000_000,
        help="learner steps (SB3 rounds up to whole rollouts of --n-steps x --n-envs)",
    )
    parser.add_argument("--minutes", type=float, default=10.0, help="wall-clock training budget")
    parser.add_argument("--n-envs", type=int, default=8, help="games per rollout batch")
    parser.add_argument("--n-steps", type=int, default=128, help="rollout length per game per update")
    parser.add_argument("--batch-size", type=int, default=256)
    add_evaluation_arguments(parser)
    args = parser.parse_args(argv)
    model, stats = train(
        opponent=args.opponent,
        steps=args.steps,
        minutes=args.minutes,
        seed=args.seed,
        n_envs=args.n_envs,
        n_steps=args.n_steps,
        batch_size=args.batch_size,
    )
    results: dict[str, Any] = {"library": "sb3-contrib MaskablePPO", "train_opponent": args.opponent, **stats}
    out = finish(results, "sb3", lambda: SB3Agent(model), args)
    if out is not None:
        model.save(out / "maskable_ppo")
    return results


if __name__ == "__main__":
    main()
