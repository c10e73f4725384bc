"""Rummy, the rule sheets' second game (docs/rules.md Part 3): engine, exact masks, PettingZoo env.

import burako_env
env = burako_env.rummy_env(num_players=3)   # rules="rummy" by default
env.reset(seed=0)
"""

from burako_env.rummy.actions import NUM_ACTIONS, describe_action
from burako_env.rummy.engine import IllegalActionError, Phase, RummyState
from burako_env.rummy.env import rummy_env, rummy_raw_env
from burako_env.rummy.rules import RummyRules, load_rummy_rules, rummy_preset_names

__all__ = [
    "NUM_ACTIONS",
    "IllegalActionError",
    "Phase",
    "RummyRules",
    "RummyState",
    "describe_action",
    "load_rummy_rules",
    "rummy_env",
    "rummy_preset_names",
    "rummy_raw_env",
]
