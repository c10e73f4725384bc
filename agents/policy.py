"""PolicyAgent: plays from a trained checkpoint (``training/ppo.py``).

    make_agent("policy")                                   # the shipped reference bot
    make_agent("policy", checkpoint="runs/.../policy.pt")  # your own
    burako-eval --a policy --b planner

``greedy=True`` (default) plays the most probable legal action; ``greedy=False``
samples from the masked policy (``temperature`` scales the logits). The
checkpoint is read with ``weights_only=True``; a Rummy policy is refused when
the agent is built (play it with ``rummy-policy``, agents/rummy_policy.py), one
made for another observation/action layout than the table's at ``reset``.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import torch

from agents import checkpoint as ckpt
from agents.base import SeatView
from agents.network import GAME_ACTIONS, PolicyNet, masked_logits
from agents.options import bool_option, real_option
from burako_env.observation import layout_id
from burako_env.rules import Rules, load_rules

#: the shipped bot, trained by configs/ppo_reference.yaml (docs/training/README.md, "The shipped bot's run")
DEFAULT_CHECKPOINT = Path(__file__).resolve().parent / "checkpoints" / "burako_ppo.pt"


class PolicyAgent:
    name = "policy"
    #: the game this agent plays; a checkpoint of the other game is refused (agents/checkpoint.py)
    game = "burako"

    def __init__(
        self,
        seed: int | None = None,
        checkpoint: str | None = None,
        net: PolicyNet | None = None,
        greedy: bool = True,
        temperature: float = 1.0,
    ) -> None:
        if checkpoint is not None and net is not None:
            raise ValueError("PolicyAgent takes checkpoint= (a file) or net= (a PolicyNet), not both")
        checkpoint = self.checkpoint_file(checkpoint, net)
        # an infinite temperature made every action as likely as any, the masked ones too
        temperature = real_option("temperature", temperature, 0.0, low_open=True)
        greedy = bool_option("greedy", greedy)
        if net is None:
            net, _ = ckpt.build_policy(ckpt.load(str(checkpoint)), source=str(checkpoint))
        dtypes = {p.dtype for p in net.parameters()}
        if dtypes != {torch.float32}:  # a half network failed at the first real move ("same dtype")
            raise ValueError(
                f"PolicyAgent plays a float32 network, got parameters of {sorted(map(str, dtypes))}: pass net.float()"
            )
        self.net = net
        self.source = str(checkpoint) if checkpoint is not None else "network"
        ckpt.check_game(net.shape, self.game, self.source)
        self.greedy = greedy
        self.temperature = float(temperature)
        self.generator = torch.Generator().manual_seed(int(np.random.SeedSequence(seed).generate_state(1)[0]))
        self.seat = -1

    @classmethod
    def default_checkpoint(cls) -> str:
        """The checkpoint played when none is given: the shipped reference bot."""
        return str(DEFAULT_CHECKPOINT)

    @classmethod
    def checkpoint_file(cls, checkpoint: str | Path | None, net: PolicyNet | None = None) -> str | None:
        """The checkpoint an agent built with these options loads: the one given, else (no network
        given) :meth:`default_checkpoint`."""
        if checkpoint is not None:
            return str(checkpoint)
        return None if net is not None else cls.default_checkpoint()

    @classmethod
    def files_read(cls, options: Mapping[str, Any]) -> list[str]:
        """The checkpoint an agent built with ``options`` loads (:func:`agents.registry.agent_files`)."""
        try:
            path = cls.checkpoint_file(options.get("checkpoint"), options.get("net"))
        except ValueError:  # no default (rummy-policy): building the agent says so
            return []
        return [] if path is None else [path]

    def table_layout(self, rules: Any, num_players: int) -> str:
        """The observation/action layout of the table the agent sits at."""
        return layout_id(num_players, load_rules(rules or "burako"))

    def reset(self, seat: int, rules: Rules | Any = None, num_players: int = 2) -> None:
        ckpt.check_layout(self.net.shape, self.table_layout(rules, num_players), self.source)
        self.seat = seat

    @torch.no_grad()
    def act(self, observation: Any, view: SeatView | None = None) -> int:
        mask_np = np.asarray(observation["action_mask"], dtype=bool)
        shape = self.net.shape
        if mask_np.shape != (GAME_ACTIONS[shape.game],):
            raise ValueError(
                f"{self.name}.act: the action mask has shape {mask_np.shape}; this {shape.game} network "
                f"plays {GAME_ACTIONS[shape.game]} actions"
            )
        legal = np.flatnonzero(mask_np)
        if legal.size == 0:
            raise ValueError(f"{self.name}.act: the action mask has no legal action")
        if legal.size == 1:
            return int(legal[0])
        obs_np = np.asarray(observation["observation"], dtype=np.float32)
        if obs_np.shape != (shape.obs_size,):
            raise ValueError(
                f"{self.name}.act: the observation has shape {obs_np.shape}; this network reads "
                f"({shape.obs_size},) ({shape.num_players} players, layout {shape.layout[:60]}...)"
            )
        obs = torch.from_numpy(obs_np).unsqueeze(0)
        logits, _ = self.net(obs)
        if self.greedy:
            return int(torch.argmax(masked_logits(logits[0], torch.from_numpy(mask_np))))
        # the legal logits alone, shifted to a maximum of 0 before the temperature divides them: masking
        # first and dividing after gave illegal moves weight at a temperature of 1e38, and a tiny one
        # overflowed the legal logits to inf (softmax NaN)
        legal_t = torch.from_numpy(legal)
        chosen = logits[0, legal_t].double()
        probs = torch.softmax((chosen - chosen.max()) / self.temperature, dim=0)
        return int(legal[int(torch.multinomial(probs, 1, generator=self.generator))])
