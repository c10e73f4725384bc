"""Rollouts on the compiled core (``rollout: vector``, the default).

``num_envs`` games run in one :class:`~burako_env.vector.BurakoVectorEnv`;
every step each game makes one decision, by whoever holds its current seat:

| controller        | how it acts                                                      |
|-------------------|------------------------------------------------------------------|
| forced move       | the only legal action, not stored (it cannot change the policy)  |
| learner           | all learner rows of the step in **one** forward pass (sampled    |
|                   | over the legal actions only); stored as decisions                |
| ``snapshot:N``    | one forward pass per frozen snapshot in play, for all its rows   |
| ``planner``,      | compiled (``compiled_baselines``, agents/fast_planner.py): one   |
| ``greedy``        | kernel call per heuristic for all its rows, on the games' flat   |
|                   | states where they lie; the Python agents' moves, move for move.  |
|                   | The kernel releases the GIL, so it runs in a second thread while |
|                   | the forward passes run here (the learner's and snapshots' moves  |
|                   | never read its answer); ``timing["baselines"]`` is the wait left |
| baseline (agent)  | the agent's ``act`` on a readable ``GameState`` mirror of the    |
|                   | game (read back once, ``env.game_state(i)``, at the baseline's   |
|                   | first move of the hand, then kept in step by applying every move |
|                   | of that game: 3.4 ms a read-back against well under 1 ms an      |
|                   | apply); timed apart: ``timing["baselines"]``. With               |
|                   | ``baseline_worker_share: s`` > 0 the baselines of the first      |
|                   | ``s`` of the games live in a worker process                      |
|                   | (training/baseline_worker.py): their moves are asked for first   |
|                   | and made there while the forward passes and the other games'     |
|                   | baseline moves run here; ``timing["baselines"]`` is this         |
|                   | process's baseline moves plus the wait that is left              |

then ``env.step(actions)`` moves every game at once (finished hands are
re-dealt inside the step).

The other baselines need a readable state, which costs a conversion and the
agent's own search every time they move; their share of the loop is bounded
by their share of the games (``baseline_fraction``, schedulable) and reported
as ``rollout/baseline_share`` (seconds in baseline moves / rollout seconds).

Credit is per seat: each learner seat's decisions of a hand form one episode,
rewarded with its own side's result (``side_totals`` of the hand that ended:
the zero-sum difference of engine.zero_sum_rewards), so in self-play both
seats are stored with opposite rewards, and with 4 players partners (same
side) share the policy and the result.

Decisions live in a :class:`DecisionStore` (preallocated, growing by
doubling, masks bit-packed): one row per decision, written once and never
moved; the update gathers the batch once. Unfinished hands carry over to the
next rollout; the rows of learned episodes go back to the free list.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numba
import numpy as np
import torch

from agents import fast_planner
from agents.network import SparseRows
from agents.registry import make_agent
from burako_env import fast as F
from burako_env.actions import NUM_ACTIONS
from burako_env.melds import MELD_FEATURE_SIZE, MELD_PRESENT
from burako_env.outcomes import score_term, side_reward, zero_sum_from_totals
from burako_env.vector import BurakoVectorEnv
from training.baseline_worker import BaselineTable, BaselineWorker, RemoteAgent, Request
from training.league import SELF, SNAPSHOT_PREFIX
from training.mask_scan import MaskScan, pack_pairs
from training.network import sample_actions

if TYPE_CHECKING:
    from training.ppo import Trainer


def unpack_masks(packed: np.ndarray, num_actions: int) -> np.ndarray:
    """Bool masks (rows x num_actions) from ``np.packbits(masks, axis=1)`` rows."""
    return np.unpackbits(packed, axis=1, count=num_actions).view(np.bool_)


class DecisionStore:
    """Learner decisions, one row each: observation, legal actions (bit-packed),
    action, behaviour log-probability and value; with ``privileged_size`` > 0 also
    what the seat could not see (burako_env/privileged.py, a privileged value's input);
    with ``potentials`` the potential of ``score_potential`` (training/ppo.py's ``gae``).

    Rows are handed out from a free list and given back when their episode
    has been learned from (:meth:`release`), so nothing is ever moved: a row
    stays where it was written while its hand is in play (hands outlive
    rollouts), and memory holds the hands in play plus one batch. Grows by
    doubling when the free list runs out."""

    def __init__(
        self,
        obs_size: int,
        num_actions: int = NUM_ACTIONS,
        capacity: int = 1024,
        privileged_size: int = 0,
        potentials: bool = False,
    ) -> None:
        self.num_actions = num_actions
        self.obs = np.zeros((capacity, obs_size), dtype=np.float32)
        #: rows x 0 when no privileged value reads them
        self.privileged = np.zeros((capacity, privileged_size), dtype=np.float32)
        #: rows x 1 with ``potentials``: the part of each decision's value the network does not learn
        #: (``score_potential``); rows x 0 without
        self.potentials = np.zeros((capacity, int(potentials)), dtype=np.float32)
        self.packed_masks = np.zeros((capacity, (num_actions + 7) // 8), dtype=np.uint8)
        self.actions = np.zeros(capacity, dtype=np.int64)
        self.logprobs = np.zeros(capacity, dtype=np.float32)
        self.values = np.zeros(capacity, dtype=np.float32)
        #: free rows, used from the end
        self._free = np.arange(capacity - 1, -1, -1, dtype=np.int64)
        self._free_count = capacity

    @property
    def capacity(self) -> int:
        return self.actions.shape[0]

    @property
    def size(self) -> int:
        """Rows in use."""
        return self.capacity - self._free_count

    def masks_of(self, rows: np.ndarray) -> np.ndarray:
        """The legal-action masks of ``rows`` as bool (rows x num_actions)."""
        return unpack_masks(self.packed_masks[rows], self.num_actions)

    def _grow(self, need: int) -> None:
        old = self.capacity
        capacity = max(old + need, 2 * old)
        for name in ("obs", "privileged", "packed_masks", "actions", "logprobs", "values", "potentials"):
            array = getattr(self, name)
            grown = np.zeros((capacity, *array.shape[1:]), dtype=array.dtype)
            grown[:old] = array
            setattr(self, name, grown)
        free = np.empty(capacity, dtype=np.int64)
        free[: self._free_count] = self._free[: self._free_count]
        new_rows = np.arange(capacity - 1, old - 1, -1, dtype=np.int64)
        free[self._free_count : self._free_count + new_rows.size] = new_rows
        self._free = free
        self._free_count += new_rows.size

    def allocate(self, k: int) -> np.ndarray:
        if k > self._free_count:
            self._grow(k - self._free_count)
        self._free_count -= k
        return self._free[self._free_count : self._free_count + k][::-1].copy()

    def release(self, rows: np.ndarray) -> None:
        """Give rows back (their episode has been learned from)."""
        k = rows.size
        self._free[self._free_count : self._free_count + k] = rows
        self._free_count += k

    def put(
        self,
        obs: np.ndarray,
        masks: np.ndarray | None,
        privileged: np.ndarray | None = None,
        source_rows: np.ndarray | None = None,
        pairs: tuple[np.ndarray, np.ndarray] | None = None,
        slot_blocks: np.ndarray | None = None,
    ) -> np.ndarray:
        """Store observations and their int8 0/1 (or bool) masks in new rows; returns the rows. With
        ``source_rows`` the observations are those rows of ``obs``, copied once (no gathered copy first),
        and with ``slot_blocks`` too (``(offset, slots, ...)`` rows by offset: ``PolicyNet.slot_block_table``)
        only the meld slots in use are copied (``_copy_rows_over``; every row stored so must be so, as an
        observation is). With ``pairs`` instead of ``masks``: the masks as their legal (row, action) pairs,
        rows numbered from 0 (``training.mask_scan``)."""
        if (masks is None) == (pairs is None):
            raise ValueError("put: give either the masks or their legal pairs")
        rows = self.allocate(obs.shape[0] if source_rows is None else source_rows.shape[0])
        if source_rows is None:
            self.obs[rows] = obs
        else:
            if source_rows.size and (source_rows.min() < 0 or source_rows.max() >= obs.shape[0]):
                raise IndexError(f"put: source rows outside the {obs.shape[0]} observations given")
            if slot_blocks is not None:
                _copy_rows_over(obs, source_rows, self.obs, rows, slot_blocks, MELD_PRESENT, MELD_FEATURE_SIZE)
            else:
                _copy_rows(obs, source_rows, self.obs, rows)
        if privileged is not None:
            self.privileged[rows] = privileged
        if pairs is not None:
            pack_pairs(pairs[0], pairs[1], self.packed_masks, rows)
        else:
            assert masks is not None
            self.packed_masks[rows] = np.packbits(masks.view(np.bool_), axis=1)
        return rows


@numba.njit(cache=True, nogil=True)
def _copy_rows(source: np.ndarray, source_rows: np.ndarray, target: np.ndarray, target_rows: np.ndarray) -> None:
    """``target[target_rows] = source[source_rows]`` in one copy (numpy's fancy indexing gathers first)."""
    for i in range(source_rows.shape[0]):
        target[target_rows[i]] = source[source_rows[i]]


@numba.njit(cache=True, nogil=True)
def _copy_rows_over(
    source: np.ndarray,
    source_rows: np.ndarray,
    target: np.ndarray,
    target_rows: np.ndarray,
    blocks: np.ndarray,
    present: int,
    width: int,
) -> None:  # pragma: no cover - compiled
    """:func:`_copy_rows` for observation rows whose meld-slot ``blocks`` (``(offset, slots)``, by offset) are
    in use as a prefix, the rest all zeros (``agents.network._slot_blocks``), on both sides: per block only
    the source's slots in use are copied and the target's slots past them that were in use are cleared.
    The blocks are ~90% of a row and a hand uses a few of their slots."""
    for i in range(source_rows.shape[0]):
        src = source[source_rows[i]]
        dst = target[target_rows[i]]
        at = 0
        for b in range(blocks.shape[0]):
            start = blocks[b, 0]
            slots = blocks[b, 1]
            dst[at:start] = src[at:start]
            new = 0
            while new < slots and src[start + new * width + present] != 0:
                new += 1
            old = 0
            while old < slots and dst[start + old * width + present] != 0:
                old += 1
            dst[start : start + new * width] = src[start : start + new * width]
            if old > new:
                dst[start + new * width : start + old * width] = 0.0
            at = start + slots * width
        dst[at:] = src[at:]


@dataclass
class StoredEpisode:
    """A finished episode of one learner seat whose decisions are rows of a
    :class:`DecisionStore` (same fields as ``ppo.Episode``, read from it)."""

    store: DecisionStore
    rows: np.ndarray
    reward: float
    seat: int = -1
    hand: int = -1
    opponent: str = ""

    @property
    def obs(self) -> np.ndarray:
        return self.store.obs[self.rows]

    @property
    def masks(self) -> np.ndarray:
        return self.store.masks_of(self.rows)

    @property
    def actions(self) -> np.ndarray:
        return self.store.actions[self.rows]

    @property
    def logprobs(self) -> np.ndarray:
        return self.store.logprobs[self.rows]

    @property
    def values(self) -> np.ndarray:
        return self.store.values[self.rows]


def close_hand(
    trainer: Trainer, opponent: str, episodes: Sequence[Any], learner_result: float | None, truncated: bool = False
) -> None:
    """A finished hand in the trainer's books: its learner episodes' returns and lengths for the charts
    (not in self-play: zero-sum returns would pull them to 0), whether it was cut at ``max_turns``
    (self-play included: stalling shows there first), the learner's result against a league
    ``opponent`` (``learner_result`` > 0 a win; None: the hand says nothing about strength; an evicted
    snapshot is gone), and one more hand done."""
    trainer.recent_truncated.append(truncated)
    if opponent != SELF:
        for episode in episodes:
            trainer.recent_returns.append(float(episode.reward))
            trainer.recent_lengths.append(episode_length(episode))
    if learner_result is not None and opponent in trainer.league.opponents:
        trainer.league.record(opponent, 1.0 if learner_result > 0 else 0.0 if learner_result < 0 else 0.5)
    trainer.episodes_done += 1


class StoredCollect:
    """``collect`` for rollouts that keep their decisions in a :class:`DecisionStore` (``self.store``):
    the rows of the last update's episodes are freed first."""

    store: DecisionStore
    #: the rows of each batch handed out and not yet given back, oldest first
    _learned: list[list[np.ndarray]]

    def step(self, finished: list[StoredEpisode]) -> int:
        raise NotImplementedError

    def collect(self, batch_size: int, keep: int = 0) -> list[StoredEpisode]:
        """Play until at least ``batch_size`` learner decisions lie in finished episodes. The rows of the
        batches handed out before go back to the store, but for the last ``keep`` of them (an update
        reading one while this rollout plays: ``overlap_rollout``)."""
        kept = self._learned[max(len(self._learned) - keep, 0) :] if keep else []
        for batch in self._learned[: len(self._learned) - len(kept)]:
            for rows in batch:
                self.store.release(rows)
        # forgotten at once: a collect that raises (Ctrl-C, a worker's error) must not leave them to be
        # released again by the next one, which would hand the same rows out twice
        self._learned = kept
        finished: list[StoredEpisode] = play_until(self.step, batch_size)
        self._learned = [*kept, [ep.rows for ep in finished]]
        return finished


class VectorRollout(StoredCollect):
    """The trainer's games on the batched compiled core (module docstring)."""

    #: the compiled baselines choose in a second thread while the forward passes run; False: after them, in
    #: this thread (the same moves; what the benchmark compares against)
    overlap_compiled_baselines: bool = True
    #: each step's masks read in one compiled pass (``training.mask_scan``); False: numpy's passes (the same
    #: moves and draws; what the benchmark compares against)
    scan_masks: bool = True

    def __init__(self, trainer: Trainer, num_threads: int | None = None) -> None:
        self.trainer = trainer
        cfg = trainer.cfg
        self.n = trainer.n
        self.num_envs = cfg.num_envs
        # own_obs: the rollout only reads the games' observations, so each step clears only what they set
        self.env = BurakoVectorEnv(cfg.num_envs, trainer.n, rules=trainer.rules, num_threads=num_threads, own_obs=True)
        self.num_sides = self.env.num_sides
        self.seeds = [int(s) for s in trainer.rng.integers(2**63, size=cfg.num_envs)]
        self.env.reset(seed=self.seeds)
        # with ``privileged_value`` the store keeps what each learner seat could not see beside its decision,
        # with ``score_potential`` the table's margin for the seat
        self.store = DecisionStore(
            self.env.observation_size,
            capacity=max(1024, cfg.batch_size),
            privileged_size=trainer.net.privileged_size,
            potentials=cfg.score_potential,
        )
        n_envs, n = cfg.num_envs, trainer.n
        self.opponent = [SELF] * n_envs
        self.learner_side = np.zeros(n_envs, dtype=np.int64)
        self.learner_seat = np.zeros((n_envs, n), dtype=np.bool_)
        #: rows of each (game, seat)'s decisions in the current hand
        self.live: list[list[list[int]]] = [[[] for _ in range(n)] for _ in range(n_envs)]
        #: the baselines that play here: their agents (with the worker's stand-ins, by key
        #: ``(game, seat, name)``), the readable mirrors of their games (module docstring) and the
        #: seats' view generators; the worker keeps the same kind of table for its games
        self.baselines = BaselineTable(trainer.rules, n, trainer.observer)
        self.agents = self.baselines.agents
        self.mirrors = self.baselines.mirrors
        #: ``baseline_worker_share``: the games whose baselines play in the worker process (always the
        #: same games: their agents live there), the process, what it has not been told yet (events,
        #: in order: training/baseline_worker.py) and the games it holds a mirror of
        self.remote_games = np.arange(n_envs) < round(cfg.baseline_worker_share * n_envs)
        #: the baselines that play on the compiled core (``compiled_baselines``): their tables' kernel
        #: arguments by league name; they need no mirror and never go to the worker
        self.compiled: dict[str, tuple[np.ndarray, ...]] = {}
        if cfg.compiled_baselines:
            for name in cfg.league_baselines:
                tables = fast_planner.compiled_tables(name, cfg.league_baseline_options.get(name, {}), trainer.rules, n)
                if tables is not None:
                    self.compiled[name] = tables.kernel_args
        #: the thread the compiled baselines choose in while the forward passes run (one kernel call at a
        #: time, so no numba parallel section: the kernels are plain loops); made at the first such step
        self._compiled_thread: ThreadPoolExecutor | None = None
        remote_names = set(cfg.league_baselines) - set(self.compiled)
        self.worker = BaselineWorker(trainer.rules, n) if self.remote_games.any() and remote_names else None
        self.events: list[tuple[Any, ...]] = []
        self.remote_mirrors: set[int] = set()
        self._submit_seconds = 0.0
        #: seconds per part of the loop since the trainer last read them
        self.timing = {"env": 0.0, "learner": 0.0, "snapshots": 0.0, "baselines": 0.0, "bookkeeping": 0.0}
        #: when a list: (game, seat, action, store row or -1) of every move, for tests
        self.trace: list[tuple[int, int, int, int]] | None = None
        self._all = np.arange(n_envs)
        self._no_rows = np.zeros(0, dtype=np.int64)
        self._mask_scan = MaskScan(n_envs, self.env.masks.shape[1])
        #: rows of the episodes handed to the last update, freed at the next collect
        self._learned: list[list[np.ndarray]] = []
        for i in range(n_envs):
            self._new_hand(i)

    @property
    def mask_scan(self) -> MaskScan | None:
        """The step's compiled pass over the masks, or None with ``scan_masks`` off."""
        return self._mask_scan if self.scan_masks else None

    @property
    def sparse_forward(self) -> bool:
        """The learner's forward passes read what each row sets where the games keep it (``Trainer.sparse_batches``
        where the update reads reduced rows too: ``compact_batches``, float32 on the CPU, a network that reads
        compact rows), and its rows go to the store in one copy. ``BURAKO_COMPACT_BATCHES=0`` thus repeats
        the runs made before both, rollout and update."""
        t = self.trainer
        return (
            t.compact_batches
            and t.sparse_batches
            and t.device.type == "cpu"
            and t.compute_dtype == torch.float32
            and t.acting_net.compacts
        )

    # ------------------------------------------------------------------ hands
    def opponents_in_play(self) -> set[str]:
        return set(self.opponent)

    def _new_hand(self, i: int) -> None:
        t = self.trainer
        opponent = t.league.sample(t.rng)
        self.opponent[i] = opponent
        side = int(t.rng.integers(self.num_sides))
        self.learner_side[i] = side
        for s in range(self.n):
            self.learner_seat[i, s] = opponent == SELF or s % self.num_sides == side
            self.live[i][s] = []
        view_seeds = [t.rng.integers(2**63) for _ in range(self.n)]
        seats = [s for s in range(self.n) if not self.learner_seat[i, s]]
        if opponent in self.compiled:
            # played where the game lies: no mirror, no worker. Its agents are still made and reset as the
            # Python path makes them (a seed drawn from the trainer's generator for each new one), so the
            # league's and the seeds' draws, and so the games, are that path's
            self.mirrors.pop(i, None)
            self.remote_mirrors.discard(i)
            ready_opponent(t, opponent, seats, self.agents, (i,))
            return
        if not self.remote_games[i] or self.worker is None:
            self.baselines.handle(("hand", i, view_seeds))
            ready_opponent(t, opponent, seats, self.agents, (i,))
            return
        self.remote_mirrors.discard(i)
        self.events.append(("hand", i, view_seeds))
        ready_opponent(t, opponent, seats, self.agents, (i,), build=lambda *a: RemoteAgent(self.events.append, *a))

    def _finish_hand(self, i: int, finished: list[StoredEpisode]) -> None:
        t = self.trainer
        cfg = t.cfg
        env = self.env
        totals = env.side_totals[i].astype(np.float64)
        sides = self.num_sides
        diffs = zero_sum_from_totals(totals.tolist())
        opponent = self.opponent[i]
        start = len(finished)
        truncated = int(env.end_reason[i]) == F.END_TRUNCATED
        for seat in range(self.n):
            rows = self.live[i][seat]
            if not self.learner_seat[i, seat] or not rows:
                continue
            reward = side_reward(
                diffs[seat % sides], truncated, cfg.win_weight, cfg.score_weight, cfg.reward_scale, cfg.truncated_reward
            )
            finished.append(
                StoredEpisode(
                    self.store,
                    np.asarray(rows, dtype=np.int64),
                    float(reward),
                    seat=seat,
                    hand=t.episodes_done,
                    opponent=opponent,
                )
            )
        scored = int(env.end_reason[i]) not in (F.END_VOID, F.END_TRUNCATED)
        close_hand(t, opponent, finished[start:], diffs[self.learner_side[i]] if scored else None, truncated)
        self._new_hand(i)

    # ------------------------------------------------------------------ stepping
    @torch.inference_mode()
    def step(self, finished: list[StoredEpisode]) -> int:
        """Every game makes one decision; returns the learner decisions stored."""
        t = self.trainer
        env = self.env
        clock = time.perf_counter
        t0 = clock()
        masks = env.masks
        current = env.current_player
        actions = np.zeros(self.num_envs, dtype=np.int64)
        scan = self.mask_scan
        if scan is not None:  # one compiled pass: counts, forced moves, and below the learner's pairs
            scan.scan(masks)
            forced = scan.counts == 1
            actions[forced] = scan.first[forced]
        else:
            counts = masks.sum(axis=1, dtype=np.int32)  # 0/1 int8: the legal count, ~3x np.count_nonzero's speed
            forced = counts == 1
            if forced.any():
                actions[forced] = np.argmax(masks[forced], axis=1)
        free = ~forced
        learner = free & self.learner_seat[self._all, current]
        learner_rows = np.flatnonzero(learner)
        snapshot_rows: dict[str, list[int]] = {}
        compiled_rows: dict[str, list[int]] = {}
        baseline_rows: list[int] = []
        for i in np.flatnonzero(free & ~learner).tolist():
            name = self.opponent[i]
            if name.startswith(SNAPSHOT_PREFIX):
                snapshot_rows.setdefault(name, []).append(i)
            elif name in self.compiled:
                compiled_rows.setdefault(name, []).append(i)
            else:
                baseline_rows.append(i)
        remote_rows = [i for i in baseline_rows if self.remote_games[i]] if self.worker is not None else []
        if remote_rows:  # the worker plays these while the forward passes and the other baselines run here
            baseline_rows = [i for i in baseline_rows if not self.remote_games[i]]
            self._submit_baseline_moves(remote_rows, current, masks)
        compiled_moves: Future[list[tuple[np.ndarray, np.ndarray]]] | None = None
        if compiled_rows and (learner_rows.size or snapshot_rows) and self.overlap_compiled_baselines:
            if self._compiled_thread is None:
                self._compiled_thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="compiled-baselines")
            compiled_moves = self._compiled_thread.submit(self._compiled_choices, compiled_rows, masks)
        t1 = clock()
        try:
            stored = self._no_rows
            if learner_rows.size:
                store = self.store
                mask_np: np.ndarray | None = None
                pairs_np: tuple[np.ndarray, np.ndarray] | None = None
                if scan is not None:
                    pairs_np = scan.select(learner_rows)
                else:
                    mask_np = masks[learner_rows].view(np.bool_)
                hidden = env.privileged(learner_rows, current[learner_rows]) if store.privileged.shape[1] else None
                learner_obs: torch.Tensor | SparseRows
                if self.sparse_forward:  # the rows copied once into the store, read where the games keep them
                    stored = store.put(
                        env.obs,
                        mask_np,
                        hidden,
                        source_rows=learner_rows,
                        pairs=pairs_np,
                        slot_blocks=t.acting_net.slot_block_table,
                    )
                    learner_obs = t.acting_net.sparse(torch.from_numpy(env.obs), torch.from_numpy(learner_rows)).whole()
                else:
                    obs_np = env.obs[learner_rows]
                    stored = store.put(obs_np, mask_np, hidden, pairs=pairs_np)
                    learner_obs = torch.from_numpy(obs_np).to(t.device)
                if store.potentials.shape[1]:
                    margins = env.table_margins(learner_rows, current[learner_rows])
                    store.potentials[stored, 0] = score_term(margins, t.cfg.score_weight, t.cfg.reward_scale)
                mask = torch.from_numpy(mask_np).to(t.device) if mask_np is not None else None
                pairs = None
                if pairs_np is not None:
                    pairs = (torch.from_numpy(pairs_np[0]).to(t.device), torch.from_numpy(pairs_np[1]).to(t.device))
                privileged = torch.from_numpy(hidden).to(t.device) if hidden is not None else None
                with t.autocast():
                    chosen, logp, values = sample_actions(
                        t.acting_net, learner_obs, mask, privileged=privileged, pairs=pairs
                    )
                chosen_np = chosen.cpu().numpy()
                store.actions[stored] = chosen_np
                store.logprobs[stored] = logp.cpu().numpy()
                store.values[stored] = values.cpu().numpy()
                actions[learner_rows] = chosen_np
                live = self.live
                for row, i in zip(stored.tolist(), learner_rows.tolist(), strict=True):
                    live[i][current[i]].append(row)
            t2 = clock()
            if snapshot_rows:  # every snapshot's rows in one sampling pass, each through its own torso
                index = np.concatenate([np.asarray(rows) for rows in snapshot_rows.values()])
                groups = t.snapshot_groups(list(snapshot_rows), [len(rows) for rows in snapshot_rows.values()])
                obs = torch.from_numpy(env.obs[index]).to(t.device)
                mask = torch.from_numpy(masks[index].view(np.bool_)).to(t.device)
                with t.autocast():
                    chosen, _, _ = sample_actions(groups, obs, mask)
                actions[index] = chosen.cpu().numpy()
        except BaseException:  # Ctrl-C in a notebook: the games must not move while the kernel reads them
            if compiled_moves is not None:
                wait([compiled_moves])
            raise
        t3 = clock()
        if compiled_moves is not None:
            choices = compiled_moves.result()
        else:
            choices = self._compiled_choices(compiled_rows, masks)
        for index, chosen_np in choices:
            actions[index] = chosen_np
        for i in baseline_rows:
            seat = int(current[i])
            if i not in self.mirrors:
                self.mirrors[i] = env.game_state(i)
            actions[i] = self.baselines.act(i, seat, (i, seat, self.opponent[i]), masks[i].copy())
        if remote_rows:
            assert self.worker is not None
            actions[remote_rows] = self.worker.actions()
        t4 = clock()
        if self.trace is not None:
            rows_of = dict(zip(learner_rows.tolist(), stored.tolist(), strict=True))
            for i in range(self.num_envs):
                self.trace.append((i, int(current[i]), int(actions[i]), rows_of.get(i, -1)))
        env.step(actions)
        t5 = clock()
        # the mirrors follow their games once the games moved: a Ctrl-C before (waiting for the worker's
        # answer, in a notebook) left this process's mirrors a move ahead of the games
        for i, mirror in self.mirrors.items():  # this process's mirrors: no game of the worker's
            mirror.apply(int(actions[i]))
        self.events.extend(("apply", i, int(actions[i])) for i in self.remote_mirrors)
        mirrored = clock()
        for i in np.flatnonzero(env.terminated | env.truncated).tolist():
            self._finish_hand(i, finished)
        t6 = clock()
        timing = self.timing
        timing["bookkeeping"] += (t1 - t0) + (t6 - mirrored)
        timing["learner"] += t2 - t1
        timing["snapshots"] += t3 - t2
        timing["baselines"] += (t4 - t3) + (mirrored - t5)
        timing["env"] += t5 - t4
        if remote_rows:  # the read-backs and the sending: the baselines' cost in this process
            timing["bookkeeping"] -= self._submit_seconds
            timing["baselines"] += self._submit_seconds
        return int(learner_rows.size)

    def _compiled_choices(
        self, compiled_rows: dict[str, list[int]], masks: np.ndarray
    ) -> list[tuple[np.ndarray, np.ndarray]]:
        """The compiled baselines' moves: ``(games, actions)`` per heuristic (read-only on the games)."""
        env = self.env
        choices = []
        for name, rows in compiled_rows.items():
            index = np.asarray(rows, dtype=np.int64)
            chosen = np.empty(index.size, dtype=np.int64)
            fast_planner.choose_rows(env.states, masks, index, env.tables.kernel_args, self.compiled[name], chosen)
            choices.append((index, chosen))
        return choices

    def _submit_baseline_moves(self, rows: list[int], current: np.ndarray, masks: np.ndarray) -> None:
        """Send the worker what happened since the last step it heard of (a game's mirror at its
        baseline's first move of the hand) and the moves this step wants from it."""
        start = time.perf_counter()
        requests: list[Request] = []
        for i in rows:
            if i not in self.remote_mirrors:
                self.events.append(("mirror", i, self.env.state_dict(i)))
                self.remote_mirrors.add(i)
            seat = int(current[i])
            requests.append((i, seat, (i, seat, self.opponent[i]), masks[i].copy()))
        assert self.worker is not None
        self.worker.submit(self.events, requests)
        self.events.clear()  # sent; the list object stays (the stand-in agents queue into it)
        self._submit_seconds = time.perf_counter() - start

    def close(self) -> None:
        """Stop the baseline worker and the compiled baselines' thread, if any (the rollout cannot step after
        this)."""
        if self.worker is not None:
            self.worker.close()
        if self._compiled_thread is not None:
            self._compiled_thread.shutdown(wait=True)
            self._compiled_thread = None


def ready_opponent(
    trainer: Trainer,
    opponent: str,
    seats: Iterable[int],
    agents: dict[tuple[Any, ...], Any],
    prefix: tuple = (),
    build: Callable[[tuple[Any, ...], str, int, dict[str, Any]], Any] | None = None,
) -> None:
    """Ready a new hand's league opponent for the seats it plays: a snapshot's network is built now
    (the league may evict it before the hand ends); a baseline gets one agent per seat, made once with
    its ``league_baseline_options`` (key ``(*prefix, seat, name)`` in ``agents``) and reset every hand.
    ``build(key, name, seed, options)`` makes the agent instead of ``make_agent`` (a worker's stand-in)."""
    if opponent.startswith(SNAPSHOT_PREFIX):
        trainer._snapshot_net(opponent)
    elif opponent != SELF:
        for s in seats:
            key = (*prefix, s, opponent)
            if key not in agents:
                options = trainer.cfg.league_baseline_options.get(opponent, {})
                seed = int(trainer.rng.integers(2**31))
                agents[key] = build(key, opponent, seed, options) if build else make_agent(opponent, seed, **options)
            agents[key].reset(s, trainer.rules, trainer.n)


def episode_length(episode: Any) -> int:
    """Decisions in an episode: a :class:`StoredEpisode`'s rows, or an engine ``Episode``'s actions."""
    return int(episode.rows.size if hasattr(episode, "rows") else episode.actions.size)


def play_until(step: Callable[[list[Any]], int], batch_size: int) -> list[Any]:
    """Call ``step(finished)`` (every game makes one decision, finished
    episodes are appended) until at least ``batch_size`` learner decisions lie
    in finished episodes; unfinished hands carry over to the next call."""
    finished: list[Any] = []
    done = 0
    while done < batch_size:
        before = len(finished)
        step(finished)
        done += sum(episode_length(ep) for ep in finished[before:])
    return finished


def episode_batch(episodes: list[Any], gather_obs: bool = True) -> dict[str, np.ndarray]:
    """The stored arrays of a list of episodes, concatenated in order (one
    gather per array for store-backed episodes). Store-backed episodes give
    their legal actions as ``packed_masks`` (``np.packbits`` rows, unpacked only
    where needed), others as bool ``masks``.

    ``gather_obs=False``: store-backed episodes leave their observations where
    they are and give ``obs_store`` (the store's whole array, not a copy) and
    ``obs_rows`` (their rows of it, in order) instead of ``obs``: gathering the
    reference batch's ~16,500 rows of 4,886 floats is a fresh 320 MB array, 0.1-0.9 s
    an update of copying and page faults, when each minibatch can gather its own."""
    names = ("obs", "masks", "actions", "logprobs", "values")
    if episodes and all(isinstance(ep, StoredEpisode) for ep in episodes):
        store = episodes[0].store
        if all(ep.store is store for ep in episodes):
            rows = np.concatenate([ep.rows for ep in episodes])
            batch = {name: getattr(store, name)[rows] for name in names if name not in ("masks", "obs")}
            if gather_obs:
                batch["obs"] = store.obs[rows]
            else:
                batch["obs_store"], batch["obs_rows"] = store.obs, rows
            batch["packed_masks"] = store.packed_masks[rows]
            if store.privileged.shape[1]:
                batch["privileged"] = store.privileged[rows]
            if store.potentials.shape[1]:
                batch["potentials"] = store.potentials[rows, 0]
            return batch
    return {name: np.concatenate([getattr(ep, name) for ep in episodes]) for name in names}
