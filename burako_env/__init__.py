"""burako_env: Burako (and Rummy, burako_env.rummy) as pure engines and PettingZoo AEC environments.

import burako_env
env = burako_env.env(num_players=2)      # rules="burako" by default
env.reset(seed=0)
"""

from burako_env.actions import NUM_ACTIONS, describe_action
from burako_env.engine import GameState, IllegalActionError, Phase
from burako_env.env import env, parallel_env, raw_env
from burako_env.observation import observation_layout, split_observation
from burako_env.rules import Rules, RulesError, load_rules, preset_names
from burako_env.rummy.env import rummy_env, rummy_raw_env

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
