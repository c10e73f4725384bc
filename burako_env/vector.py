"""The batched API for training: N games stepped at once on the compiled core.

``BurakoVectorEnv(num_envs=N)`` plays N independent hands (one hand per
episode, as ``burako_env.env(match=False)``), always from the point of view
of the player to act in each game:

| call                  | returns                                                              |
|-----------------------|----------------------------------------------------------------------|
| ``reset(seed)``       | ``obs[N, D]`` float32, ``masks[N, A]`` int8, ``info``                  |
| ``step(actions[N])``  | ``obs, masks, rewards[N, P]`` float32, ``terminated[N]``,             |
|                       | ``truncated[N]`` bool, ``info``                                        |
| ``close()``           | nothing: ``step`` refuses until the next ``reset``                     |

- ``obs[i]`` is the observation (observation.py layout, D entries) of
  ``info["current_player"][i]``, the seat to act in game i; ``masks[i]`` its
  legal actions (A = actions.NUM_ACTIONS).
- ``rewards[i, p]`` is seat p's reward for the step: zero until a hand ends,
  then the env's (``reward="score"``: the side's hand score minus the mean of
  the others', / ``reward_scale``; ``"win"``: +1 / -1 shared, 0 for a tie).
- When a hand ends (``terminated`` or, at ``max_turns``, ``truncated``), that
  game is dealt again at once: ``obs[i]`` and ``masks[i]`` are already the
  new hand's. ``info["end_reason"][i]`` (fast.END_*), ``info["side_totals"]``
  (hand totals per side, 0 for void or truncated hands) describe the hand that
  just ended.
- Seeds: game i draws every deal from its own ``numpy.random.Generator``,
  ``default_rng(seeds[i])`` (``seed`` an int: ``seeds[i] = seed + i``), with the
  same draws as the readable engine, so game i's first hand is
  ``GameState.new_game(default_rng(seeds[i]), rules, P)``'s and its next hands
  those of further ``new_game`` calls on that generator. A ``None`` in a list
  of seeds gives that game fresh entropy.
- The returned arrays are buffers owned by the env and overwritten by the
  next ``step``: copy what you keep. ``masks`` is read-only (the env checks the
  next actions against it). ``obs`` stays writable (``torch.from_numpy`` warns on
  a read-only array); with ``own_obs=True`` the caller promises not to write into
  it, and each step clears only what a row's previous observation set instead of
  its whole 19.5 kB (``fast.encode_over``: the meld slots the hand does not use,
  most of a row, stay zero); a write there would then reach later observations.
  The trainer's rollout, which only reads ``obs``, sets it.
- An illegal or out-of-range action raises ValueError naming the games, and
  no game moves.

Threads: the kernels run ``prange`` over chunks of games (16 per thread, each
with its own scratch rows); on one thread the step runs a serial kernel, every
game on one scratch block. By default (measured in ``bench/bench_threads.py``,
bench/README.md) numba's ``workqueue`` threading layer is used, whose idle
workers sleep instead of spinning, and the chunks are handed out dynamically
(``numba.parallel_chunksize(1)``), so a core taken by another process (torch
in the same trainer, or any other program) slows only the chunks it runs
instead of stalling every thread at a barrier. ``NUMBA_THREADING_LAYER`` set
in the environment, or a layer chosen before this module is imported, wins.
``num_threads=None`` (the default) lets each env time its own steps and keep
the faster of one thread and every thread the caller allows when it builds the
env (``numba.get_num_threads()``; :class:`ThreadTuner`: a core
taken by another program, or by torch in the same process, can make two
threads slower than one); ``num_threads=k`` fixes k threads. Either is the
env's own: set around its reset and step kernels and given back after (numba's
count belongs to the calling thread), so envs of other counts in one process
keep theirs, and the module's functions (``sample_legal_actions``) run on the
caller's count (``numba.set_num_threads``).

Memory: per game a 4.5 kB state, one observation (D x 4 bytes: 19.5 kB with 2
players) and one mask (3.5 kB); and per chunk of games (16 a thread, at most one
a game) 274 kB of look-ahead scratch: 62.6 kB a game for 256 games on 2
threads; see ``memory_bytes``.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Iterator, Sequence
from typing import Any

import numba
import numpy as np

from burako_env import fast as F
from burako_env.actions import NUM_ACTIONS
from burako_env.engine import GameState, draw_first_mano, shuffle_tiles
from burako_env.env import check_count, check_reward, check_seed, rules_for_env
from burako_env.privileged import privileged_features
from burako_env.rules import Rules
from burako_env.safe_yaml import is_integer, short_repr

#: the threading layer the batched API asks for unless the user chose one
#: (module docstring): workqueue's idle threads sleep, omp's spin at barriers
DEFAULT_THREADING_LAYER = "workqueue"
#: prange iterations handed out per grab: 1 = dynamic scheduling of the chunks
PARALLEL_CHUNKSIZE = 1
#: chunks of games per thread: small chunks keep the wait for a descheduled
#: thread's last chunk short (each chunk has its own ~60 kB of scratch rows)
CHUNKS_PER_THREAD = 16


class ThreadTuner:
    """Chooses how many threads the step kernel runs on by timing it.

    Between one thread and ``max_threads``: each step runs on the current
    choice and its seconds go into that choice's moving average; every
    ``explore_every`` steps one step runs on the other choice, so a change
    of the machine's load (another program starts or stops) is noticed
    within a few hundred steps. The cost is one timer read per step and
    1/``explore_every`` of the steps on the slower choice."""

    #: weight of a new step's time in the moving average of the current choice
    SMOOTHING = 0.1
    #: the same for the other choice, timed once in ``explore_every`` steps:
    #: heavier, so a freed or taken core changes the choice in a few tries
    EXPLORE_SMOOTHING = 0.5

    def __init__(self, max_threads: int, explore_every: int = 32) -> None:
        self.choices = (1, max_threads) if max_threads > 1 else (1,)
        self.explore_every = explore_every
        self.seconds: dict[int, float | None] = dict.fromkeys(self.choices)
        #: the choices whose first, cold step (the kernel's load, the thread pool's start: ~100x a
        #: step) was left out of their average
        self.warmed: set[int] = set()
        self.current = self.choices[-1]
        self.steps = 0

    def threads(self) -> int:
        """The thread count for the next step."""
        self.steps += 1
        if len(self.choices) > 1:
            other = self.choices[0] if self.current == self.choices[1] else self.choices[1]
            if self.seconds[other] is None or self.steps % self.explore_every == 0:
                return other
        return self.current

    def record(self, threads: int, seconds: float) -> None:
        """One step's time on ``threads``; the faster average becomes the choice. A choice's first
        step is not counted: it was charged a cold start and kept its choice out for 256 steps."""
        if threads not in self.warmed:
            self.warmed.add(threads)
            return
        old = self.seconds[threads]
        weight = self.SMOOTHING if threads == self.current else self.EXPLORE_SMOOTHING
        self.seconds[threads] = seconds if old is None else old + weight * (seconds - old)
        known = {t: v for t, v in self.seconds.items() if v is not None}
        self.current = min(known, key=known.__getitem__)


def _choose_threading_layer() -> None:
    """Select :data:`DEFAULT_THREADING_LAYER` unless the environment or the
    program already picked one (numba's own default is ``"default"``)."""
    if "NUMBA_THREADING_LAYER" not in os.environ and numba.config.THREADING_LAYER == "default":
        numba.config.THREADING_LAYER = DEFAULT_THREADING_LAYER


_choose_threading_layer()

#: held around a parallel kernel while the threading layer may be workqueue, which numba cannot enter
#: from two Python threads at once: it aborts the whole process ("Concurrent access has been detected")
_WORKQUEUE_LOCK = threading.Lock()


def parallel_section() -> contextlib.AbstractContextManager[Any]:
    """The context to launch one of this module's parallel kernels in: the workqueue lock unless
    numba runs a layer that takes calls from several threads (omp, tbb), so two envs stepped in two
    threads wait for each other instead of ending the process."""
    try:
        layer = numba.threading_layer()
    except ValueError:  # no parallel kernel has run yet: the layer is not chosen
        layer = None
    return _WORKQUEUE_LOCK if layer in (None, "workqueue") else contextlib.nullcontext()


@numba.njit(cache=True, nogil=True)
def _chunk(n, chunks, c):
    """Games ``[start, stop)`` of chunk c: each chunk has its own scratch rows,
    so the threads running chunks never share one."""
    per = (n + chunks - 1) // chunks
    return c * per, min(n, (c + 1) * per)


@numba.njit(cache=True, parallel=True, nogil=True)
def _reset_all(states, tiles, manos, T, bufs, masks, obs, current, obs_slots, own_obs):
    chunks = bufs.shape[0]
    for c in numba.prange(chunks):
        buf = bufs[c]
        for i in range(*_chunk(states.shape[0], chunks, c)):
            st = states[i]
            F.new_match(st, tiles[i], manos[i], T)
            F.legal_mask(st, T, buf, masks[i])
            current[i] = st[F.CURRENT]
            _encode_row(st, current[i], T, obs[i], obs_slots[i], own_obs)


@numba.njit(cache=True, nogil=True)
def _encode_row(st, player, T, out, slots_written, own_obs):
    """A game's observation row: over the previous one (``fast.encode_over``) when ``own_obs``
    (``BurakoVectorEnv(own_obs=True)``), else cleared whole; either way the slots it sets are noted, so
    ``own_obs`` may be switched on between steps."""
    if own_obs:
        F.encode_over(st, player, T, out, slots_written)
    else:
        F.encode(st, player, T, out)
        F.note_slots(st, player, T, slots_written)


@numba.njit(cache=True, nogil=True)
def _zero_sum(own, total, sides):
    """E5 in a kernel: a side's total minus the mean of the others' (``outcomes.zero_sum_from_totals``)."""
    return own - (total - own) / (sides - 1)


@numba.njit(cache=True, nogil=True)
def _table_margins(states, games, seats, T, out):
    sides = T[F.T_RULE_VALUES][F.RV_SIDES]
    for r in range(games.size):
        st = states[games[r]]
        own_side = seats[r] % sides
        total = 0.0
        own = 0.0
        for s in range(sides):
            v = F.table_total(st, T, s)
            total += v
            if s == own_side:
                own = v
        out[r] = _zero_sum(own, total, sides)


@numba.njit(cache=True, nogil=True)
def _finish_hand(st, i, T, win, scale, rewards, terminated, truncated, ends, totals):
    rv = T[F.T_RULE_VALUES]
    sides = rv[F.RV_SIDES]
    reason = st[F.END_REASON]
    ends[i] = reason
    truncated[i] = reason == F.END_TRUNCATED
    terminated[i] = reason != F.END_TRUNCATED
    side_reward = np.zeros(F.MAX_SIDES, dtype=np.float64)
    if st[F.HAS_SCORES]:
        total = 0
        for s in range(sides):
            v = F.side_total(st, s)
            totals[i, s] = v
            total += v
        best = totals[i, 0]
        for s in range(1, sides):
            best = max(best, totals[i, s])
        if win:
            leaders = 0
            winner = -1
            for s in range(sides):
                if totals[i, s] == best:
                    leaders += 1
                    winner = s
            if leaders == 1:
                for s in range(sides):
                    side_reward[s] = 1.0 if s == winner else -1.0 / (sides - 1)
        else:
            for s in range(sides):
                v = totals[i, s]
                side_reward[s] = _zero_sum(v, total, sides) / scale
    for p in range(rv[F.RV_PLAYERS]):
        rewards[i, p] = side_reward[p % sides]


@numba.njit(cache=True, nogil=True)
def _step_games(
    states, actions, T, buf, masks, obs, current, rewards, terminated, truncated, ends, totals,
    next_tiles, next_manos, refill, win, scale, obs_slots, own_obs, start, stop,
):  # fmt: skip
    """Games ``[start, stop)`` make their moves, on the scratch rows ``buf`` (the step kernels' body)."""
    for i in range(start, stop):
        st = states[i]
        F.apply_unchecked(st, actions[i], T)
        rewards[i, :] = 0.0
        totals[i, :] = 0
        ends[i] = 0
        terminated[i] = False
        truncated[i] = False
        if st[F.PHASE] == F.P_HAND_OVER:
            _finish_hand(st, i, T, win, scale, rewards, terminated, truncated, ends, totals)
            F.new_match(st, next_tiles[i], next_manos[i], T)
            refill[i] = 1
        F.legal_mask(st, T, buf, masks[i])
        current[i] = st[F.CURRENT]
        _encode_row(st, current[i], T, obs[i], obs_slots[i], own_obs)


@numba.njit(cache=True, parallel=True, nogil=True)
def _step_all(
    states, actions, T, bufs, masks, obs, current, rewards, terminated, truncated, ends, totals,
    next_tiles, next_manos, refill, win, scale, obs_slots, own_obs,
):  # fmt: skip
    chunks = bufs.shape[0]
    for c in numba.prange(chunks):
        start, stop = _chunk(states.shape[0], chunks, c)
        _step_games(
            states, actions, T, bufs[c], masks, obs, current, rewards, terminated, truncated, ends, totals,
            next_tiles, next_manos, refill, win, scale, obs_slots, own_obs, start, stop,
        )  # fmt: skip


@numba.njit(cache=True, nogil=True)
def _step_all_serial(
    states, actions, T, bufs, masks, obs, current, rewards, terminated, truncated, ends, totals,
    next_tiles, next_manos, refill, win, scale, obs_slots, own_obs,
):  # fmt: skip
    """:func:`_step_all` on the calling thread, every game on the first scratch rows: on one thread the
    parallel kernel's launch and its 16 chunks' scratch (4.4 MB, past a core's 1 MB L2 on this project's
    CPU) cost 0.34 us of a game-step's 3.50 (states of training games replayed, bench/README.md)."""
    _step_games(
        states, actions, T, bufs[0], masks, obs, current, rewards, terminated, truncated, ends, totals,
        next_tiles, next_manos, refill, win, scale, obs_slots, own_obs, 0, states.shape[0],
    )  # fmt: skip


def listed_seeds(seeds: Any, num_envs: int) -> list[int | None]:
    """A list of one seed per game (Gymnasium's ``list[int | None]``: None is fresh entropy), checked:
    the vector envs' ``reset(seed=[...])``, or a ValueError saying what is wrong with it."""
    if isinstance(seeds, (str, bytes)) or not isinstance(seeds, Sequence | np.ndarray):
        raise ValueError(
            f"reset: seed must be a non-negative integer, a list of {num_envs} (None: fresh entropy), or None; "
            f"got {short_repr(seeds)}"
        )
    checked: list[int | None] = []
    for s in seeds:
        try:
            checked.append(None if s is None else check_seed(s))
        except ValueError:
            got = f"{type(s).__name__} {short_repr(s)}"
            raise ValueError(f"reset: each listed seed must be a non-negative integer or None, got {got}") from None
    if len(checked) != num_envs:
        raise ValueError(f"reset: {len(checked)} seeds for {num_envs} games")
    return checked


def action_batch(actions: np.ndarray | Sequence[int], num_envs: int) -> np.ndarray:
    """``actions`` as an int64 array of one action per game, or a ValueError
    naming the shape or dtype that was given (the batched APIs' input check)."""
    acts = np.asarray(actions)
    if acts.shape != (num_envs,) or not np.issubdtype(acts.dtype, np.integer):
        raise ValueError(f"actions must be an integer array of shape ({num_envs},), got {acts.dtype} {acts.shape}")
    if acts.dtype.kind == "u" and acts.size and acts.max() > np.iinfo(np.int64).max:  # would wrap negative
        game = int(np.argmax(acts > np.iinfo(np.int64).max))
        too_big = f"game {game}: action {int(acts[game])}, beyond any action id"
        raise ValueError(f"illegal actions ({too_big}); no game moved")
    # a writable C-contiguous int64 array: a strided or read-only one is another type to numba, and
    # the step kernel would compile again for it (~50 s) in the middle of a run
    return np.require(acts, dtype=np.int64, requirements=["C", "W"])


class BurakoVectorEnv:
    """N one-hand Burako games stepped together (module docstring)."""

    def __init__(
        self,
        num_envs: int,
        num_players: int = 2,
        rules: str | Rules | dict[str, Any] = "burako",
        rule_overrides: dict[str, Any] | None = None,
        reward: str = "score",
        reward_scale: float = 1000.0,
        max_turns: int | None = None,
        num_threads: int | None = None,
        own_obs: bool = False,
    ) -> None:
        if not is_integer(num_envs) or num_envs < 1:
            raise ValueError(f"num_envs must be a positive integer, got {short_repr(num_envs)}")
        self.rules = rules_for_env(rules, rule_overrides, max_turns, num_players)
        check_reward(reward, reward_scale)
        self.tables = F.fast_tables(self.rules, int(num_players))
        self.num_envs = int(num_envs)
        self.num_players = int(num_players)
        self.num_sides = self.tables.num_sides
        self.observation_size = self.tables.obs_size
        self.num_actions = NUM_ACTIONS
        self.reward_mode = reward
        self.reward_scale = float(reward_scale)
        pool = numba.config.NUMBA_NUM_THREADS
        if check_count(num_threads, "num_threads") is not None and int(num_threads) > pool:
            raise ValueError(f"num_threads {num_threads}: numba has {pool} threads (NUMBA_NUM_THREADS)")
        most = numba.get_num_threads()  # the tuner's upper choice: the caller's count (numba.set_num_threads)
        #: the thread count this env's kernels run on, set around each call and given back after, so envs
        #: of other counts in one process keep theirs; None: the tuner's choice
        self.num_threads: int | None = None if num_threads is None else int(num_threads)
        #: None with ``num_threads`` given; else times the steps (module docstring)
        self.thread_tuner = ThreadTuner(most) if num_threads is None and most > 1 and num_envs > 1 else None
        chunks = min(self.num_envs, CHUNKS_PER_THREAD * (self.num_threads or most))
        #: the count a tuner-less env without num_threads keeps: the caller's when it was built
        self._default_threads = most
        n, d = self.num_envs, self.observation_size
        self._states = np.zeros((n, F.STATE_SIZE), dtype=np.int32)
        self._bufs = np.zeros((chunks, F.SCRATCH_DEPTH, F.SCRATCH_WIDTH), dtype=np.int32)
        self.obs = np.zeros((n, d), dtype=np.float32)
        #: True: no one but this env writes ``obs`` (module docstring), so a step clears only what each
        #: row's previous observation set (``fast.encode_over``); may be switched on between steps
        self.own_obs = bool(own_obs)
        #: the meld slots each row's observation set, per side block (noted whether ``own_obs`` or not)
        self._obs_slots = np.zeros((n, self.num_sides), dtype=np.int32)
        self._masks = np.zeros((n, NUM_ACTIONS), dtype=np.int8)
        #: what the caller gets: a read-only view, so the masks that step() checks
        #: actions against cannot be edited from outside
        self.masks = self._masks.view()
        self.masks.flags.writeable = False
        self.rewards = np.zeros((n, self.num_players), dtype=np.float32)
        self.terminated = np.zeros(n, dtype=np.bool_)
        self.truncated = np.zeros(n, dtype=np.bool_)
        self.current_player = np.zeros(n, dtype=np.int64)
        self.end_reason = np.zeros(n, dtype=np.int8)
        self.side_totals = np.zeros((n, self.num_sides), dtype=np.int64)
        total_tiles = self.tables.full_tiles.size
        self._next_tiles = np.zeros((n, total_tiles), dtype=np.int64)
        self._next_manos = np.zeros(n, dtype=np.int64)
        self._refill = np.zeros(n, dtype=np.uint8)
        self._rngs: list[np.random.Generator] = []
        self._rows = np.arange(n)
        self.info: dict[str, np.ndarray] = {
            "current_player": self.current_player,
            "end_reason": self.end_reason,
            "side_totals": self.side_totals,
        }

    @property
    def memory_bytes(self) -> int:
        """Bytes held by the env's arrays (states, outputs, scratch, next deals)."""
        arrays = (
            self._states,
            self._bufs,
            self.obs,
            self._masks,
            self.rewards,
            self.terminated,
            self.truncated,
            self.current_player,
            self.end_reason,
            self.side_totals,
            self._next_tiles,
            self._next_manos,
            self._refill,
            self._obs_slots,
        )
        return int(sum(a.nbytes for a in arrays))

    # ------------------------------------------------------------------ API
    def reset(
        self, seed: int | Sequence[int | None] | None = None
    ) -> tuple[np.ndarray, np.ndarray, dict[str, np.ndarray]]:
        n = self.num_envs
        if isinstance(seed, np.ndarray) and seed.shape == ():  # a 0-d array is its one number
            seed = seed[()]
        if seed is None:
            seeds: list[Any] = list(np.random.SeedSequence().spawn(n))
        elif isinstance(seed, (int, np.integer)) and not isinstance(seed, bool):
            seeds = [check_seed(seed) + i for i in range(n)]
        else:  # None in the list: that game draws fresh entropy
            seeds = [np.random.SeedSequence() if s is None else s for s in listed_seeds(seed, n)]
        self._rngs = [np.random.default_rng(s) for s in seeds]
        tiles = np.zeros_like(self._next_tiles)
        manos = np.zeros_like(self._next_manos)
        for i, rng in enumerate(self._rngs):
            manos[i] = draw_first_mano(rng, self.num_players)
            tiles[i] = shuffle_tiles(rng, self.tables.full_tiles)
        with self._on_threads(self.step_threads):
            _reset_all(
                self._states,
                tiles,
                manos,
                self.tables.kernel_args,
                self._bufs,
                self._masks,
                self.obs,
                self.current_player,
                self._obs_slots,
                self.own_obs,
            )
        self._refill[:] = 1
        self._deal_ahead()
        self.rewards[:] = 0.0
        self.terminated[:] = False
        self.truncated[:] = False
        self.end_reason[:] = 0
        self.side_totals[:] = 0
        return self.obs, self.masks, self.info

    def step(
        self, actions: np.ndarray | Sequence[int]
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[str, np.ndarray]]:
        if not self._rngs:
            raise RuntimeError("call reset() before step()")
        acts = action_batch(actions, self.num_envs)
        in_range = (acts >= 0) & (acts < NUM_ACTIONS)
        legal = in_range.copy()
        legal[in_range] = self._masks[self._rows[in_range], acts[in_range]] != 0
        if not legal.all():
            bad = np.flatnonzero(~legal)
            listed = ", ".join(f"game {i}: action {acts[i]}" for i in bad[:5])
            more = f" and {bad.size - 5} more" if bad.size > 5 else ""
            raise ValueError(f"illegal actions ({listed}{more}); no game moved")
        tuner = self.thread_tuner
        threads = tuner.threads() if tuner is not None else self.step_threads
        kernel = _step_all_serial if threads == 1 else _step_all
        with self._on_threads(threads):
            started = time.perf_counter()  # once the workqueue lock is held: another thread's step is not this one's
            kernel(
                self._states,
                acts,
                self.tables.kernel_args,
                self._bufs,
                self._masks,
                self.obs,
                self.current_player,
                self.rewards,
                self.terminated,
                self.truncated,
                self.end_reason,
                self.side_totals,
                self._next_tiles,
                self._next_manos,
                self._refill,
                self.reward_mode == "win",
                self.reward_scale,
                self._obs_slots,
                self.own_obs,
            )
            stepped = time.perf_counter()
        if tuner is not None:
            tuner.record(threads, stepped - started)
        self._deal_ahead()
        return self.obs, self.masks, self.rewards, self.terminated, self.truncated, self.info

    def close(self) -> None:
        """Gymnasium's teardown call: the env holds no thread, process or file, so it only stops
        stepping until the next :meth:`reset`."""
        self._rngs = []

    def _deal_ahead(self) -> None:
        """Draw the next deal of every game that just used its own, from its
        generator, exactly as GameState.new_game would."""
        for i in np.flatnonzero(self._refill).tolist():
            rng = self._rngs[i]
            self._next_manos[i] = draw_first_mano(rng, self.num_players)
            self._next_tiles[i] = shuffle_tiles(rng, self.tables.full_tiles)
            self._refill[i] = 0

    @property
    def step_threads(self) -> int:
        """The numba threads this env's kernels run on now: ``num_threads``, the tuner's current choice,
        or the caller's count when the env was built."""
        if self.num_threads is not None:
            return self.num_threads
        return self.thread_tuner.current if self.thread_tuner is not None else self._default_threads

    @contextlib.contextmanager
    def _on_threads(self, threads: int) -> Iterator[None]:
        """A kernel call on ``threads`` numba threads, in small chunks; the thread count is numba's per
        calling thread, so the caller's is given back after."""
        outer = numba.get_num_threads()
        if threads != outer:
            numba.set_num_threads(threads)
        try:
            with parallel_section(), numba.parallel_chunksize(PARALLEL_CHUNKSIZE):
                yield
        finally:
            if threads != outer:
                numba.set_num_threads(outer)

    # ------------------------------------------------------------------ inspection
    def game_state(self, i: int) -> GameState:
        """Game i as a readable engine state (to render, describe or debug)."""
        return GameState.from_dict(self.state_dict(i))

    def table_margins(self, games: np.ndarray, seats: np.ndarray) -> np.ndarray:
        """E5's zero-sum margin of ``seats[r]``'s side in game ``games[r]`` over what the sides have on
        the table as the hand stands (``outcomes.table_totals``: melds, canasta bonuses, an untaken
        muerto's penalty; all public), float64: training's ``score_potential``."""
        games, seats = self._games_and_seats(games, seats, "table_margins")
        out = np.zeros(games.size, dtype=np.float64)
        _table_margins(self._states, games, seats, self.tables.kernel_args, out)
        return out

    def _games_and_seats(self, games: Any, seats: Any, what: str) -> tuple[np.ndarray, np.ndarray]:
        """Paired game and seat indices, checked: the kernels read them unchecked (an index past the
        end read outside the states, a crash), and a negative one would wrap to the last game."""
        games, seats = np.asarray(games), np.asarray(seats)
        for name, values, bound in (("games", games, self.num_envs), ("seats", seats, self.num_players)):
            if values.ndim != 1 or (values.size and not np.issubdtype(values.dtype, np.integer)):
                raise ValueError(f"{what}: {name} must be a 1-d array of integers, got {values.dtype} {values.shape}")
            if values.size and (values.min() < 0 or values.max() >= bound):
                raise ValueError(f"{what}: {name} must lie in [0, {bound}), got {values.min()}..{values.max()}")
        if games.shape != seats.shape:
            raise ValueError(f"{what}: {games.size} games but {seats.size} seats; give one seat per game")
        return games.astype(np.int64), seats.astype(np.int64)

    def privileged(self, games: np.ndarray, seats: np.ndarray) -> np.ndarray:
        """What ``seats[r]`` cannot see in game ``games[r]``: the other hands, the stock, the untaken
        muertos and the next draws (burako_env/privileged.py's layout), for a training critic only."""
        games, seats = self._games_and_seats(games, seats, "privileged")
        st = self._states[games]
        k, n, sides = games.size, self.num_players, self.num_sides
        return privileged_features(
            st[:, F.HANDS : F.HANDS + n * F.NK].reshape(k, n, F.NK),
            st[:, F.STOCK : F.STOCK + F.MAX_TILES],
            st[:, F.STOCK_LEN],
            st[:, F.MUERTOS : F.MUERTOS + sides * F.MUERTO_CAP].reshape(k, sides, F.MUERTO_CAP),
            st[:, F.MUERTO_LEN : F.MUERTO_LEN + sides],
            seats,
        )

    @property
    def states(self) -> np.ndarray:
        """The games' flat states (int32, one row per game, ``burako_env.fast``'s layout), read-only:
        for compiled players that read a game where it lies (``agents.fast_planner``)."""
        view = self._states.view()
        view.flags.writeable = False
        return view

    def state_dict(self, i: int) -> dict:
        """Game i as plain data (``GameState.from_dict`` reads it): what to send to another
        process, where a pickled ``GameState`` would carry its rules' caches along (megabytes)."""
        return F.state_dict(self._states[i], self.tables)


@numba.njit(cache=True, parallel=True, nogil=True)
def _pick_legal(masks, u, out):
    for i in numba.prange(masks.shape[0]):
        row = masks[i]
        count = 0
        for a in range(row.shape[0]):
            count += row[a] != 0
        target = min(int(u[i] * count), count - 1)
        for a in range(row.shape[0]):
            if row[a] != 0:
                if target == 0:
                    out[i] = a
                    break
                target -= 1


def sample_legal_actions(masks: np.ndarray, rng: np.random.Generator, out: np.ndarray | None = None) -> np.ndarray:
    """One uniformly random legal action per row of ``masks`` (the random
    baseline for a whole batch; one uniform draw per game from ``rng``). A row
    with no legal action is an error (a game stuck with nothing to do), never
    a silent action 0."""
    if not isinstance(masks, np.ndarray) or masks.ndim != 2 or masks.shape[1] != NUM_ACTIONS:
        got = masks.shape if isinstance(masks, np.ndarray) else type(masks).__name__
        raise ValueError(f"sample_legal_actions: masks must be an array of shape (games, {NUM_ACTIONS}), got {got}")
    if out is None:
        out = np.empty(masks.shape[0], dtype=np.int64)
    else:
        F.check_out_buffer(out, (masks.shape[0],), np.int64, "sample_legal_actions' out")
    out[:] = -1
    draws = rng.random(masks.shape[0])
    with parallel_section(), numba.parallel_chunksize(PARALLEL_CHUNKSIZE):
        _pick_legal(masks, draws, out)
    if masks.shape[0] and out.min() < 0:
        rows = np.flatnonzero(out < 0)
        raise ValueError(
            f"sample_legal_actions: {rows.size} mask row(s) have no legal action (rows {rows[:8].tolist()}"
            f"{' ...' if rows.size > 8 else ''}); there is nothing to sample"
        )
    return out


def compile_kernels() -> float:
    """Compile every kernel of the compiled core and the batched API, or load
    them from numba's disk cache; returns the seconds it took. The install
    script calls it once so that later processes start at once."""
    start = time.perf_counter()
    game = F.FastGame.new_game(np.random.default_rng(0), "burako", 2)
    game.encode(0)
    game.apply(int(np.flatnonzero(game.legal_mask())[0]))
    game.clone().to_game_state()
    envs = BurakoVectorEnv(2, num_players=2)
    _obs, masks, _info = envs.reset(seed=0)
    envs.step(sample_legal_actions(masks, np.random.default_rng(0)))
    return time.perf_counter() - start


# the kernels above compile fast.py's functions into themselves: recompile them when it changed
F.refresh_dependent_caches(__name__, globals())

if __name__ == "__main__":
    print(f"burako_env compiled core ready ({compile_kernels():.1f} s; numba caches it on disk)")
