"""RummyPolicyAgent: plays Rummy from a checkpoint trained by ``burako-train`` with ``game: rummy``.

    make_agent("rummy-policy", checkpoint="runs/rummy2p__ppo_rummy__1__.../policy.pt")
    burako-eval --game rummy --a rummy-policy:checkpoint=PATH --b random

The same agent as :class:`agents.policy.PolicyAgent` (greedy or sampled,
``temperature``), for Rummy's observation and 56 actions
(burako_env/rummy/observation.py, actions.py). A Burako checkpoint is refused
when the agent is built, with an error naming the ``policy`` agent that plays
it. Rummy's layout is the same for 2 to 4 players, so a policy trained at one
player count can sit at another.
"""

from __future__ import annotations

from typing import Any

from agents.policy import PolicyAgent
from burako_env.rummy.observation import layout_id


class RummyPolicyAgent(PolicyAgent):
    name = "rummy-policy"
    game = "rummy"

    @classmethod
    def default_checkpoint(cls) -> str:
        raise ValueError(
            "rummy-policy needs checkpoint=PATH: a Rummy policy written by "
            "burako-train --config configs/ppo_rummy.yaml (its run folder's policy.pt)"
        )

    def table_layout(self, rules: Any, num_players: int) -> str:
        return layout_id()
