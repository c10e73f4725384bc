"""The single-agent env in the layout RLlib's action masking expects.

    from ray.tune.registry import register_env
    from burako_env.rllib import rllib_env
    register_env("burako", rllib_env)      # env_config: BurakoGymEnv's keyword arguments

RLlib's action-masking RL module
(``ray.rllib.examples.rl_modules.classes.action_masking_rlm``) reads a dict
observation with the keys ``"observations"`` and ``"action_mask"`` and takes
the log of the mask, so the mask must be float. :class:`RLlibObservation`
renames and converts; nothing else changes (rewards, episodes, opponents and
seeds are :class:`~burako_env.gym.BurakoGymEnv`'s). This module imports
neither ray nor torch: ``examples/rllib_ppo.py`` shows the whole loop.

| key              | dtype   | shape            | what                                  |
|------------------|---------|------------------|---------------------------------------|
| ``observations`` | float32 | (OBS_SIZE,)      | the learner's observation vector      |
| ``action_mask``  | float32 | (NUM_ACTIONS,)   | 1.0 for each legal action, else 0.0   |
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import gymnasium
import numpy as np
from gymnasium import spaces

from burako_env.gym import BurakoGymEnv


class RLlibObservation(gymnasium.ObservationWrapper):
    """``{"observation", "action_mask" (int8)}`` →
    ``{"observations", "action_mask" (float32)}`` (module docstring)."""

    def __init__(self, env: gymnasium.Env) -> None:
        super().__init__(env)
        inner = env.observation_space
        if not isinstance(inner, spaces.Dict) or set(inner.spaces) != {"observation", "action_mask"}:
            raise ValueError(f"expected a dict observation with 'observation' and 'action_mask', got {inner}")
        mask_space = inner["action_mask"]
        self.observation_space = spaces.Dict(
            {
                "observations": inner["observation"],
                "action_mask": spaces.Box(low=0.0, high=1.0, shape=mask_space.shape, dtype=np.float32),
            }
        )

    def observation(self, observation: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        return {
            "observations": observation["observation"],
            "action_mask": observation["action_mask"].astype(np.float32),
        }

    def action_masks(self) -> np.ndarray:
        """The learner's legal actions as a bool array (as the wrapped env)."""
        return self.env.unwrapped.action_masks()


def rllib_env(config: Mapping[str, Any] | None = None) -> RLlibObservation:
    """An env creator for ``ray.tune.registry.register_env``: ``config``
    (RLlib's ``env_config``) holds :class:`BurakoGymEnv`'s keyword
    arguments."""
    return RLlibObservation(BurakoGymEnv(**dict(config or {})))
