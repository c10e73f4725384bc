"""League baselines in a worker process, beside the learner (``baseline_worker_share`` > 0).

In the batched rollout (:class:`training.rollout.VectorRollout`) every game
makes one decision a step, and the games a baseline plays wait for its plain
Python moves: 0.65-0.69 of the rollout's time in the reference league
(``bench/README.md``). Each step's decisions are independent of each other, so
the baselines' moves can be made on another core *while* the main process
runs the learner's and the snapshots' forward passes; the step then waits
only for what is left of them. With ``baseline_worker_share`` below 1 the
main process also keeps the baselines of the other games (always the same
games: an agent lives where it was made) and plays them while it waits, so
both cores share the baselines' work.

The worker owns what the baselines play with: their agents, the readable
mirror of each game a baseline plays (:class:`~burako_env.engine.GameState`)
and the seats' view generators. The main process keeps every decision about
randomness (agent seeds, view seeds drawn from the trainer's generator in the
same order as in-process) and sends, once per step with baseline moves,
its *events* in the order they happened, then the moves it wants:

| event                                  | the worker                                            |
|----------------------------------------|-------------------------------------------------------|
| ``("apply", game, action)``            | plays the move on the game's mirror                   |
| ``("hand", game, view_seeds)``         | a new hand: drops the mirror, new view generators      |
| ``("make", key, name, seed, options)`` | builds the agent ``key`` (``make_agent``)             |
| ``("reset", key, seat)``               | ``agent.reset(seat, rules, players)`` (every hand)    |
| ``("mirror", game, state_dict)``       | the game's mirror, read back at its first baseline move |

(a mirror travels as ``BurakoVectorEnv.state_dict``: a pickled ``GameState``
carries its rules' caches along, megabytes a game once they fill) and answers
with one action per requested ``(game, seat, key, mask)``, or
the error that stopped it. So the games, and every stored decision, are those
of the in-process path (``tests/test_training_vector.py``); only the time
differs.
"""

from __future__ import annotations

import contextlib
import multiprocessing as mp
import signal
import traceback
import weakref
from collections.abc import Callable
from typing import Any

import numpy as np

from agents.registry import make_agent
from agents.runner import LazyObservation
from burako_env.engine import GameState
from burako_env.observation import Observer
from burako_env.rules import Rules
from burako_env.views import LazySeatView
from training.game_pool import one_thread_per_worker

#: one move asked of a baseline: game, seat, agent key, legal-action mask
Request = tuple[int, int, tuple[Any, ...], np.ndarray]


class BaselineTable:
    """What the baselines play with, and how events change it: the worker's, and the rollout's own
    for the games whose baselines play in the main process (``observer``: the trainer's, there)."""

    def __init__(self, rules: Rules, num_players: int, observer: Observer | None = None) -> None:
        self.rules = rules
        self.num_players = num_players
        self.observer = observer if observer is not None else Observer(num_players, rules)
        self.agents: dict[tuple[Any, ...], Any] = {}
        self.mirrors: dict[int, GameState] = {}
        self.view_rngs: dict[int, list[np.random.Generator]] = {}

    def handle(self, event: tuple[Any, ...]) -> None:
        kind = event[0]
        if kind == "apply":
            self.mirrors[event[1]].apply(event[2])
        elif kind == "hand":
            self.mirrors.pop(event[1], None)
            self.view_rngs[event[1]] = [np.random.default_rng(seed) for seed in event[2]]
        elif kind == "make":
            _, key, name, seed, options = event
            self.agents[key] = make_agent(name, seed=seed, **options)
        elif kind == "reset":
            self.agents[event[1]].reset(event[2], self.rules, self.num_players)
        elif kind == "mirror":
            self.mirrors[event[1]] = GameState.from_dict(event[2])
        else:
            raise ValueError(f"unknown baseline event {kind!r}")

    def act(self, game: int, seat: int, key: tuple[Any, ...], mask: np.ndarray) -> int:
        state = self.mirrors[game]
        observation = LazyObservation(self.observer, state, seat, mask)
        view = LazySeatView(state, seat, self.view_rngs[game][seat])
        action = int(self.agents[key].act(observation, view))
        observation.expire()
        view.expire()
        return action


def _serve(conn: Any, rules: Rules, num_players: int) -> None:
    """The worker process: applies each message's events, answers its requests, until ``None``.

    SIGINT is ignored: Ctrl-C at a terminal reaches the whole process group, and the main
    process stops the run (and this worker) with its one-line message."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    one_thread_per_worker()
    table = BaselineTable(rules, num_players)
    while True:
        try:
            message = conn.recv()
        except EOFError:  # the main process is gone without a word (killed)
            return
        if message is None:
            return
        events, requests = message
        try:
            for event in events:
                table.handle(event)
            conn.send(("ok", [table.act(*request) for request in requests]))
        except Exception:
            conn.send(("error", traceback.format_exc()))
            return


def _stop(process: Any, conn: Any) -> None:
    with contextlib.suppress(OSError, ValueError):  # a worker already gone
        conn.send(None)
    process.join(timeout=5)
    if process.is_alive():
        process.terminate()
        process.join()
    conn.close()


class BaselineWorker:
    """The main process's handle on the worker: :meth:`submit` a step's events and requests,
    do other work, then :meth:`actions` waits for the answer."""

    def __init__(self, rules: Rules, num_players: int) -> None:
        if mp.current_process().daemon:
            raise RuntimeError(
                "baseline_worker_share: this is a daemonic process (a multiprocessing pool's worker, say), which "
                "may not start the baselines' process; set baseline_worker_share: 0 here"
            )
        ctx = mp.get_context("spawn")  # no fork of a process holding torch and numba threads
        self.conn, child = ctx.Pipe()
        self.process = ctx.Process(target=_serve, args=(child, rules, num_players), daemon=True, name="baselines")
        self.process.start()
        child.close()
        #: stops the worker when this handle is closed, collected, or the interpreter exits
        self._finalizer = weakref.finalize(self, _stop, self.process, self.conn)
        #: answers the worker owes: a submit whose answer was never read (Ctrl-C while waiting in
        #: :meth:`actions`, in a notebook) leaves one in the pipe, which the next step would read as its own
        self._unread = 0

    def submit(self, events: list[tuple[Any, ...]], requests: list[Request]) -> None:
        while self._unread:  # an interrupted step's answer: read and dropped (its moves were never applied)
            self._receive()
        try:
            self.conn.send((events, requests))
        except (BrokenPipeError, ConnectionResetError, EOFError):
            raise self._died() from None
        self._unread += 1

    def actions(self) -> list[int]:
        return self._receive()

    def _receive(self) -> list[int]:
        try:
            status, payload = self.conn.recv()
        except (EOFError, ConnectionResetError):
            raise self._died() from None
        self._unread -= 1
        if status != "ok":
            raise RuntimeError(f"a league baseline failed in the worker process:\n{payload}")
        return payload

    def _died(self) -> RuntimeError:
        """The error for a worker found gone (killed, out of memory, crashed): its exit code, once it has one."""
        self.process.join(timeout=1.0)
        return RuntimeError(f"the baseline worker died (exit code {self.process.exitcode})")

    def close(self) -> None:
        self._finalizer()


class RemoteAgent:
    """Stands in the rollout's agent table for an agent that lives in the worker: building
    and resetting it become events; its moves are asked for by the rollout, step by step."""

    def __init__(
        self, queue: Callable[[tuple[Any, ...]], None], key: tuple[Any, ...], name: str, seed: int, options: dict
    ) -> None:
        self.queue = queue
        self.key = key
        queue(("make", key, name, seed, dict(options)))

    def reset(self, seat: int, rules: Any = None, num_players: int = 2) -> None:
        self.queue(("reset", self.key, seat))
