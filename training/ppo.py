"""Masked PPO self-play against a league (``burako-train``).

    burako-train --config configs/ppo_selfplay.yaml
    burako-train --config configs/ppo_smoke.yaml --set total_steps=20000 --seed 3
    burako-train --resume runs/burako__ppo_selfplay__1__20261129-140000
    burako-train --config configs/ppo_rummy.yaml --seed 3            # Rummy (game: rummy)

The algorithm in one page (CleanRL's PPO, adapted to a turn-based game):

1. ``num_envs`` games run side by side on the pure engine. Each game seats
   the learner on one side (random) and an opponent from the
   :class:`~training.league.League` on the other: the current policy itself
   (then every seat is a learner seat), a frozen snapshot, or a baseline
   agent. Opponents move inside the rollout, so every learner decision is
   credited with its own side's result, never the opponent's.
2. Each step, every game makes one decision: learner seats of all games are
   batched through the network (masked logits: illegal actions have
   probability 0), snapshots are batched per snapshot, baselines act
   through the agent interface. Forced moves (one legal action) are played
   without being stored: they cannot change the policy.
3. A learner seat's decisions of one hand form an episode; its reward comes
   at the end of the hand (``win_weight`` x win/loss + ``score_weight`` x
   score difference / ``reward_scale``). An update uses the episodes that
   *finished* during the rollout (at least ``batch_size`` decisions), so
   advantages (GAE) never need a bootstrap; unfinished hands carry over to
   the next rollout (their log-probabilities are the behaviour policy's,
   which PPO's ratio accounts for).
4. ``update_epochs`` passes of clipped-surrogate PPO over minibatches, value
   loss, entropy bonus, gradient clipping, optional early stop on KL.
5. Optional warm start (``bc_teacher``): before PPO, the network is fitted
   to a baseline's moves and results (behaviour cloning of games between
   two copies of the teacher, :mod:`training.cloning`), so self-play starts
   from sensible play.

Two games (``game``): Burako (above: sides, 2 players or 4 in
partnerships) and Rummy (``game: rummy`` or a Rummy rules preset: 2 to 4
players, each for himself; every learner seat is credited with its own
result, the lower hand total winning, R10: :mod:`training.rummy_rollout`).
Everything else (league, PPO update, schedules, logging, evaluation,
checkpoints, resume) is the same code for both.

This file reads in that order: the config, the rollout (the games are
played by :class:`~training.rollout.VectorRollout` on the compiled core, or
:class:`~training.engine_rollout.EngineRollout` on the readable engine, or
for Rummy :class:`~training.rummy_rollout.RummyRollout` on its pure engine),
the advantage (:func:`gae`), the update (:meth:`Trainer._ppo_update`), the
evaluation and the logging of the main loop (:meth:`Trainer.train`).
Resuming (run folders, the training checkpoint) is :mod:`training.resume`.

Logging goes to TensorBoard under ``runs/{env}__{exp}__{seed}__{time}``:
``charts/SPS``, ``charts/episodic_return``, ``charts/episodic_length``,
``charts/truncated_share`` (the last 200 hands cut at ``max_turns``, self-play included),
``losses/*`` (``explained_variance`` against GAE's returns, which contain the values;
``explained_variance_mc`` against each decision's own discounted result; ``wide_minibatches``
with ``overlap_rollout`` and ``update_threads``: the update's minibatches run on ``update_threads``),
``eval/winrate_vs_<baseline>`` (+ ``_low``/``_high``, the 95%
interval over duplicate deal pairs), ``league/size``; hyper-parameters as a
text table. Checkpoints (``checkpoints/latest.pt``, every
``checkpoint_every`` updates, and ``final.pt``) hold everything needed to
resume; ``policy.pt`` is the small exported policy that
:class:`agents.policy.PolicyAgent` plays (with ``average_kept_policies``, the
mean of the last network and the last kept policies; the last network alone
is then ``policy_last.pt``).
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import dataclasses
import itertools
import math
import os
import re
import sys
import time
import typing
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numba
import numpy as np
import torch
from torch import nn
from tqdm import tqdm

from agents import checkpoint as ckpt
from agents.network import CompactRows, NetworkShape, PolicyNet, SparseBatch, SparseRows, StackedTorsos, parameter_count
from agents.options import split_assignment, yaml_value
from agents.registry import agent_names, is_agent, make_agent
from burako_env.observation import Observer
from burako_env.records import GAMES
from burako_env.rules import Rules, RulesError, load_rules
from burako_env.rummy.rules import RummyRules, load_rummy_rules
from burako_env.safe_yaml import load_yaml, read_text_file, short_repr
from training.cloning import behaviour_clone
from training.config_fields import check_dataclass_fields
from training.engine_rollout import EngineRollout, hand_reward
from training.evaluate import AgentSpec, evaluate
from training.fast_evaluate import evaluate_network
from training.files import LAST_POLICY_FILE, POLICY_FILE, check_output_file, kept_policy_path, kept_policy_updates
from training.games import check_agent_game, game_and_rules
from training.league import League, member_tag, share_problem
from training.locks import folder_lock
from training.memory import keep_freed_memory
from training.network import (
    LegalIndex,
    SnapshotGroups,
    anchor_kl,
    evaluate_actions_dense,
    legal_figures,
)
from training.resume import latest_checkpoint, new_run_dir, record_config, restore, save_checkpoint
from training.rollout import VectorRollout, episode_batch, episode_length, unpack_masks
from training.rummy_rollout import RummyRollout
from training.schedule import PACE_CHECK_UPDATES, pace_warning, schedule_problems, scheduled_values
from training.signals import sigterm_as_interrupt

#: names tests and scripts import from here, whose homes are the modules above
__all__ = ["PPOConfig", "Trainer", "gae", "hand_reward", "latest_checkpoint", "load_config", "main", "new_run_dir"]

#: what exp_name may hold: it is part of the run folder's name
_RUN_NAME = re.compile(r"[A-Za-z0-9._-]{1,100}")


# ====================================================================== configuration
@dataclass
class PPOConfig:
    """Every hyper-parameter of a run; a YAML file sets any subset."""

    exp_name: str = "ppo"
    """Experiment name, part of the run folder's name."""
    seed: int = 1
    """Seeds the deals, the league's choices, the network's initialisation and sampling."""
    game: str | None = None
    """burako or rummy (None: rummy when ``rules`` is a Rummy preset, else burako; as burako-eval's --game)."""
    rules: str | None = None
    """Rules preset name or YAML path of the game (burako_env.rules, burako_env.rummy.rules); None: the game's own."""
    num_players: int = 2
    """Burako: 2, or 4 in partnerships (partners share the policy). Rummy: 2 to 4, each for himself."""
    total_steps: int = 1_000_000
    """Learner decisions (stored, non-forced) to train on."""
    max_minutes: float | None = None
    """Wall-clock budget in minutes over all resumed parts of the run; stops after the update that crosses it."""
    max_updates: int | None = None
    """PPO updates over all resumed parts of the run (None: no bound); unlike the clock, a rerun repeats it."""
    num_envs: int = 64
    """Games played side by side in the rollout."""
    batch_size: int = 8192
    """Learner decisions from finished hands per update (at least)."""
    minibatch_size: int = 1024
    """Decisions per gradient step."""
    minibatch_split: str = "equal"
    """How an epoch splits its batch. ``equal``: into ``round(n / minibatch_size)`` minibatches of
    near-equal size, the epoch's mean KL checked against ``target_kl`` and its means logged.
    ``fixed`` (every run before 2026-12-06): minibatches of ``minibatch_size`` and one of the
    leftover (a batch overshoots ``batch_size`` by the hands it finished: 50-150 rows, once 2), which
    took a full optimizer step on a few rows, and whose KL alone decided ``target_kl``."""
    update_epochs: int = 4
    """Passes over each batch."""
    learning_rate: float = 2.5e-4
    """Adam step size (linearly annealed to 0 over total_steps when anneal_lr)."""
    anneal_lr: bool = True
    """Anneal the learning rate linearly."""
    gamma: float = 1.0
    """Discount per learner decision (1: the hand's result is what counts)."""
    gae_lambda: float = 0.95
    """GAE lambda."""
    clip_coef: float = 0.2
    """PPO ratio clip."""
    clip_vloss: bool = True
    """Clip the value loss as in PPO2."""
    ent_coef: float = 0.01
    """Entropy bonus coefficient."""
    vf_coef: float = 0.5
    """Value loss coefficient."""
    max_grad_norm: float = 0.5
    """Gradient norm clip."""
    target_kl: float | None = None
    """Stop an update's epochs early when approx_kl exceeds this (None: never)."""
    win_weight: float = 0.5
    """Reward: weight of the hand's win (+1) / loss (-1) / draw (0)."""
    score_weight: float = 1.0
    """Reward: weight of the side's score minus the other side's, / reward_scale."""
    reward_scale: float = 1000.0
    """Divides the score difference (a Burako hand is a few hundred points; configs/ppo_rummy.yaml: 100)."""
    truncated_reward: float = 0.0
    """Reward of every learner seat (and cloning's value target) in a Burako hand cut at ``max_turns``
    (unscored, V3a; burako_env.outcomes.side_reward). At 0 a
    stalled hand is as good as a draw, which self-play learns to exploit (docs/training/README.md,
    "Self-play learns to stall"); below 0 it is worse than a draw for both sides. Rummy hands
    always end (R9)."""
    hidden: int = 256
    """Torso width of the network."""
    slot_embed: int = 16
    """Features per meld slot from the shared slot encoder."""
    value_torso: bool = False
    """Give the value head a torso of its own (``agents.network.NetworkShape.value_torso``): the value
    loss then no longer shapes the policy's torso, only the shared slot encoder."""
    unseen_input: bool = False
    """The torso also reads, per tile kind, the copies the seat cannot locate, derived from its
    observation (``agents.network.UnseenCounts``; no parameters, the env's layout unchanged)."""
    privileged_value: bool = False
    """The value also reads what the seat cannot see (the other hands, the stock, the muertos, the
    next draws: burako_env/privileged.py), recorded by the rollout beside each decision: a critic
    for training only, the policy never reads it (``agents.network.NetworkShape.privileged_value``).
    Needs ``rollout: vector``; behaviour cloning fits the value without it (zeros)."""
    score_potential: bool = False
    """Potential-based shaping: each decision's advantage reads the value plus the potential
    ``score_weight`` x the seat's side's margin over what the sides have on the table
    (``burako_env.outcomes.table_totals``: melds, canasta bonuses, an untaken muerto's penalty) /
    ``reward_scale``, so a meld, a canasta or the muerto counts in the advantages of the decision that
    made it, not only through the hand's result; every hand's return is unchanged (the potential is 0
    once the hand is over). The value head learns the rest (``NetworkShape.score_potential``). Burako
    with ``rollout: vector``; behaviour cloning fits the value to the result less the potential."""
    league_baselines: list[str] = field(default_factory=lambda: ["planner", "greedy", "random"])
    """Baseline agents in the league: registry names or ``module:Class`` (agents/registry.py)."""
    league_baseline_options: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Options of league baselines by name, as burako-eval's ``--a-opt`` (e.g. ``{fast_ismcts: {simulations:
    12}}`` for a search in the league); a baseline not named here plays with its defaults."""
    league_scheme: str = "prioritized"
    """Opponent sampling: uniform, or prioritized (toward opponents the learner beats least)."""
    self_play_fraction: float = 0.2
    """Share of games against the current policy itself."""
    baseline_fraction: float | None = None
    """Share of games against the baselines together (the snapshots get the rest); None: one pool for all."""
    snapshot_every: int = 10
    """Add a frozen snapshot of the policy to the league every this many updates (0: never)."""
    max_snapshots: int = 8
    """Snapshots kept in the league (oldest leave first)."""
    pfsp_power: float = 2.0
    """Prioritized sampling: weight = (1 - win rate) ** power."""
    bc_teacher: str | None = None
    """Warm start by behaviour cloning this baseline's play before PPO (None: start from scratch)."""
    bc_teacher_options: dict[str, Any] = field(default_factory=dict)
    """The teacher's options, as burako-eval's ``--a-opt`` (e.g. ``{simulations: 100}`` for a search teacher)."""
    bc_targets: str = "moves"
    """What cloning fits: the teacher's moves, or (``visits``) a search teacher's root visit shares over the
    legal moves (``neural_ismcts``: the expert-iteration target)."""
    bc_games: int = 1000
    """Teacher-vs-teacher games to clone."""
    bc_epochs: int = 3
    """Passes over the cloning data."""
    bc_holdout_games: int = 0
    """More teacher games (deals after ``bc_games``), never fitted: after every epoch the network's agreement
    and loss on them are logged (``bc/holdout_*``), so a clone's fit is measured on play it did not see."""
    bc_learning_rate: float = 1e-3
    """Adam step size while cloning."""
    init_checkpoint: str | None = None
    """Start a new run from this policy or training checkpoint's weights (the same network shape), not at random."""
    anchor_kl_coef: float = 0.0
    """Weight of KL(anchor || policy) over each decision's legal moves in the PPO loss, where the anchor
    is the network PPO started from (after ``bc_teacher``'s cloning, or ``init_checkpoint``'s weights),
    frozen and kept as the run folder's ``anchor.pt``: PPO may change the warm start's play only where
    its advantages outweigh the divergence, rather than drift from it (as AlphaStar kept its agents near
    their supervised policy). Schedulable; needs a warm start and ``policy_head: legal``. 0: off."""
    eval_every: int = 20
    """Evaluate against eval_opponents every this many updates (and at the end; 0: only at the end)."""
    eval_games: int = 200
    """Duplicate games per evaluation opponent (even)."""
    eval_opponents: list[str] = field(default_factory=lambda: ["planner", "greedy", "random"])
    """Baselines the policy is evaluated against (eval/winrate_vs_<name>); ``[]``: no evaluations (and
    no ``learning_curve.png``)."""
    eval_seed: int = 12345
    """Deal seed of the evaluations."""
    eval_deals: str = "fixed"
    """``fixed``: every evaluation plays the same deals (``eval_seed``), so one curve's points
    differ by the policy only, but its luck on those deals stays all run long (±0.07 at 200
    games); ``rotating``: each evaluation deals afresh (from ``eval_seed`` and the update), so
    averaging a curve's late points averages out the deals too."""
    checkpoint_every: int = 10
    """Write checkpoints/latest.pt every this many updates."""
    keep_policy_every: int = 0
    """Also export the policy (float16, ~3 MB) to ``policies/update_<n>.pt`` every this many updates (0:
    never): a learning curve against opponents too costly to play during training (``burako-curve``)."""
    average_kept_policies: int = 0
    """When > 0, the run's ``policy.pt`` is the mean of the weights of its last network and of the last this
    many policies it kept (``keep_policy_every``) before its last update, and the last network alone is
    ``policy_last.pt``: in the one run measured, the late policies averaged played steadier than its last
    network (docs/training/README.md, "Averaging the late policies"). A run that kept fewer averages those
    it has."""
    workers: int = 2
    """Processes for generating behaviour-cloning games."""
    torch_threads: int = 2
    """torch intra-op threads while the games are played (the rollout's small forward passes)."""
    update_threads: int | None = None
    """torch intra-op threads during the PPO update, when no game is played (None: every core). With
    ``overlap_rollout``, games are played beside the update: None keeps ``torch_threads`` for the whole
    update; a count is taken once the rollout beside it has collected its batch (the update's remaining
    minibatches run on it). Then the minibatch where that happens depends on the clock, so a run repeats
    itself only where torch's products give the same floats on both counts (this project's 2-core Zen 3:
    bench/README.md)."""
    overlap_rollout: bool = False
    """Play the next batch's games in a second thread while the update learns from this one (``rollout:
    vector`` only). The sequential loop leaves a core idle most of the time (its rollout runs on one
    thread, its update's small ops on one); overlapped, the two share the cores. The rollout acts with the
    weights from before the update it runs beside, so each batch is one update older than the network
    learning from it (PPO's ratios use the stored behaviour log-probabilities, so the loss is still the
    one of the data's policy); schedules apply to a batch's rollout one update earlier. torch keeps
    ``torch_threads`` while games are played (``update_threads`` once they are done). False: rollout, then
    update (every run before 2026-12-07). The lag costs strength: five full runs overlapped ended 0.673-0.696
    against the planner on held-out deals (mean 0.686), the three sequential runs of the same recipe
    0.705-0.708 (docs/training/README.md, "The narrow network overlapped"); a sixth with ``proximal_clip``
    0.679, as without it."""
    proximal_clip: bool = False
    """With ``overlap_rollout``: decoupled PPO (Hilton et al., 2021, "Batch size-invariance for policy
    optimization"). The ratio is clipped against the proximal policy, the network as the update starts
    (one forward pass over the batch before the epochs), not against the behaviour policy one update older
    that played the batch; each row's term is weighted by proximal / behaviour probability (at most
    ``BEHAVIOUR_WEIGHT_MAX``), so the objective is still the one of the data's policy. Without the overlap
    the two policies are one network and the option is refused. False: the ratio against the behaviour
    log-probabilities (every run before 2026-12-07 20:00 UTC). Measured once, it did not win back what the
    overlap costs: 0.679 against the planner on held-out deals (0.680 without it) (docs/training/README.md,
    "The overlapped loop with the decoupled objective"); +8% of a three-epoch update alone."""
    keep_freed_memory: bool = True
    """Keep the memory the update frees in the C heap for its next minibatch (glibc, training/memory.py): the
    update ~1.5x faster on a CPU. The setting holds for the whole process and cannot be undone, so False
    leaves the allocator as it is: glibc's defaults unless an earlier Trainer in the process set it."""
    precision: str = "float32"
    """The network's matrix products: float32, bfloat16 (autocast; the heads stay float32), or auto:
    bfloat16 on a CPU with AMX or a CUDA device with bf16 (``native_bfloat16``), else float32."""
    run_root: str = "runs"
    """Folder holding the run folders."""
    log_every: int = 1
    """Write training scalars every this many updates."""
    rollout: str | None = None
    """Where games are played: vector (the batched compiled core, training/rollout.py) or engine (the readable
    engine, one game at a time: the path before issue 15, kept for comparison in bench/bench_training.py).
    Rummy has only engine (its pure engine, training/rummy_rollout.py). None: vector for Burako, engine for Rummy."""
    policy_head: str = "legal"
    """Logits of the legal actions only (legal) or of all 3,519 then masked (full: the earlier path); same network."""
    device: str = "auto"
    """Torch device for the network: auto (cuda when present, else cpu), cpu, cuda, cuda:N."""
    env_threads: int | None = None
    """numba threads of the batched env (None: numba's default, every core)."""
    baseline_worker_share: float = 0.0
    """Share of the games whose league baselines move in a worker process while this one runs the
    forward passes and the other games' baselines (``rollout: vector`` only; training/baseline_worker.py):
    the same games, less waiting. 0: no worker; 1: every baseline there."""
    compiled_baselines: bool = True
    """The league's ``planner`` and ``greedy`` (with no option but ``weights``) play on the compiled core
    (``rollout: vector`` only; agents/fast_planner.py): the Python agents' moves, without a readable mirror
    of their games or the worker process. False: the Python agents (for comparisons)."""
    compiled_evaluations: bool = True
    """The training's evaluations against ``planner`` and ``greedy`` (with no option but ``weights``) play on
    the compiled core, every game side by side (training/fast_evaluate.py): the games ``burako-eval`` plays,
    but for a move whose best logits tie to the batched forward pass's rounding. False:
    ``training.evaluate.evaluate`` on the readable engine (every run before 2026-12-06 18:00 UTC)."""
    schedules: dict[str, list[list[Any]]] = field(default_factory=dict)
    """Values from a given update on: {field: [[update, value], ...]} (training/schedule.py)."""

    def __post_init__(self) -> None:
        # every value has its field's type first (YAML's "1e-3" is a string; "abc" is refused)
        problems = check_dataclass_fields(self)
        if problems:
            raise ValueError("bad training config: " + "; ".join(problems))
        if self.game is not None and self.game not in GAMES:
            raise ValueError(f"bad training config: game must be one of {list(GAMES)}, got {short_repr(self.game)}")
        try:  # the game and its rules, as burako-eval reads --game and --rules
            self.game, self.rules = game_and_rules(self.game, self.rules, "rules", "game")
        except ValueError as exc:
            raise ValueError(f"bad training config: {exc}") from None
        if self.rollout is None:
            self.rollout = "engine" if self.game == "rummy" else "vector"
        if not _RUN_NAME.fullmatch(self.exp_name):
            problems.append(
                f"exp_name must be 1-100 letters, digits, '.', '_' or '-' (it names the run folder), "
                f"got {short_repr(self.exp_name)}"
            )
        if not self.rules:
            problems.append("rules must name a preset or a YAML file")
        for name in ("seed", "eval_seed"):
            if getattr(self, name) < 0:
                problems.append(f"{name} must be >= 0, got {getattr(self, name)}")
        if self.seed > MAX_SEED:  # torch's generator takes 64 bits; a larger seed failed with a bare overflow
            problems.append(f"seed must be at most 2**64 - 1 (torch seeds with 64 bits), got {self.seed}")
        for name in ("learning_rate", "bc_learning_rate", "clip_coef", "max_grad_norm", "reward_scale"):
            if getattr(self, name) <= 0:
                problems.append(f"{name} must be > 0, got {getattr(self, name)}")
        for name in ("ent_coef", "vf_coef", "win_weight", "score_weight", "pfsp_power", "anchor_kl_coef"):
            if getattr(self, name) < 0:
                problems.append(f"{name} must be >= 0, got {getattr(self, name)}")
        # a Rummy hand always ends (R9): truncated_reward never pays there
        truncated = self.truncated_reward if self.game != "rummy" else 0
        if self.win_weight == 0 and self.score_weight == 0 and truncated == 0:
            why = " (and Rummy's hands are never truncated)" if self.game == "rummy" else " and so is truncated_reward"
            problems.append(f"win_weight and score_weight are 0{why}: every reward would be 0 and nothing learned")
        for name in ("gamma", "gae_lambda", "baseline_fraction", "baseline_worker_share"):
            value = getattr(self, name)
            if value is not None and not 0 <= value <= 1:
                problems.append(f"{name} must be in [0, 1], got {value}")
        for name in ("target_kl", "max_minutes", "max_updates"):
            value = getattr(self, name)
            if value is not None and value <= 0:
                problems.append(f"{name} must be > 0 or null, got {value}")
        for name in ("hidden", "slot_embed", "workers", "torch_threads"):
            if getattr(self, name) < 1:
                problems.append(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.update_threads is not None and self.update_threads < 1:
            problems.append(f"update_threads must be >= 1 or null, got {self.update_threads}")
        if self.precision not in PRECISIONS:
            problems.append(f"precision must be one of {', '.join(PRECISIONS)}, got {short_repr(self.precision)}")
        known = agent_names()  # and any module:Class (agents/registry.py)
        for name in ("league_baselines", "eval_opponents"):
            unknown = [a for a in getattr(self, name) if not is_agent(a)]
            if unknown:
                problems.append(f"{name}: unknown agent(s) {short_repr(unknown)}; known: {sorted(known)}")
            repeated = sorted({a for a in getattr(self, name) if getattr(self, name).count(a) > 1})
            if repeated:  # the league kept one entry with half its share, so the shares shifted silently
                problems.append(f"{name}: {short_repr(repeated)} listed more than once")
            problems.extend(f"{name}: {p}" for p in _game_problems(getattr(self, name), self.game))
        if self.bc_teacher is not None and not is_agent(self.bc_teacher):
            problems.append(f"bc_teacher: unknown agent {short_repr(self.bc_teacher)}; known: {sorted(known)}")
        if self.bc_teacher is not None:
            problems.extend(f"bc_teacher: {p}" for p in _game_problems([self.bc_teacher], self.game))
        stray = [name for name in self.league_baseline_options if name not in self.league_baselines]
        if stray:
            baselines = short_repr(self.league_baselines)
            problems.append(f"league_baseline_options: {short_repr(stray)} not in league_baselines {baselines}")
        if self.bc_teacher is None and self.bc_teacher_options:
            problems.append("bc_teacher_options given without a bc_teacher")
        if self.bc_teacher is None and self.bc_holdout_games:
            problems.append("bc_holdout_games given without a bc_teacher")
        if self.bc_teacher is not None and (self.bc_games <= 0 or self.bc_epochs <= 0):
            problems.append(
                f"bc_teacher {self.bc_teacher} needs bc_games and bc_epochs > 0, got {self.bc_games} and "
                f"{self.bc_epochs}; to skip the warm start, leave bc_teacher out"
            )
        if self.bc_targets not in BC_TARGETS:
            problems.append(f"bc_targets must be one of {', '.join(BC_TARGETS)}, got {short_repr(self.bc_targets)}")
        elif self.bc_targets == "visits" and self.bc_teacher is None:
            problems.append("bc_targets: visits needs a bc_teacher that searches (neural_ismcts)")
        if self.game == "burako" and self.num_players not in (2, 4):
            problems.append(f"num_players must be 2 or 4 (two sides), got {self.num_players}")
        if self.game == "rummy" and not 2 <= self.num_players <= 4:
            problems.append(f"num_players must be 2 to 4 for rummy, got {self.num_players}")
        if self.game == "rummy" and self.rollout == "vector":
            problems.append("rollout: rummy has no batched compiled core; use rollout: engine (its pure engine)")
        if self.overlap_rollout and (self.game == "rummy" or self.rollout == "engine"):
            problems.append("overlap_rollout needs rollout: vector (the batched compiled core; Burako only)")
        if self.proximal_clip and not self.overlap_rollout:
            problems.append(
                "proximal_clip needs overlap_rollout: without it the network that played the batch is the one "
                "the update starts from, so there is no proximal policy apart from the behaviour one"
            )
        positive = ("total_steps", "num_envs", "batch_size", "minibatch_size", "update_epochs", "checkpoint_every")
        for name in (*positive, "log_every"):
            if getattr(self, name) <= 0:
                problems.append(f"{name} must be > 0, got {getattr(self, name)}")
        for name in (
            "snapshot_every", "eval_every", "max_snapshots", "bc_games", "bc_epochs", "bc_holdout_games",
            "keep_policy_every", "average_kept_policies",
        ):  # fmt: skip
            if getattr(self, name) < 0:
                problems.append(f"{name} must be >= 0, got {getattr(self, name)}")
        if self.minibatch_split not in MINIBATCH_SPLITS:
            problems.append(
                f"minibatch_split must be one of {', '.join(MINIBATCH_SPLITS)}, got {short_repr(self.minibatch_split)}"
            )
        if self.eval_deals not in EVAL_DEALS:
            problems.append(f"eval_deals must be one of {', '.join(EVAL_DEALS)}, got {short_repr(self.eval_deals)}")
        if self.eval_games <= 0 or self.eval_games % 2:
            problems.append(f"eval_games must be a positive even number, got {self.eval_games}")
        if self.league_scheme not in ("uniform", "prioritized"):
            problems.append(f"league_scheme must be uniform or prioritized, got {self.league_scheme!r}")
        if not 0 <= self.self_play_fraction <= 1:
            problems.append(f"self_play_fraction must be in [0, 1], got {self.self_play_fraction}")
        snapshots = self.snapshot_every > 0 and self.max_snapshots > 0  # max_snapshots 0 evicts every snapshot
        if not self.league_baselines and self.self_play_fraction < 1 and not snapshots:
            problems.append("the league is empty: give league_baselines, snapshots or self_play_fraction=1")
        if self.rollout not in ("vector", "engine"):
            problems.append(f"rollout must be vector or engine, got {self.rollout!r}")
        elif self.baseline_worker_share and self.rollout != "vector":
            problems.append(f"baseline_worker_share needs rollout: vector (the batched core), not {self.rollout}")
        if self.privileged_value and self.rollout != "vector":
            problems.append(
                f"privileged_value needs rollout: vector (it records the hidden tiles beside each decision), "
                f"not {self.rollout}"
            )
        if self.score_potential and (self.rollout != "vector" or self.game == "rummy"):
            problems.append(
                "score_potential needs Burako with rollout: vector (it records the table's margin beside each "
                f"decision), not {self.game or 'burako'} with rollout: {self.rollout}"
            )
        if self.policy_head not in ("legal", "full"):
            problems.append(f"policy_head must be legal or full, got {self.policy_head!r}")
        if self.anchor_kl_coef > 0 and self.bc_teacher is None and self.init_checkpoint is None:
            problems.append(
                "anchor_kl_coef needs a warm start to stay near (bc_teacher or init_checkpoint): "
                "a network at random is no anchor"
            )
        if self.average_kept_policies > 0 and self.keep_policy_every <= 0:
            problems.append("average_kept_policies needs keep_policy_every > 0: it averages the policies the run keeps")
        if self.anchor_kl_coef > 0 and self.policy_head != "legal":
            problems.append(f"anchor_kl_coef needs policy_head: legal, not {self.policy_head!r}")
        if not isinstance(self.device, str) or not (
            self.device in ("auto", "cpu", "cuda") or self.device.startswith("cuda:")
        ):
            problems.append(f"device must be auto, cpu, cuda or cuda:N, got {self.device!r}")
        if self.env_threads is not None and self.env_threads <= 0:
            problems.append(f"env_threads must be > 0 or null, got {self.env_threads}")
        elif self.env_threads is not None and self.env_threads > numba.config.NUMBA_NUM_THREADS:
            problems.append(
                f"env_threads {self.env_threads} is more than numba's {numba.config.NUMBA_NUM_THREADS} threads "
                "(NUMBA_NUM_THREADS)"
            )
        problems.extend(schedule_problems(self.schedules, typing.get_type_hints(type(self))))
        if not problems:
            problems.extend(self._scheduled_problems())
        if problems:
            raise ValueError("bad training config: " + "; ".join(problems))

    def _scheduled_problems(self) -> list[str]:
        """The config as every schedule makes it, checked now, not when training reaches the update
        (hours in, maybe). Between two listed updates every value is constant or linear, so the ranges
        (and the league's shares, a sum of two) hold everywhere when they hold at both ends of each
        segment: the listed updates and the update before each (a step in one share while the other
        moves linearly broke their sum just before the step, hours in)."""
        if not self.schedules:
            share = league_share_problem(self)
            return [share] if share else []
        listed = {point[0] for points in self.schedules.values() for point in points}
        updates = sorted({0} | listed | {u - 1 for u in listed if u > 0})
        problems = []
        for update in updates:
            values = scheduled_values(self.schedules, update, self)
            try:  # the scheduled config, checked whole by this method without schedules
                dataclasses.replace(self, schedules={}, **values)
            except ValueError as exc:
                problems.append(f"at update {update}: {str(exc).removeprefix('bad training config: ')}")
        return problems

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def league_share_problem(config: PPOConfig) -> str | None:
    """The league's shares of games must add up (training.league.share_problem)."""
    return share_problem(config.self_play_fraction, config.baseline_fraction)


def _game_problems(names: list[str], game: str) -> list[str]:
    """The built-in agents among ``names`` that play the other game only (games.agent_games)."""
    problems = []
    for name in names:
        try:
            check_agent_game(name, game)
        except ValueError as exc:
            problems.append(str(exc))
    return problems


def baseline_problems(config: PPOConfig) -> list[str]:
    """What is wrong with the league's baselines as configured: each is built once with its
    ``league_baseline_options``, so a bad option fails before the run folder and any game exist."""
    problems = []
    for name, options in config.league_baseline_options.items():
        try:
            make_agent(name, seed=0, **options)
        except (TypeError, ValueError) as exc:
            problems.append(f"league_baseline_options: {name} refuses {short_repr(options)}: {exc}")
    return problems


def teacher_problems(config: PPOConfig) -> list[str]:
    """What is wrong with the cloning teacher as configured: it is built once with ``bc_teacher_options``
    (so a bad option fails before the run folder and any game exist), and with ``bc_targets: visits`` it
    must keep its last search's root (``last_root``, agents/neural_search.py). Checked by the Trainer when
    cloning will run, not by the config, which is rebuilt at every scheduled update."""
    if config.bc_teacher is None:
        return []
    try:
        teacher = make_agent(config.bc_teacher, seed=0, **config.bc_teacher_options)
    except (TypeError, ValueError) as exc:
        return [f"bc_teacher_options: {config.bc_teacher} refuses {short_repr(config.bc_teacher_options)}: {exc}"]
    if config.bc_targets == "visits" and not hasattr(teacher, "last_root"):
        return [f"bc_targets: visits needs a teacher that searches (neural_ismcts), not {config.bc_teacher}"]
    return []


def config_fields() -> dict[str, dataclasses.Field[Any]]:
    return {f.name: f for f in dataclasses.fields(PPOConfig)}


def load_config(
    path: str | Path | None = None, overrides: list[str] | None = None, base: dict[str, Any] | None = None
) -> PPOConfig:
    """A config from ``base`` (e.g. a checkpoint's), then a YAML file, then
    ``key=value`` overrides (values parsed as YAML)."""
    data: dict[str, Any] = dict(base or {})
    if path is not None:
        loaded = load_yaml(read_text_file(path, "training config"), f"training config {path}")
        if not isinstance(loaded, dict):
            raise ValueError(f"training config {path} must be a mapping of fields")
        data.update(loaded)
    for item in overrides or []:
        key, value = split_assignment(item, "--set")
        data[key] = yaml_value(value, f"--set {key}")
    unknown = sorted(map(str, set(data) - set(config_fields())))
    if unknown:
        raise ValueError(f"unknown training config field(s) {short_repr(unknown)}; known: {sorted(config_fields())}")
    return PPOConfig(**data)


def resolve_device(name: str) -> torch.device:
    """``auto``: CUDA when present, else the CPU; otherwise the named device
    (a clear error when CUDA is asked for and missing)."""
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name.startswith("cuda") and not torch.cuda.is_available():
        raise ValueError(f"device {name!r} asked for, but torch sees no CUDA device (use device: auto or cpu)")
    return torch.device(name)


#: the ``precision`` values
PRECISIONS = (*ckpt.DTYPES, "auto")
#: what behaviour cloning fits (``bc_targets``)
BC_TARGETS = ("moves", "visits")
#: the largest run seed: torch's generator (``torch.manual_seed``) takes 64 bits
MAX_SEED = 2**64 - 1
#: how evaluations choose their deals (``eval_deals``)
EVAL_DEALS = ("fixed", "rotating")
#: how an epoch splits its batch (``minibatch_split``)
MINIBATCH_SPLITS = ("equal", "fixed")


def minibatch_bounds(n: int, size: int, split: str) -> list[tuple[int, int]]:
    """The ``(start, stop)`` rows of each minibatch of an epoch over ``n`` shuffled rows."""
    if split == "fixed":
        return [(start, min(start + size, n)) for start in range(0, n, size)]
    count = max(1, round(n / size))
    edges = np.linspace(0, n, count + 1).round().astype(int)
    return [(int(a), int(b)) for a, b in itertools.pairwise(edges)]


def eval_deal_seed(eval_seed: int, eval_deals: str, update: int) -> int:
    """The deal seed of the evaluation at ``update``: ``eval_seed`` itself for fixed deals; for
    rotating ones a seed drawn from (``eval_seed``, update), so a resumed run deals the same."""
    if eval_deals == "fixed":
        return eval_seed
    return int(np.random.SeedSequence([eval_seed, update]).generate_state(1, np.uint32)[0])


def native_bfloat16(device: torch.device) -> bool:
    """Whether ``precision: auto`` picks bfloat16 on ``device``: a CUDA device
    with bf16, or a CPU with AMX tiles (oneDNN's bf16 kernels).

    Not a CPU with AVX512-BF16 alone, though it multiplies bf16 natively (an
    AMD EPYC: 808 GFLOP/s against 172 in float32 for the torso's product, the
    update ~1.3x): a reference run in bf16 there learned worse per update than
    the same run in float32 (docs/training/README.md, trial 6), so float32, whose
    batches skip the empty meld slots (agents/network.py), stays its default;
    ``precision: bfloat16`` asks for it. On other CPUs bf16 is emulated and
    slower than float32."""
    if device.type == "cuda":
        return torch.cuda.is_bf16_supported()
    if device.type != "cpu":
        return False
    try:
        return bool(torch.cpu._is_amx_tile_supported()) and torch.backends.mkldnn.is_available()
    except AttributeError:  # a torch without the probe: assume not
        return False


def resolve_precision(name: str, device: torch.device) -> torch.dtype:
    """The dtype the network's matrix products run in (``precision``)."""
    if name == "auto":
        return torch.bfloat16 if native_bfloat16(device) else torch.float32
    return ckpt.DTYPES[name]


def fused_adam(params: Any, device: torch.device, **kwargs: Any) -> torch.optim.Adam:
    """Adam with its fused kernel where torch has one for the device (one
    pass over the parameters instead of a dozen: 6.2 -> 1.7 ms a step for the
    1.4 M-parameter network on one core, bench/README.md)."""
    try:
        return torch.optim.Adam(params, fused=device.type in ("cpu", "cuda"), **kwargs)
    except RuntimeError:  # a device or build without the fused kernel
        return torch.optim.Adam(params, **kwargs)


# ====================================================================== advantage
def explained_variance(targets: np.ndarray, predictions: np.ndarray) -> float:
    """1 - Var(targets - predictions) / Var(targets); NaN when the targets do not vary."""
    var_y = float(np.var(targets))
    return float("nan") if var_y == 0 else 1.0 - float(np.var(targets - predictions)) / var_y


def monte_carlo_returns(rewards: list[float], lengths: list[int], gamma: float) -> np.ndarray:
    """Each decision's discounted return, of episodes whose only reward is at their end, concatenated:
    unlike GAE's returns (advantages + values) it holds nothing of the value, so the value's
    explained variance against it compares critics (``losses/explained_variance_mc``)."""
    parts = [
        reward * gamma ** np.arange(n - 1, -1, -1, dtype=np.float64) for reward, n in zip(rewards, lengths, strict=True)
    ]
    return np.concatenate(parts) if parts else np.zeros(0)


def gae(
    values: np.ndarray, reward: float, gamma: float, lam: float, potentials: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Advantages and returns (the targets of ``values``) of one finished episode whose only reward is at
    its end. ``potentials`` (``score_potential``): a known part of each decision's value, 0 once the
    episode is over; the advantages read ``values + potentials`` (potential-based shaping: rewards
    ``gamma * potential' - potential`` between decisions, the return unchanged but for the first
    potential) and ``values`` learns the rest."""
    full = values if potentials is None else values + potentials
    n = values.size
    next_full = np.append(full[1:], 0.0)
    rewards = np.zeros(n, dtype=np.float32)
    rewards[-1] = reward
    deltas = rewards + gamma * next_full - full
    adv = np.zeros(n, dtype=np.float32)
    running = 0.0
    for t in range(n - 1, -1, -1):
        running = deltas[t] + gamma * lam * running
        adv[t] = running
    return adv, adv + values


#: ``proximal_clip``: the most a row's proximal / behaviour weight counts (a row the proximal policy plays
#: far more often than the one that played it would otherwise swing a minibatch)
BEHAVIOUR_WEIGHT_MAX = 2.0


def policy_loss(
    ratio: torch.Tensor, advantages: torch.Tensor, clip_coef: float, weights: torch.Tensor | None = None
) -> torch.Tensor:
    """PPO's clipped surrogate (to minimise), with the minibatch's advantages normalised (when it has more
    than one): the mean of ``max(-A * r, -A * clip(r, 1 - c, 1 + c))``, each row's term times its
    ``weights`` when given (``proximal_clip``: proximal / behaviour probability, ``r`` against the proximal)."""
    if advantages.numel() > 1:
        advantages = (advantages - advantages.mean()) / (advantages.std() + 1e-8)
    terms = torch.max(-advantages * ratio, -advantages * torch.clamp(ratio, 1 - clip_coef, 1 + clip_coef))
    return (terms if weights is None else terms * weights).mean()


def value_loss(
    values: torch.Tensor, old_values: torch.Tensor, returns: torch.Tensor, clip_coef: float | None
) -> torch.Tensor:
    """Half the mean squared error of the values against the returns; with ``clip_coef`` (``clip_vloss``)
    each row's error is the larger of the plain one and the one of the old value moved by at most
    ``clip_coef`` towards the new (CleanRL's clipped value loss)."""
    if clip_coef is None:
        return 0.5 * ((values - returns) ** 2).mean()
    clipped = old_values + torch.clamp(values - old_values, -clip_coef, clip_coef)
    return 0.5 * torch.max((values - returns) ** 2, (clipped - returns) ** 2).mean()


def initial_weights(path: str, shape: NetworkShape) -> dict[str, torch.Tensor]:
    """``init_checkpoint``'s weights (a policy or training checkpoint, read safely); a network of
    another shape or layout is refused by name, before the run folder exists."""
    try:
        data = ckpt.load(path)
    except ckpt.CheckpointError as exc:
        raise ckpt.CheckpointError(f"init_checkpoint: {exc}") from None
    net, _ = ckpt.build_policy(data, source=f"init_checkpoint {path}")
    if net.shape != shape:
        raise ckpt.CheckpointError(
            f"init_checkpoint {path} holds the network {net.shape.to_dict()}, but this config builds "
            f"{shape.to_dict()}: give the checkpoint's hidden, slot_embed, value_torso, unseen_input, "
            "privileged_value, score_potential, num_players and rules"
        )
    return net.state_dict()


#: the frozen network PPO started from, in the run folder (``anchor_kl_coef``)
ANCHOR_FILE = "anchor.pt"


# ====================================================================== trainer
class PPOLearning:
    """PPO's epochs over one batch of arrays (:meth:`learn`), apart from the episodes they were gathered
    from, and the state they read: the :class:`Trainer`'s (an update driven from elsewhere, a learner in
    another process as tried in d5eb13b, needs only these attributes)."""

    live_cfg: PPOConfig
    cfg: PPOConfig
    device: torch.device
    compute_dtype: torch.dtype
    net: PolicyNet
    optimizer: torch.optim.Optimizer
    update_rng: np.random.Generator
    anchor: PolicyNet | None
    _update_buffers: dict[str, dict[str, torch.Tensor]]
    #: the games played beside the update (``overlap_rollout``; anything with ``done()``), None when none
    _rollout_beside: Any
    #: gather each minibatch into one reused buffer; False: a fresh tensor by indexing, the update before
    #: issue 15 (bench/bench_training.py's "today" path sets it)
    reuse_minibatch_buffer: bool = True
    #: gather each minibatch from the batch's :class:`~agents.network.CompactRows`, built once per update
    #: (float32 on the CPU, the legal head, no anchor), and each cloning minibatch as compact rows (on the
    #: CPU); False: from the full rows, as every run before 2026-12-06 did (the same losses to float
    #: rounding, so a run repeats the runs made before only with ``BURAKO_COMPACT_BATCHES=0`` in the
    #: environment, read once at import)
    compact_batches: bool = os.environ.get("BURAKO_COMPACT_BATCHES", "1") != "0"
    #: where compact rows serve: each minibatch as what its rows set (:class:`~agents.network.SparseRows`:
    #: ~9 meld slots and ~35 other columns a row, where compact rows multiply ~26 and ~320), through the
    #: compiled first layer (agents/sparse_kernel.py); the same losses to float rounding, the update 1.39x on
    #: one thread, 1.09x on two (bench/README.md). The rollout's forward passes read the same way
    #: (training/rollout.py). ``BURAKO_SPARSE_BATCHES=0`` in the environment keeps the compact rows and the
    #: rollout's dense rows (every run before 2026-12-07 20:00 UTC), read once at import
    sparse_batches: bool = os.environ.get("BURAKO_SPARSE_BATCHES", "1") != "0"

    @property
    def reads_store_rows(self) -> bool:
        """float32 on the CPU: each minibatch gathers its rows straight from the decision store's array
        (``obs_store``, ``obs_rows``: :func:`~training.rollout.episode_batch`), not from a gathered batch."""
        return self.device.type == "cpu" and self.compute_dtype == torch.float32 and self.reuse_minibatch_buffer

    def learn(self, batch: dict[str, np.ndarray], rewards: list[float], lengths: list[int]) -> dict[str, float]:
        """PPO's epochs over ``batch`` (:func:`~training.rollout.episode_batch`'s arrays of episodes of
        ``lengths`` decisions with final ``rewards``, in order); returns the update's stats."""
        cfg = self.live_cfg
        device = self.device
        direct = self.reads_store_rows
        splits = np.cumsum(lengths)[:-1]
        values_of = np.split(batch["values"], splits)
        potentials = batch.get("potentials")  # with score_potential: the part of each value the network does not learn
        potentials_of = np.split(potentials, splits) if potentials is not None else [None] * len(lengths)
        advs, rets = zip(
            *(
                gae(v, reward, cfg.gamma, cfg.gae_lambda, p)
                for v, p, reward in zip(values_of, potentials_of, rewards, strict=True)
            ),
            strict=True,
        )
        obs_rows: torch.Tensor | None = None  # the batch's rows of ``obs`` when it is the store's array
        if "obs" in batch:
            obs = torch.from_numpy(batch["obs"]).to(device)
        else:
            obs, obs_rows = torch.from_numpy(batch["obs_store"]), torch.from_numpy(batch["obs_rows"])
        if self.compute_dtype != torch.float32:
            # once for the whole batch: each minibatch then gathers half the bytes and its products cast nothing
            obs = obs.to(self.compute_dtype)
        actions = torch.from_numpy(batch["actions"]).to(device)
        old_logp = torch.from_numpy(batch["logprobs"]).to(device)
        old_values = torch.from_numpy(batch["values"]).to(device)
        privileged = torch.from_numpy(batch["privileged"]).to(device) if "privileged" in batch else None
        advantages = torch.from_numpy(np.concatenate(advs)).to(device)
        returns = torch.from_numpy(np.concatenate(rets)).to(device)
        legal: LegalIndex | None = None
        masks: torch.Tensor | None = None
        packed = batch.get("packed_masks")
        if cfg.policy_head == "legal" and packed is not None:  # the pairs straight from the store's bits
            legal = LegalIndex.of_packed(packed, device)
        else:
            dense = batch["masks"] if packed is None else unpack_masks(packed, self.net.shape.num_actions)
            masks = torch.from_numpy(dense).to(device)
            legal = LegalIndex.of_mask(masks) if cfg.policy_head == "legal" else None
        n = actions.shape[0]
        clipfracs: list[float] = []
        stats: dict[str, float] = {}
        # every minibatch's rows are gathered into this one buffer: a fresh 40 MB tensor a minibatch
        # (2,048 rows of 4,886 floats) cost ~17 ms of page faults to copy ~2 ms of data (bench/README.md)
        bounds = minibatch_bounds(n, cfg.minibatch_size, cfg.minibatch_split)
        compact: CompactRows | SparseBatch | None = None
        mb_obs_buffer: torch.Tensor | None = None
        if direct and legal is not None and self.anchor is None and self.compact_batches and self.net.compacts:
            # once an update: the slots and columns the batch uses (compact rows: each minibatch then gathers
            # ~40% of a row's floats), or each row's used slots and set columns (sparse: ~15%, through the
            # compiled first layer) (bench/README.md)
            if self.sparse_batches:
                compact = self.net.sparse(obs, obs_rows)
            else:
                compact = self.net.compact(obs, obs_rows, self._update_buffers.setdefault("batch", {}))
        elif self.reuse_minibatch_buffer:
            mb_obs_buffer = obs.new_empty((max(b - a for a, b in bounds), obs.shape[1]))

        def minibatch_rows(idx: torch.Tensor) -> torch.Tensor | CompactRows | SparseRows:
            if compact is not None:
                return compact.select(idx, self._update_buffers.setdefault("minibatch", {}))
            if self.reuse_minibatch_buffer:
                # index_select: a parallel row copy, 3x faster than obs[idx] on the 4,886-wide rows
                rows = idx if obs_rows is None else obs_rows[idx]
                assert mb_obs_buffer is not None
                return torch.index_select(obs, 0, rows, out=mb_obs_buffer[: idx.numel()])
            return obs[idx]

        # the log-probabilities the ratio is clipped against: the behaviour policy's, or with
        # ``proximal_clip`` the network's as the update starts, and the rows' proximal / behaviour weights
        anchor_logp, behaviour_weights = old_logp, None
        if cfg.proximal_clip:
            anchor_logp = self._proximal_logp(minibatch_rows, actions, legal, masks, privileged, bounds)
            behaviour_log_ratio = anchor_logp - old_logp
            behaviour_weights = behaviour_log_ratio.exp().clamp(max=BEHAVIOUR_WEIGHT_MAX)
            # how far the batch's policy lies behind the network (approx KL, as ``approx_kl``)
            stats_lag = {
                "behaviour_kl": float((behaviour_log_ratio.exp() - 1 - behaviour_log_ratio).mean()),
                "behaviour_weight_capped": float((behaviour_log_ratio.exp() > BEHAVIOUR_WEIGHT_MAX).float().mean()),
            }
        # overlapped: the update widens to ``update_threads`` once the games beside it are done
        wide_threads = self.cfg.update_threads
        beside = self._rollout_beside if wide_threads is not None else None
        widened, wide_minibatches = False, 0
        self.net.train()
        for _epoch in range(cfg.update_epochs):
            perm = torch.from_numpy(self.update_rng.permutation(n)).to(device)
            epoch_stats: list[dict[str, float]] = []
            for start, stop in bounds:
                if beside is not None and wide_threads is not None and beside.done():
                    torch.set_num_threads(wide_threads)
                    beside, widened = None, True
                wide_minibatches += widened
                idx = perm[start:stop]
                pairs = legal.pairs(idx) if legal is not None else None
                mb_masks = masks[idx] if pairs is None and masks is not None else None  # pairs say it all
                mb_obs = minibatch_rows(idx)
                mb_privileged = privileged[idx] if privileged is not None else None
                kl_to_anchor: torch.Tensor | None = None
                if cfg.policy_head == "legal":  # evaluate_actions, keeping the legal distribution for the anchor
                    h, values = self.net.features(mb_obs, mb_privileged)
                    logp, entropy, dist = legal_figures(self.net, h, mb_masks, actions[idx], pairs)
                    if self.anchor is not None and cfg.anchor_kl_coef > 0:
                        kl_to_anchor = anchor_kl(self.anchor, mb_obs, mb_masks, pairs, dist).mean()
                else:
                    logp, entropy, values = evaluate_actions_dense(
                        self.net, mb_obs, mb_masks, actions[idx], pairs, mb_privileged
                    )
                entropy = entropy.mean()
                log_ratio = logp - anchor_logp[idx]
                ratio = log_ratio.exp()
                with torch.no_grad():
                    approx_kl = ((ratio - 1) - log_ratio).mean().item()
                    clipfracs.append(((ratio - 1.0).abs() > cfg.clip_coef).float().mean().item())
                mb_weights = behaviour_weights[idx] if behaviour_weights is not None else None
                pg_loss = policy_loss(ratio, advantages[idx], cfg.clip_coef, mb_weights)
                v_loss = value_loss(values, old_values[idx], returns[idx], cfg.clip_coef if cfg.clip_vloss else None)
                loss = pg_loss - cfg.ent_coef * entropy + cfg.vf_coef * v_loss
                if kl_to_anchor is not None:
                    loss = loss + cfg.anchor_kl_coef * kl_to_anchor
                self.optimizer.zero_grad()
                loss.backward()
                nn.utils.clip_grad_norm_(self.net.parameters(), cfg.max_grad_norm)
                self.optimizer.step()
                stats = {
                    "policy_loss": pg_loss.item(),
                    "value_loss": v_loss.item(),
                    "entropy": entropy.item(),
                    "approx_kl": approx_kl,
                    "loss": loss.item(),
                }
                if kl_to_anchor is not None:
                    stats["anchor_kl"] = kl_to_anchor.item()
                epoch_stats.append(stats)
            if cfg.minibatch_split == "equal":  # the epoch's means, not its last minibatch's
                stats = {key: float(np.mean([s[key] for s in epoch_stats])) for key in stats}
            if cfg.target_kl is not None and stats["approx_kl"] > cfg.target_kl:
                break
        self.net.eval()
        stats["clipfrac"] = float(np.mean(clipfracs))
        old = batch["values"].astype(np.float64)
        stats["explained_variance"] = explained_variance(returns.cpu().numpy().astype(np.float64), old)
        outcomes = monte_carlo_returns(rewards, lengths, cfg.gamma)
        # the critic's estimate of a result is its value plus the potential (score_potential)
        estimates = old if potentials is None else old + potentials
        stats["explained_variance_mc"] = explained_variance(outcomes, estimates)
        stats["batch_decisions"] = float(n)
        if cfg.proximal_clip:
            stats.update(stats_lag)
        if self._rollout_beside is not None and wide_threads is not None:
            stats["wide_minibatches"] = float(wide_minibatches)  # of the update's, on ``update_threads``
        return stats

    def _proximal_logp(
        self,
        minibatch_rows: Callable[[torch.Tensor], torch.Tensor | CompactRows | SparseRows],
        actions: torch.Tensor,
        legal: LegalIndex | None,
        masks: torch.Tensor | None,
        privileged: torch.Tensor | None,
        bounds: list[tuple[int, int]],
    ) -> torch.Tensor:
        """The network's log-probabilities of the batch's actions before the update moves it (``proximal_clip``),
        a minibatch at a time in batch order, without gradients; the same arithmetic as the epochs' losses."""
        n = actions.shape[0]
        logp = torch.empty(n, dtype=torch.float32, device=actions.device)
        self.net.eval()
        with torch.no_grad():
            for start, stop in bounds:
                idx = torch.arange(start, stop, device=actions.device)
                pairs = legal.pairs(idx) if legal is not None else None
                mb_masks = masks[idx] if pairs is None and masks is not None else None
                mb_privileged = privileged[idx] if privileged is not None else None
                if self.live_cfg.policy_head == "legal":
                    h, _ = self.net.features(minibatch_rows(idx), mb_privileged)
                    logp[start:stop] = legal_figures(self.net, h, mb_masks, actions[idx], pairs)[0].float()
                else:
                    logp[start:stop] = evaluate_actions_dense(
                        self.net, minibatch_rows(idx), mb_masks, actions[idx], pairs, mb_privileged
                    )[0].float()
        return logp


class Trainer(PPOLearning):
    """Owns the network, optimiser, league, games and run folder of one run."""

    def __init__(self, config: PPOConfig, resume: str | Path | None = None, progress: bool = True) -> None:
        # a resume checks its teacher too, once its checkpoint says cloning is still to come
        problems = [*(teacher_problems(config) if resume is None else []), *baseline_problems(config)]
        if problems:
            raise ValueError("bad training config: " + "; ".join(problems))
        self.cfg = config
        self.progress = progress
        torch.set_num_threads(config.torch_threads)
        self.device = resolve_device(config.device)
        #: whether glibc took the settings (False: not asked, or no glibc): the run's hyperparameters show it
        self.keeps_freed_memory = config.keep_freed_memory and keep_freed_memory()
        self.game = str(config.game)
        self.rules: Rules | RummyRules = (load_rummy_rules if self.game == "rummy" else load_rules)(config.rules)
        self.rules.check_players(config.num_players)
        self.n = config.num_players
        #: Burako's observation encoder (the Rummy rollout encodes with burako_env.rummy.observation)
        self.observer = Observer(self.n, self.rules) if isinstance(self.rules, Rules) else None
        shape = NetworkShape.for_env(
            self.n,
            self.rules,
            hidden=config.hidden,
            slot_embed=config.slot_embed,
            value_torso=config.value_torso,
            unseen_input=config.unseen_input,
            privileged_value=config.privileged_value,
            score_potential=config.score_potential,
        )
        self.layout = shape.layout
        torch.manual_seed(config.seed)
        self.net = PolicyNet(shape, self.rules).to(self.device)
        if config.init_checkpoint is not None and resume is None:  # a resumed run reads its own weights
            self.net.load_state_dict(initial_weights(config.init_checkpoint, shape))
        #: the config with this update's scheduled values (training/schedule.py)
        self.live_cfg = config
        self.optimizer = fused_adam(self.net.parameters(), self.device, lr=config.learning_rate, eps=1e-5)
        #: the dtype of the network's matrix products in rollouts and updates (``precision``)
        self.compute_dtype = resolve_precision(config.precision, self.device)
        self.rng = np.random.default_rng(config.seed)
        #: the update's minibatch order: the games' generator (``rng``), or with ``overlap_rollout`` one of its
        #: own, since the games then draw from ``rng`` in the other thread at the same time
        self.update_rng = np.random.default_rng([config.seed, 1]) if config.overlap_rollout else self.rng
        #: the network the rollout acts with: ``net``, or with ``overlap_rollout`` a copy of the weights
        #: from before the update that runs beside the rollout (set at each overlapped collect)
        self.acting_net = self.net
        if config.overlap_rollout:
            self.acting_net = copy.deepcopy(self.net).eval().requires_grad_(False)
        #: with ``overlap_rollout``: the batch the last overlapped rollout collected, learned from next
        self._ready: list[Any] | None = None
        self._overlap: ThreadPoolExecutor | None = None
        #: the overlapped rollout playing beside the update now (None when no game is played beside it)
        self._rollout_beside: Future[Any] | None = None
        #: wall seconds of the last :meth:`collect_and_update` (with ``overlap_rollout`` less than its rollout
        #: and update seconds added), and learner decisions its rollout collected
        self.loop_seconds = 0.0
        self.rollout_decisions = 0
        self.league = League(
            config.league_baselines,
            config.league_scheme,
            config.self_play_fraction,
            config.max_snapshots,
            config.pfsp_power,
            baseline_fraction=config.baseline_fraction,
        )
        self.snapshot_nets: dict[str, PolicyNet] = {}
        #: the cached snapshot nets stacked in ``snapshot_nets`` order (:meth:`snapshot_groups`)
        self._snapshot_stack: tuple[tuple[str, ...], StackedTorsos] | None = None
        self.update = 0
        self.global_step = 0
        self.episodes_done = 0
        self.elapsed_before = 0.0
        self.bc_done = config.bc_teacher is None
        #: the frozen network PPO started from, when ``anchor_kl_coef`` is ever > 0 (set by :meth:`train`)
        self.anchor: PolicyNet | None = None
        #: the update's compact batch and minibatch tensors (``compact_batches``), kept between updates
        self._update_buffers: dict[str, dict[str, torch.Tensor]] = {}
        self.eval_history: list[dict[str, Any]] = []
        if resume is not None:
            self.run_dir = restore(self, Path(resume))
            problems = [] if self.bc_done else teacher_problems(config)
            if problems:
                raise ValueError("bad training config: " + "; ".join(problems))
            if self.uses_anchor and self.update > 0 and not (self.run_dir / ANCHOR_FILE).is_file():
                raise ckpt.CheckpointError(self._missing_anchor())
            if Path(self.cfg.run_root).resolve() != self.run_dir.parent.resolve():
                # a resumed run stays in its folder: config.yaml must say where that is, not another run_root
                print(f"run_root: the resumed run stays in {self.run_dir} (run_root recorded as its folder's parent)",
                      file=sys.stderr)  # fmt: skip
                self.cfg = dataclasses.replace(self.cfg, run_root=str(self.run_dir.parent))
        else:
            self.run_dir = new_run_dir(Path(config.run_root), f"{self.rules.name}{self.n}p", config)
        self.run_dir.mkdir(parents=True, exist_ok=True)
        # one process per run folder: a second resume of the same run is refused, not interleaved
        self.lock = folder_lock(self.run_dir, "the training run")
        from torch.utils.tensorboard import SummaryWriter  # import late: tensorboard is slow to import

        # on resume, drop events logged after the checkpoint (those at its step were logged before it)
        self.writer = SummaryWriter(str(self.run_dir), purge_step=self.global_step + 1 if resume else None)
        self.recent_returns: deque[float] = deque(maxlen=200)
        self.recent_lengths: deque[int] = deque(maxlen=200)
        #: whether each of the last 200 hands (self-play included) was cut at max_turns
        self.recent_truncated: deque[bool] = deque(maxlen=200)
        self._apply_schedules()
        #: where the games are played: the batched compiled core (``vector``, the default) or the readable engine
        self.vector: VectorRollout | None = None
        self.rollout: VectorRollout | EngineRollout | RummyRollout
        if self.game == "rummy":
            self.rollout = RummyRollout(self)
        elif config.rollout == "vector":
            self.rollout = self.vector = VectorRollout(self, num_threads=config.env_threads)
        else:
            self.rollout = EngineRollout(self)

    # ------------------------------------------------------------------ games
    def _snapshot_net(self, name: str) -> PolicyNet:
        """The frozen network of a snapshot, cached while the league holds it or
        a table still plays against it (a hand outlives an eviction)."""
        net = self.snapshot_nets.get(name)
        if net is None:
            net = PolicyNet(self.net.shape, self.rules).to(self.device)
            net.load_state_dict(self.league.snapshots[name])
            net.eval()
            in_use = set(self.league.snapshots)
            if getattr(self, "rollout", None) is not None:
                in_use |= self.rollout.opponents_in_play()
            self.snapshot_nets = {k: v for k, v in self.snapshot_nets.items() if k in in_use}
            self.snapshot_nets[name] = net
        return net

    def snapshot_groups(self, names: list[str], sizes: list[int]) -> SnapshotGroups:
        """The snapshots ``names`` (``sizes[i]`` rows each, in that order) as one sampling pass
        (:class:`training.network.SnapshotGroups`). The cached snapshot nets are stacked once
        per change of the cache (every ``snapshot_every`` updates), not once per step."""
        for name in names:
            self._snapshot_net(name)
        key = tuple(self.snapshot_nets)
        if self._snapshot_stack is None or self._snapshot_stack[0] != key:
            self._snapshot_stack = (key, StackedTorsos(list(self.snapshot_nets.values())))
        _, stack = self._snapshot_stack
        return SnapshotGroups(stack, [key.index(name) for name in names], sizes)

    def collect(self) -> list[Any]:
        """Play until at least ``batch_size`` learner decisions lie in finished episodes."""
        if self.cfg.overlap_rollout:
            # an update may still read the batch before (the rollout beside it): its rows stay in the store
            return self.rollout.collect(self.cfg.batch_size, keep=1)
        # torch's thread count is per process: set this run's own (another trainer in the process may differ)
        torch.set_num_threads(self.cfg.torch_threads)
        return self.rollout.collect(self.cfg.batch_size)

    def _reset_rollout_timing(self) -> None:
        timing = getattr(self.rollout, "timing", None)  # seconds per part of the rollout (vector, rummy)
        if timing is not None:
            self.rollout.timing = dict.fromkeys(timing, 0.0)

    def collect_and_update(self) -> tuple[dict[str, float], float, float]:
        """One rollout and one PPO update: (the update's stats, rollout seconds, update seconds). With
        ``overlap_rollout`` the rollout collects the next update's batch while this update learns from the
        one collected before (:meth:`_overlapped`); ``loop_seconds`` is the call's wall time either way."""
        if self.cfg.overlap_rollout:
            return self._overlapped()
        self._reset_rollout_timing()
        t0 = time.perf_counter()
        episodes = self.collect()
        t1 = time.perf_counter()
        stats = self._ppo_update(episodes)
        t2 = time.perf_counter()
        self.loop_seconds = t2 - t0
        self.rollout_decisions = sum(episode_length(ep) for ep in episodes)
        return stats, t1 - t0, t2 - t1

    def _overlapped(self) -> tuple[dict[str, float], float, float]:
        """The update learns from the batch collected last while a second thread plays the next one with
        the weights from before the update (``acting_net``). Returns only once both are done: no game
        moves and no weight changes between calls (checkpoints, snapshots and evaluations come there)."""
        clock = time.perf_counter
        t0 = clock()
        torch.set_num_threads(self.cfg.torch_threads)  # here, not in the rollout's thread: one count for both
        self.acting_net.load_state_dict(self.net.state_dict())  # the weights before this call's update
        if self._ready is None:  # a run's first update, or a resumed one's: nothing collected yet
            self._ready = self.collect()
        episodes, self._ready = self._ready, None
        self._reset_rollout_timing()
        if self._overlap is None:
            self._overlap = ThreadPoolExecutor(max_workers=1, thread_name_prefix="rollout")

        def timed_collect() -> tuple[list[Any], float]:
            start = clock()
            collected = self.collect()
            return collected, clock() - start

        collecting = self._overlap.submit(timed_collect)
        self._rollout_beside = collecting
        try:
            t1 = clock()
            stats = self._ppo_update(episodes)
            update_seconds = clock() - t1
        finally:  # an error or Ctrl-C in the update: the games stop moving before it goes on
            wait([collecting])
            self._rollout_beside = None
            torch.set_num_threads(self.cfg.torch_threads)  # the update may have widened (``update_threads``)
        self._ready, rollout_seconds = collecting.result()
        self.loop_seconds = clock() - t0
        self.rollout_decisions = sum(episode_length(ep) for ep in self._ready)
        return stats, rollout_seconds, update_seconds

    def autocast(self) -> torch.autocast:
        """The context the network runs in, in rollouts and updates alike (``precision``), so the
        log-probabilities a rollout stores and the update recomputes come from the same arithmetic
        (in float32 to rounding: a batch skips the meld slots none of its rows uses, agents/network.py)."""
        dtype = self.compute_dtype
        return torch.autocast(self.device.type, dtype=dtype, enabled=dtype != torch.float32)

    # ------------------------------------------------------------------ learning
    @contextlib.contextmanager
    def learning_threads(self) -> Iterator[None]:
        """Torch on every core the games leave free (``update_threads``) while the network learns (PPO's
        update, the warm start's fit): no game is played meanwhile. The thread count before comes back
        after (the rollout's ``torch_threads``)."""
        before = torch.get_num_threads()
        torch.set_num_threads(self.cfg.update_threads or os.cpu_count() or 1)
        try:
            yield
        finally:
            torch.set_num_threads(before)

    def _ppo_update(self, episodes: list[Any]) -> dict[str, float]:
        """One PPO update on every core the games leave free (``update_threads``; with ``overlap_rollout``
        the rollout beside it plays on, and torch keeps ``torch_threads`` until the rollout is done)."""
        threads = contextlib.nullcontext() if self.cfg.overlap_rollout else self.learning_threads()
        with threads, self.autocast():
            return self._ppo_epochs(episodes)

    def _ppo_epochs(self, episodes: list[Any]) -> dict[str, float]:
        batch = episode_batch(episodes, gather_obs=not self.reads_store_rows)
        return self.learn(batch, [ep.reward for ep in episodes], [episode_length(ep) for ep in episodes])

    def behaviour_clone(self) -> dict[str, float]:
        """Fit the network to ``bc_teacher``'s moves and results (warm start: training/cloning.py)."""
        return behaviour_clone(self)

    # ------------------------------------------------------------------ evaluation
    def evaluate_now(self) -> dict[str, Any]:
        """Duplicate games against each evaluation baseline (greedy policy): against the planner and
        greedy on the compiled core, all at once (``compiled_evaluations``, training/fast_evaluate.py).

        Rummy's are 2-player games (training.rummy_evaluate) whatever ``num_players``
        the run trains with: its layout is the same for 2 to 4 players."""
        cfg = self.cfg
        net = self.net
        if self.device.type != "cpu":  # PolicyAgent plays one move at a time, on the CPU
            net = PolicyNet(self.net.shape, self.rules)
            net.load_state_dict({k: v.cpu() for k, v in self.net.state_dict().items()})
            net.eval()

        def factory(seed: int) -> Any:
            from agents.policy import PolicyAgent
            from agents.rummy_policy import RummyPolicyAgent

            return (RummyPolicyAgent if self.game == "rummy" else PolicyAgent)(seed=seed, net=net)

        seed = eval_deal_seed(cfg.eval_seed, cfg.eval_deals, self.update)
        row: dict[str, Any] = {
            "update": self.update,
            "step": self.global_step,
            "minutes": self.elapsed() / 60,
            "deal_seed": seed,
        }
        for name in cfg.eval_opponents:
            result: Any
            if isinstance(self.rules, RummyRules):
                from training.rummy_evaluate import evaluate_rummy

                result = evaluate_rummy(
                    AgentSpec("policy", (), factory),
                    AgentSpec.of(name),
                    deals=cfg.eval_games // 2,
                    seed=seed,
                    rules=self.rules,
                    workers=1,
                )
            else:
                played = None
                if cfg.compiled_evaluations:
                    played = evaluate_network(
                        net, AgentSpec.of(name), games=cfg.eval_games, seed=seed, rules=self.rules, num_players=self.n
                    )
                if played is None:  # not a compiled heuristic
                    played = evaluate(
                        AgentSpec("policy", (), factory),
                        AgentSpec.of(name),
                        games=cfg.eval_games,
                        seed=seed,
                        rules=self.rules,
                        num_players=self.n,
                        workers=1,
                    )
                result = played.summary
            row[name] = result.curve_point()
            self.writer.add_scalar(f"eval/winrate_vs_{name}", result.win_rate, self.global_step)
            self.writer.add_scalar(f"eval/winrate_vs_{name}_low", row[name]["low"], self.global_step)
            self.writer.add_scalar(f"eval/winrate_vs_{name}_high", row[name]["high"], self.global_step)
            self.writer.add_scalar(f"eval/score_vs_{name}", result.mean_diff, self.global_step)
        self.eval_history.append(row)
        return row

    # ------------------------------------------------------------------ checkpoints
    def elapsed(self) -> float:
        return self.elapsed_before + (time.perf_counter() - self.started)

    def save_checkpoint(self, name: str = "latest.pt") -> Path:
        """Everything needed to resume, in ``checkpoints/<name>`` (training/resume.py)."""
        return save_checkpoint(self, name)

    def policy_export(self, half: bool = True) -> dict[str, Any]:
        """The small file's contents PolicyAgent plays (weights in float16 by default), with how far it had
        trained."""
        trained = {"update": self.update, "global_step": self.global_step, "minutes": self.elapsed() / 60}
        return ckpt.policy_payload(self.net, self.rules, self.cfg.to_dict(), half=half, trained=trained)

    def export_policy(self, path: str | Path, half: bool = True) -> Path:
        """:meth:`policy_export` written to ``path``."""
        return ckpt.save(self.policy_export(half), path)

    def export_final_policy(self) -> Path:
        """``policy.pt``: the last network, or with ``average_kept_policies`` the mean of it and the policies
        kept before it (the last network alone then in ``policy_last.pt``). A kept file that cannot be read,
        or is not this run's at its update, leaves ``policy.pt`` the last network, with a warning."""
        count = self.cfg.average_kept_policies
        last_path = self.run_dir / LAST_POLICY_FILE
        if not count:
            last_path.unlink(missing_ok=True)  # an earlier averaging end of this run: not its last network now
            return self.export_policy(self.run_dir / POLICY_FILE)
        last = self.policy_export()
        ckpt.save(last, last_path)
        # kept before the last update (its own kept file is the last network); a file past it was left by
        # updates a resume replayed, and is not averaged
        updates = [update for update in kept_policy_updates(self.run_dir) if update < self.update][-count:]
        if len(updates) < count:
            print(f"average_kept_policies: {count} wanted, the run kept {len(updates)}", file=sys.stderr)
        payloads, sources = [], []
        try:
            for update in updates:
                path = kept_policy_path(self.run_dir, update)
                data = ckpt.load(path)
                progress = ckpt.training_progress(data)
                if progress is None or progress["update"] != update or progress["global_step"] > self.global_step:
                    raise ckpt.CheckpointError(f"{path} is not this run's policy at update {update}")
                payloads.append(data)
                sources.append(str(path))
            averaged = ckpt.average_policies([*payloads, last], [*sources, str(last_path)]) if payloads else last
        except ckpt.CheckpointError as exc:
            print(f"average_kept_policies: {exc}; policy.pt is the last network alone", file=sys.stderr)
            averaged = last
        return ckpt.save(averaged, self.run_dir / POLICY_FILE)

    # ------------------------------------------------------------------ the anchor
    @property
    def uses_anchor(self) -> bool:
        """Whether ``anchor_kl_coef`` is > 0 at some update (its own value or a scheduled one)."""
        points = self.cfg.schedules.get("anchor_kl_coef", [])
        return self.cfg.anchor_kl_coef > 0 or any(point[1] > 0 for point in points)

    def _missing_anchor(self) -> str:
        return (
            f"{self.run_dir / ANCHOR_FILE} is missing: anchor_kl_coef needs the network this run's PPO started "
            "from, kept when it started; a run under way that never used it cannot get it back (start a new run)"
        )

    def _anchor(self) -> PolicyNet:
        """The network PPO starts from, frozen: written to ``anchor.pt`` before the first update (a
        run resumed before it writes it again, from the same weights), read back after."""
        path = self.run_dir / ANCHOR_FILE
        if self.update == 0:
            self.export_policy(path, half=False)
        elif not path.is_file():
            raise ckpt.CheckpointError(self._missing_anchor())
        net, _ = ckpt.build_policy(ckpt.load(path), source=str(path))
        if net.shape != self.net.shape:
            raise ckpt.CheckpointError(f"{path} holds another network than this run's ({net.shape.to_dict()})")
        net = net.to(self.device).eval()
        net.requires_grad_(False)
        return net

    # ------------------------------------------------------------------ main loop
    def _log_hparams(self) -> None:
        values = {**self.cfg.to_dict(), "keep_freed_memory (taken by the allocator)": self.keeps_freed_memory}
        rows = "\n".join(f"|{k}|{v}|" for k, v in values.items())
        self.writer.add_text("hyperparameters", f"|param|value|\n|-|-|\n{rows}")

    def _apply_schedules(self) -> None:
        """This update's scheduled values (training/schedule.py) into ``live_cfg`` and the league."""
        values = scheduled_values(self.cfg.schedules, self.update, self.cfg)
        # not dataclasses.replace: that checked the whole config again, every schedule point included
        # (~37 ms an update); the config's own check covered every scheduled update when it loaded
        self.live_cfg = copy.copy(self.cfg)
        for name, value in values.items():
            setattr(self.live_cfg, name, value)
        share = league_share_problem(self.live_cfg)
        if share:  # the config's check covers every scheduled update; a hand-edited checkpoint could still differ
            raise ValueError(f"at update {self.update}: {share}")
        self.league.self_play_fraction = self.live_cfg.self_play_fraction
        self.league.baseline_fraction = self.live_cfg.baseline_fraction

    def _set_learning_rate(self) -> float:
        lr = self.live_cfg.learning_rate
        if self.cfg.anneal_lr:
            lr *= max(0.0, 1.0 - self.global_step / self.cfg.total_steps)
        for group in self.optimizer.param_groups:
            group["lr"] = lr
        return lr

    def _out_of_budget(self) -> bool:
        """Whether the clock or the update count ends the run (``total_steps`` is the loop's own bound)."""
        cfg = self.cfg
        out_of_time = cfg.max_minutes is not None and self.elapsed() >= 60 * cfg.max_minutes
        return out_of_time or (cfg.max_updates is not None and self.update >= cfg.max_updates)

    def _check_pace(self, from_update: int, from_step: int, from_seconds: float, bar: tqdm) -> bool:
        """Say on stderr (and return True) if, at this part's pace so far, the run ends before its
        schedules' last point. Checked every ``PACE_CHECK_UPDATES`` updates, not once: a run's first
        updates are its cheapest (the reference run's first 50 took 2.2 s each, its average was 2.5 s:
        fewer planner games, no snapshots yet, no evaluation), so one early check misses a machine a
        little too slow."""
        cfg = self.cfg
        updates = self.update - from_update
        warning = pace_warning(
            cfg.schedules,
            update=self.update,
            updates_timed=updates,
            seconds_timed=self.elapsed() - from_seconds,
            seconds_left=None if cfg.max_minutes is None else 60 * cfg.max_minutes - self.elapsed(),
            decisions_per_update=(self.global_step - from_step) / max(updates, 1),
            decisions_left=cfg.total_steps - self.global_step,
            max_updates=cfg.max_updates,
        )
        if warning is not None:
            bar.write(warning, file=sys.stderr)
        return warning is not None

    def train(self) -> Path:
        """Run (or continue) the training; returns the exported policy's path."""
        cfg = self.cfg
        self.started = time.perf_counter()
        if self.update == 0:
            self._log_hparams()
        changed = record_config(self.run_dir, cfg.to_dict(), self.update, self.global_step)
        if changed:
            print(f"resumed with changed settings (config_changes.yaml): {sorted(changed)}", file=sys.stderr)
        if not self.bc_done:
            if cfg.init_checkpoint is not None:  # right for expert iteration, a surprise for a plain warm restart
                print(
                    f"init_checkpoint {cfg.init_checkpoint}: its weights are now fitted to {cfg.bc_teacher} "
                    "(bc_teacher) before PPO; leave bc_teacher out to start PPO from them as they are",
                    file=sys.stderr,
                )
            stats = self.behaviour_clone()
            print(f"behaviour cloning of {cfg.bc_teacher}: {stats}", file=sys.stderr)
            self.save_checkpoint()
        if self.uses_anchor:
            self.anchor = self._anchor()
        late = sorted(
            {point[0] for points in cfg.schedules.values() for point in points if point[0] >= (cfg.max_updates or 0)}
        )
        if cfg.max_updates is not None and late and self.update < cfg.max_updates:
            # said at the start: the pace check comes every PACE_CHECK_UPDATES updates, after a short run's end
            print(
                f"schedules: update(s) {late} lie at or past max_updates {cfg.max_updates}: this run ends before "
                "them (a resume with a larger max_updates reaches them)",
                file=sys.stderr,
            )
        if cfg.max_updates is not None and self.update > cfg.max_updates:  # a resume does not go back
            print(
                f"max_updates {cfg.max_updates}: the run is already at update {self.update}; it trains no further "
                "and exports that update's network",
                file=sys.stderr,
            )
        bar = tqdm(
            total=cfg.total_steps, initial=min(self.global_step, cfg.total_steps), unit="dec", disable=not self.progress
        )
        pace_from = (self.update, self.global_step, self.elapsed())  # this part's start: a resume has its own pace
        pace_warned = False
        while self.global_step < cfg.total_steps and not self._out_of_budget():
            into_part = self.update - pace_from[0]
            if not pace_warned and into_part and into_part % PACE_CHECK_UPDATES == 0:
                pace_warned = self._check_pace(*pace_from, bar)
            self._apply_schedules()
            lr = self._set_learning_rate()
            stats, rollout_seconds, update_seconds = self.collect_and_update()
            seconds = max(self.loop_seconds, 1e-9)
            steps = int(stats["batch_decisions"])
            self.update += 1
            self.global_step += steps
            bar.update(steps)
            if self.update % cfg.log_every == 0:
                w = self.writer
                w.add_scalar("charts/SPS", steps / seconds, self.global_step)
                rollout_sps = self.rollout_decisions / max(rollout_seconds, 1e-9)  # the batch it collected
                w.add_scalar("charts/rollout_SPS", rollout_sps, self.global_step)
                w.add_scalar("charts/update_seconds", update_seconds, self.global_step)
                if getattr(self.rollout, "timing", None) is not None:
                    for part, part_seconds in self.rollout.timing.items():
                        share = part_seconds / max(rollout_seconds, 1e-9)
                        w.add_scalar(f"rollout/{part}_share", share, self.global_step)
                if self.live_cfg.baseline_fraction is not None:
                    w.add_scalar("league/baseline_fraction", self.live_cfg.baseline_fraction, self.global_step)
                w.add_scalar("charts/learning_rate", lr, self.global_step)
                w.add_scalar("charts/episodes", self.episodes_done, self.global_step)
                if self.recent_returns:
                    w.add_scalar("charts/episodic_return", float(np.mean(self.recent_returns)), self.global_step)
                    w.add_scalar("charts/episodic_length", float(np.mean(self.recent_lengths)), self.global_step)
                if self.recent_truncated:
                    w.add_scalar("charts/truncated_share", float(np.mean(self.recent_truncated)), self.global_step)
                for key, value in stats.items():
                    w.add_scalar(f"losses/{key}", value, self.global_step)
                w.add_scalar("league/size", self.league.size, self.global_step)
                for member, p in self.league.probabilities().items():
                    w.add_scalar(f"league/p_{member_tag(member)}", p, self.global_step)
                for member in self.league.opponents:
                    w.add_scalar(f"league/winrate_{member_tag(member)}", self.league.win_rate(member), self.global_step)
            bar.set_postfix(sps=f"{steps / seconds:.0f}", ret=f"{np.mean(self.recent_returns or [0]):+.3f}")
            if cfg.snapshot_every and self.update % cfg.snapshot_every == 0:
                self.league.add_snapshot(self.update, self.net.state_dict())
            if cfg.eval_every and cfg.eval_opponents and self.update % cfg.eval_every == 0:
                row = self.evaluate_now()
                bar.write(_format_eval(row))
            if self.update % cfg.checkpoint_every == 0:
                self.save_checkpoint()
            if cfg.keep_policy_every and self.update % cfg.keep_policy_every == 0:
                self.export_policy(kept_policy_path(self.run_dir, self.update))
        bar.close()
        evaluated = bool(cfg.eval_opponents)  # []: no evaluations; they printed empty rows and an empty plot
        if evaluated and (not self.eval_history or self.eval_history[-1]["update"] != self.update):
            print(_format_eval(self.evaluate_now()), file=sys.stderr)
        self.save_checkpoint()
        self.save_checkpoint("final.pt")
        path = self.export_final_policy()
        if evaluated:
            from training.curves import plot_learning_curve

            plot_learning_curve(self.eval_history, self.run_dir / "learning_curve.png", title=self.run_dir.name)
        self.writer.flush()
        self.writer.close()
        self.close()
        self.lock.release()
        return path

    def close(self) -> None:
        """Stop the rollout's worker process (``baseline_worker_share``) and threads (compiled baselines,
        ``overlap_rollout``), if any."""
        if self._overlap is not None:  # idle: every overlapped collect is waited for
            self._overlap.shutdown()
            self._overlap = None
        close = getattr(self.rollout, "close", None)
        if close is not None:
            close()


def _format_eval(row: dict[str, Any]) -> str:
    parts = [
        f"{k} {v['win_rate']:.3f} [{v['low']:.3f}, {v['high']:.3f}]" for k, v in row.items() if isinstance(v, dict)
    ]
    return f"eval at update {row['update']} ({row['step']} decisions, {row['minutes']:.1f} min): " + "; ".join(parts)


def format_eval_table(row: dict[str, Any]) -> str:
    """The final evaluation as a table: one line per baseline."""
    width = max([10] + [len(name) for name, v in row.items() if isinstance(v, dict)])
    lines = [
        f"policy after {row['step']:,} learner decisions ({row['minutes']:.1f} min), duplicate deals "
        f"(deal seed {row.get('deal_seed', '?')}), 95% intervals:",
        f"{'opponent':<{width}} {'games':>6}  {'win rate':<22} {'mean score diff':<26}",
    ]
    for name, v in row.items():
        if isinstance(v, dict):
            win = f"{v['win_rate']:.3f} [{v['low']:.3f}, {v['high']:.3f}]"
            score = f"{v['score']:+.1f} [{v.get('score_low', math.nan):+.1f}, {v.get('score_high', math.nan):+.1f}]"
            lines.append(f"{name:<{width}} {v.get('games', 0):>6}  {win:<22} {score:<26}")
    return "\n".join(lines)


# ====================================================================== command line
def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="burako-train", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--config", help="YAML training config (configs/ppo_selfplay.yaml, configs/ppo_smoke.yaml)")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="override a config field")
    parser.add_argument("--seed", type=int, metavar="N", help="the run's seed (the same as --set seed=N)")
    parser.add_argument("--resume", metavar="RUN_DIR_OR_CHECKPOINT", help="continue a run from its latest checkpoint")
    parser.add_argument(
        "--export", metavar="PATH", help="also copy the run's policy.pt here (with average_kept_policies, the mean)"
    )
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.seed is not None:
        args.set.append(f"seed={args.seed}")
    try:
        if args.export is not None:  # before the run: a typo must not cost the training
            check_output_file(args.export, "--export")
        if args.resume and not args.config:
            # the run's own config, stored in its checkpoint
            data = ckpt.load(latest_checkpoint(Path(args.resume)))
            # a run begun before minibatch_split existed goes on splitting as it did
            config = load_config(None, args.set, base={"minibatch_split": "fixed", **data["config"]})
        else:
            config = load_config(args.config, args.set)
        trainer = Trainer(config, resume=args.resume, progress=not args.no_progress)
    except (ValueError, RulesError) as exc:
        parser.error(str(exc))
    except KeyboardInterrupt:
        print("\nburako-train: interrupted before training started; nothing was trained", file=sys.stderr)
        return 130
    print(
        f"run folder: {trainer.run_dir}  (tensorboard --logdir {trainer.run_dir.parent}); "
        f"network: {parameter_count(trainer.net):,} parameters",
        file=sys.stderr,
    )
    try:
        with sigterm_as_interrupt():  # kill (SIGTERM) stops a run as Ctrl-C does
            policy = trainer.train()
    except ckpt.CheckpointError as exc:  # a file the run reads as it goes (anchor.pt, a kept policy)
        trainer.close()
        parser.error(str(exc))
    except KeyboardInterrupt:
        trainer.writer.close()  # what was logged up to now reaches TensorBoard
        trainer.close()
        if latest_checkpoint(trainer.run_dir).is_file():
            said = (
                f"the run continues from its last checkpoint (written every {config.checkpoint_every} updates) "
                f"with: burako-train --resume {trainer.run_dir}"
            )
        else:  # stopped in the warm start or the first updates: no checkpoint to continue from
            said = f"no checkpoint was written yet, so there is nothing to resume: {trainer.run_dir} can be deleted"
        print(f"\nstopped at update {trainer.update}; {said}", file=sys.stderr)
        return 130
    if args.export:  # the run's policy.pt as it is (averaged with average_kept_policies)
        policy = ckpt.save(ckpt.load(policy), args.export)
    if trainer.eval_history:
        print(format_eval_table(trainer.eval_history[-1]))
    print(f"policy: {policy}")
    if trainer.cfg.eval_opponents:
        print(f"learning curve: {trainer.run_dir / 'learning_curve.png'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
