"""Behaviour cloning: the optional warm start of a PPO run (``bc_teacher``).

Before PPO, ``bc_games`` games between copies of a baseline agent (the
teacher, built with ``bc_teacher_options``: a search agent's simulations,
say) are played in worker processes; every non-forced move is kept
(observation, mask, action) with the result of the mover's side as the value
target (the training reward of :func:`training.ppo.hand_reward`). The
network is then fitted for ``bc_epochs`` passes: cross-entropy on the
teacher's moves (or, ``bc_targets: visits``, on a search teacher's root visit
shares: expert iteration's target) plus ``vf_coef`` x the value loss, so self-play starts from
sensible play instead of random moves. ``bc/loss`` and ``bc/agreement`` (the
share of decisions where the teacher's move gets more than half the
probability) are logged at steps <= 0, before PPO's first step. They are
measured on the decisions being fitted; ``bc_holdout_games`` more teacher games
(deals after ``bc_games``, never fitted) give ``bc/holdout_loss`` and
``bc/holdout_agreement`` after every epoch: the fit on play the clone has not seen.
The two are measured differently: the training figures are averaged over the
epoch's minibatches as the weights move, the held-out ones with the weights at
the epoch's end (in the first epochs that favours the held-out figures).

Rummy (``game: rummy``) clones the same way: its teacher (``rummy-heuristic``,
``rummy-greedy``) plays hands of ``agents.rummy_runner``, and every seat's
value target is its own result (:func:`training.rummy_rollout.rummy_hand_reward`).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from torch import nn
from tqdm import tqdm

from agents import fast_planner
from agents.network import CompactRows, PolicyNet
from agents.registry import make_agent
from agents.rummy_runner import play_rummy_hand
from agents.runner import play_game
from burako_env.fast import FastGame
from burako_env.outcomes import score_term, table_margin
from burako_env.rules import load_rules
from burako_env.rummy.rules import load_rummy_rules
from training.engine_rollout import hand_reward
from training.game_pool import WorkerDeath, play_in_pool
from training.network import LegalIndex, legal_log_probs
from training.rummy_rollout import rummy_hand_reward

if TYPE_CHECKING:
    from training.ppo import Trainer


#: one recorded decision: observation, packed mask, move, seat, target over the legal moves, and the
#: seat's table margin (``score_potential``; 0.0 when not asked for)
Decision = tuple[np.ndarray, np.ndarray, int, int, np.ndarray, float]


class _Recorder:
    """Wraps a teacher agent and keeps (observation, mask, action, seat, target) of its non-forced moves.

    The target is a distribution over the legal moves (in mask order): one-hot on the move, or with
    ``visits`` the teacher's root visit shares (``last_root``, neural_ismcts) when it searched."""

    def __init__(self, agent: Any, log: list[Decision], visits: bool = False, margins: bool = False) -> None:
        self.agent = agent
        self.name = getattr(agent, "name", "teacher")
        self.log = log
        self.visits = visits
        #: also record the seat's table margin (``outcomes.table_margin``, public parts of the state)
        self.margins = margins
        self.seat = -1

    def reset(self, seat: int, rules: Any, num_players: int) -> None:
        self.seat = seat
        self.agent.reset(seat, rules, num_players)

    def act(self, observation: Any, view: Any = None) -> int:
        action = int(self.agent.act(observation, view))
        mask = np.asarray(observation["action_mask"], dtype=bool)
        legal = np.flatnonzero(mask)
        if legal.size > 1:
            root = getattr(self.agent, "last_root", None) if self.visits else None
            counts = root.visits[legal].astype(np.float32) if root is not None else None
            if counts is not None and counts.sum() > 0:
                target = counts / counts.sum()
            else:  # the moves, or a search that visited nothing (never expected: at least one descent)
                target = (legal == action).astype(np.float32)
            margin = table_margin(view.public_state(), self.seat) if self.margins else 0.0
            self.log.append(
                (observation["observation"].astype(np.float16), np.packbits(mask), action, self.seat, target, margin)
            )
        return action


def _stack_decisions(
    log: list[Decision], seat_target: list[float], score_w: float, scale: float, into: tuple[list[Any], ...]
) -> None:
    """Append a hand's decisions to the lists of observations, masks, moves, value targets and policy
    targets (a decision's value target: its seat's result less its table margin's potential)."""
    obs, masks, actions, targets, policy = into
    for o, m, a, seat, p, margin in log:
        obs.append(o)
        masks.append(m)
        actions.append(a)
        targets.append(seat_target[seat] - score_term(margin, score_w, scale))
        policy.append(p)


def _compiled_teacher_hand(
    tables: tuple[np.ndarray, ...], rules: Any, num_players: int, deal_seed: int, log: list[Decision]
) -> FastGame:
    """A hand of a compiled heuristic against itself on the compiled core (agents/fast_planner.py): the
    deal, moves and recorded decisions of ``play_game`` with the Python agents and :class:`_Recorder`
    (the same observations: ``FastGame.encode`` is the Observer's, tests/test_fast.py); the ended game."""
    game = FastGame.new_game(np.random.default_rng(deal_seed), rules, num_players)
    while not game.hand_over:
        mask = game.legal_mask()
        action = fast_planner.choose_game(game, tables)
        legal = np.flatnonzero(mask)
        if legal.size > 1:
            seat = game.current
            target = (legal == action).astype(np.float32)
            observation = game.encode(seat).astype(np.float16)
            log.append((observation, np.packbits(mask.astype(bool)), action, seat, target, 0.0))
        game.apply(action)
    return game


def _teacher_games(
    args: tuple[str, str, dict[str, Any], bool, str, int, int, list[int], float, float, float, float, bool],
    compiled: bool = True,
) -> dict[str, np.ndarray]:
    """Play teacher-vs-teacher games (a worker task); returns stacked arrays (``policy``: the targets over
    the legal moves of every decision, concatenated in mask order). With ``potential`` (``score_potential``)
    a decision's value target is its result less the potential the trainer adds back (training/ppo.py's
    ``gae``): ``score_w`` x the seat's table margin / ``scale``. A Burako ``planner`` or ``greedy`` teacher
    (one-hot targets, no potential) plays compiled, the same games (4.7x faster measured beside a busy run);
    ``compiled=False`` plays the Python agents (for the comparison in tests/test_fast_planner.py)."""
    game, teacher, options, visits, rules_name, num_players, seed, deals, *weights, potential = args
    win_w, score_w, scale, truncated = weights
    rules = load_rummy_rules(rules_name) if game == "rummy" else load_rules(rules_name)
    fast = None
    if compiled and game == "burako" and not visits and not potential:
        found = fast_planner.compiled_tables(teacher, options, rules, num_players)
        fast = found.kernel_args if found is not None else None
    obs, masks, actions, targets, policy = [], [], [], [], []
    for deal in deals:
        log: list[Decision] = []
        deal_seed = seed * 1_000_003 + deal
        if fast is not None:
            ended = _compiled_teacher_hand(fast, rules, num_players, deal_seed, log)
            seat_target = [
                hand_reward(ended, s % ended.num_sides, win_w, score_w, scale, truncated) for s in range(num_players)
            ]
            _stack_decisions(log, seat_target, score_w, scale, (obs, masks, actions, targets, policy))
            continue
        players = [
            _Recorder(make_agent(teacher, seed=seed * 1_000_003 + deal * 7 + s, **options), log, visits, potential)
            for s in range(num_players)
        ]
        if game == "rummy":
            scores = play_rummy_hand(players, rules, num_players, deal_seed=deal_seed, record=False).hand_scores
            seat_target = [rummy_hand_reward(scores, s, win_w, score_w, scale) for s in range(num_players)]
        else:
            result = play_game(players, rules, num_players, deal_seed=deal_seed, record=False)
            seat_target = [
                hand_reward(result.state, result.side_of[s], win_w, score_w, scale, truncated)
                for s in range(num_players)
            ]
        _stack_decisions(log, seat_target, score_w, scale, (obs, masks, actions, targets, policy))
    return {
        "obs": np.stack(obs) if obs else np.zeros((0, 0), np.float16),
        "masks": np.stack(masks) if masks else np.zeros((0, 0), np.uint8),
        "actions": np.asarray(actions, dtype=np.int64),
        "targets": np.asarray(targets, dtype=np.float32),
        "policy": np.concatenate(policy) if policy else np.zeros(0, np.float32),
    }


def cloning_loss(
    net: PolicyNet,
    obs: torch.Tensor,
    legal: LegalIndex,
    policy: torch.Tensor,
    actions: torch.Tensor,
    targets: torch.Tensor,
    idx: torch.Tensor,
    vf_coef: float,
    compact: bool = False,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Minibatch ``idx``'s loss: cross-entropy against the target distribution over the legal moves
    (``policy``, flat in ``legal``'s pair order; one-hot: the move's log-probability) plus ``vf_coef`` x
    the value loss; and the log-probabilities of the teacher's moves (detached), for the agreement.
    ``compact``: the network reads the minibatch as :class:`~agents.network.CompactRows` on the CPU (the
    same loss to float rounding; the trainer's ``compact_batches``)."""
    dev = next(net.parameters()).device
    rows, positions = legal.positions(idx)
    rows, cols = rows.to(dev), legal.cols[positions].to(dev)
    batch: torch.Tensor | CompactRows
    if compact and dev.type == "cpu" and net.compacts:
        # the minibatch's used slots and set columns only (~40% of a row), then float32: 1.4x a
        # cloning pass over full float16 rows converted whole (bench/README.md)
        part = net.compact(obs, idx)
        batch = CompactRows(tuple(slots.float() for slots in part.slots), part.rest.float(), part.rest_cols)
    else:
        batch = obs[idx].float().to(dev)
    h, values = net.features(batch)
    _, _, logp = legal_log_probs(net, h, None, (rows, cols))
    ce = -(policy[positions].to(dev) * logp).sum() / idx.numel()
    v_loss = 0.5 * ((values - targets[idx].to(dev)) ** 2).mean()
    chosen = cols == actions[idx].to(dev)[rows]
    move_logp = torch.zeros(idx.numel(), device=dev).index_add(0, rows[chosen], logp.detach()[chosen])
    return ce + vf_coef * v_loss, move_logp


@dataclasses.dataclass(frozen=True)
class TeacherGames:
    """Teacher-vs-teacher games on some deals, one job per deal (a ``training.game_pool`` task): each
    deal's decisions come back as soon as it is played, and a dead worker is a clear error at once,
    where a ``ProcessPoolExecutor`` of whole chunks hung for ever when one worker died."""

    #: what :func:`_teacher_games` takes before its deals, and after them
    before: tuple[Any, ...]
    after: tuple[Any, ...]
    jobs: tuple[int, ...]
    move_time_limit: float | None = None

    def play(self, index: int, status: Any = None) -> tuple[int, dict[str, np.ndarray]]:
        deal = self.jobs[index]
        return deal, _teacher_games((*self.before, [deal], *self.after))


def _teacher_worker_died(death: WorkerDeath) -> None:
    raise RuntimeError(
        f"a cloning worker process died (exit code {death.exitcode}) while playing deal {death.task.jobs[death.index]}"
    )


def _play_teacher(trainer: Trainer, deals: list[int], what: str) -> dict[str, Any] | None:
    """The teacher's games on ``deals`` in ``cfg.workers`` processes, stacked as the fit reads them (tensors
    and the legal-move index), in the order the deals were dealt out to the workers whichever finishes
    first; None when no decision was recorded."""
    cfg = trainer.cfg
    workers = max(1, cfg.workers)
    chunks = [deals[i :: workers * 4] for i in range(workers * 4) if deals[i :: workers * 4]]
    weights = (cfg.win_weight, cfg.score_weight, cfg.reward_scale, cfg.truncated_reward, cfg.score_potential)
    teacher = (cfg.bc_teacher, dict(cfg.bc_teacher_options), cfg.bc_targets == "visits")
    before = (trainer.game, *teacher, str(cfg.rules), trainer.n, cfg.seed)
    tasks = [TeacherGames(before, weights, tuple(chunk)) for chunk in chunks]
    order = {deal: k for k, deal in enumerate(deal for chunk in chunks for deal in chunk)}
    played: list[tuple[int, dict[str, np.ndarray]]] = []
    with tqdm(total=len(order), desc=f"cloning {cfg.bc_teacher}: {what}", disable=not trainer.progress) as bar:
        if workers == 1:
            outputs: Iterator[tuple[int, dict[str, np.ndarray]]] = (
                task.play(index) for task in tasks for index in range(len(task.jobs))
            )
        else:
            outputs = play_in_pool(tasks, workers, _teacher_worker_died)
        for output in outputs:
            played.append(output)
            bar.update()
    parts = [part for _deal, part in sorted(played, key=lambda item: order[item[0]])]
    parts = [p for p in parts if p["actions"].size]
    if not parts:
        return None
    return {
        "obs": torch.from_numpy(np.concatenate([p["obs"] for p in parts])),
        "legal": LegalIndex.of_packed(np.concatenate([p["masks"] for p in parts])),
        "policy": torch.from_numpy(np.concatenate([p["policy"] for p in parts])),
        "actions": torch.from_numpy(np.concatenate([p["actions"] for p in parts])),
        "targets": torch.from_numpy(np.concatenate([p["targets"] for p in parts])),
    }


def _agrees(move_logp: torch.Tensor) -> int:
    """Decisions where the teacher's move gets more than half the probability (the "agreement")."""
    return int((move_logp > math.log(0.5)).sum())


@torch.no_grad()
def _held_out_fit(trainer: Trainer, data: dict[str, Any]) -> dict[str, float]:
    """Loss and agreement of the network on decisions it is not fitted to (``bc_holdout_games``)."""
    n = data["actions"].numel()
    loss_sum, correct = 0.0, 0
    for start in range(0, n, trainer.cfg.minibatch_size):
        idx = torch.arange(start, min(n, start + trainer.cfg.minibatch_size))
        loss, move_logp = cloning_loss(
            trainer.net, idx=idx, vf_coef=trainer.cfg.vf_coef, compact=trainer.compact_batches, **data
        )
        loss_sum += loss.item() * idx.numel()
        correct += _agrees(move_logp)
    return {"holdout_loss": loss_sum / n, "holdout_agreement": correct / n, "holdout_decisions": float(n)}


def behaviour_clone(trainer: Trainer) -> dict[str, float]:
    """Fit ``trainer``'s network to ``bc_teacher``'s moves and results (warm
    start); the curves go to its TensorBoard as ``bc/*`` at steps <= 0."""
    cfg = trainer.cfg
    assert cfg.bc_teacher is not None
    data = _play_teacher(trainer, list(range(cfg.bc_games)), "games")
    if data is None:
        raise ValueError(f"bc_teacher {cfg.bc_teacher} made no decision with a choice in {cfg.bc_games} games")
    held_out_deals = list(range(cfg.bc_games, cfg.bc_games + cfg.bc_holdout_games))
    held_out = _play_teacher(trainer, held_out_deals, "held-out games") if held_out_deals else None
    with trainer.learning_threads():  # every core: no game is played during the fit
        stats = _fit(trainer, data, held_out)
    trainer.net.eval()
    trainer.bc_done = True
    return stats


def _fit(trainer: Trainer, data: dict[str, Any], held_out: dict[str, Any] | None) -> dict[str, float]:
    """``bc_epochs`` passes of Adam over the teacher's decisions; the last epoch's figures."""
    cfg = trainer.cfg
    n = data["actions"].numel()
    optimizer = torch.optim.Adam(trainer.net.parameters(), lr=cfg.bc_learning_rate)
    trainer.net.train()
    steps = cfg.bc_epochs * math.ceil(n / cfg.minibatch_size)
    stats: dict[str, float] = {}
    with tqdm(total=steps, desc="cloning: fit", disable=not trainer.progress) as bar:
        for epoch in range(cfg.bc_epochs):
            perm = torch.from_numpy(trainer.rng.permutation(n))
            correct = 0
            total_loss = 0.0
            for start in range(0, n, cfg.minibatch_size):
                idx = perm[start : start + cfg.minibatch_size]
                loss, move_logp = cloning_loss(
                    trainer.net, idx=idx, vf_coef=cfg.vf_coef, compact=trainer.compact_batches, **data
                )
                optimizer.zero_grad()
                loss.backward()
                nn.utils.clip_grad_norm_(trainer.net.parameters(), cfg.max_grad_norm)
                optimizer.step()
                correct += _agrees(move_logp)
                total_loss += loss.item() * idx.numel()
                bar.update()
            stats = {"loss": total_loss / n, "agreement": correct / n, "decisions": float(n)}
            if held_out is not None:
                stats.update(_held_out_fit(trainer, held_out))
            for key, value in stats.items():
                # steps <= 0: a resume (which drops events after its checkpoint's step) keeps these curves
                trainer.writer.add_scalar(f"bc/{key}", value, epoch - cfg.bc_epochs + 1)
    return stats
