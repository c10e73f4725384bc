"""burako_env: Burako (and Rummy, burako_env.rummy) as pure engines and PettingZoo AEC environments.

import burako_env
env = burako_env.env(num_players=2)      # rules="burako" by default
env.reset(seed=0)
"""

from typing import Any

from burako_env.actions import NUM_ACTIONS, describe_action
from burako_env.engine import GameState, IllegalActionError, Phase
from burako_env.env import env, parallel_env, raw_env
from burako_env.observation import observation_layout, split_observation
from burako_env.rules import Rules, RulesError, load_rules, preset_names

__all__ = [
    "NUM_ACTIONS",
    "GameState",
    "IllegalActionError",
    "Phase",
    "Rules",
    "RulesError",
    "describe_action",
    "env",
    "load_rules",
    "observation_layout",
    "parallel_env",
    "preset_names",
    "raw_env",
    "rummy_env",
    "rummy_raw_env",
    "split_observation",
]
__version__ = "0.1.0"

#: the Rummy environment, imported on first use (it builds the partition DP's tables: Burako users skip it)
_LAZY_RUMMY = ("rummy_env", "rummy_raw_env")


def __getattr__(name: str) -> Any:
    if name in _LAZY_RUMMY:
        from burako_env.rummy import env as rummy_env_module

        return getattr(rummy_env_module, name)
    raise AttributeError(f"module 'burako_env' has no attribute {name!r}")
