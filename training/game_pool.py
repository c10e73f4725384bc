"""The process pool that plays game jobs, for ``burako-eval`` and ``burako-tournament``.

A *task* is a picklable object with ``jobs`` (a tuple: games, or deals),
``move_time_limit`` (seconds, or None) and ``play(index, status)``, which
plays ``jobs[index]`` and returns what the parent gets back for it. Tasks are
given to spawned worker processes (no fork of a process that may hold
threads, such as tqdm's monitor; the same on every platform), and each job's
output comes back as soon as it is done, so an interruption loses only what
is in flight.

Not ``multiprocessing.Pool`` or ``ProcessPoolExecutor``: the first hangs for
ever when a worker dies, the second breaks as a whole. Here:

- an exception raised by ``play`` is raised again in the parent (with the
  worker's traceback as its cause) and the pool stops;
- a worker that dies (``os._exit``, a crash, the out-of-memory killer), or
  whose agent is stuck past ``move_time_limit + HANG_GRACE_SECONDS`` where no
  signal reaches it, is replaced. The caller's ``on_death`` turns the
  :class:`WorkerDeath` into the output of the job in flight (a tournament's
  forfeit) or raises (an evaluation stops), and the rest of the task goes on
  in the new worker.

Whose code a worker is in: each worker has a shared status array that
:class:`Watched` agents (and :func:`watched_build`) keep up to date, so the
parent knows which seat's agent was running when its process died or hung,
since when, and at which action.
"""

from __future__ import annotations

import dataclasses
import multiprocessing
import multiprocessing.connection as mp_connection
import os
import signal
import time
import traceback
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

#: a hung agent is stopped this long after its move time limit (the limit itself is checked in the worker)
HANG_GRACE_SECONDS = 2.0
#: a pool worker's shared status: [seat in agent code (-1: none), time.time() it entered, actions played so far]
STATUS_SEAT, STATUS_SINCE, STATUS_STEP = 0, 1, 2


class PoolTask(Protocol):
    jobs: tuple[Any, ...]
    move_time_limit: float | None

    def play(self, index: int, status: Any = None) -> Any: ...


@dataclass(frozen=True)
class WorkerDeath:
    """A worker process that ended (or was stopped) in the middle of ``task.jobs[index]``."""

    task: Any
    index: int
    #: the seat whose agent code was running (-1: none, the death is not an agent's fault)
    seat: int
    #: actions played in the game so far
    step: int
    #: True when the pool stopped the worker because its agent overran the move time limit
    hung: bool
    exitcode: int | None


class RemoteTraceback(Exception):
    """The traceback of an exception raised in a worker (the cause of the one raised again here)."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.text = text

    def __str__(self) -> str:
        return self.text


def one_thread_per_worker() -> None:
    """Worker processes already use every core together: a policy agent's torch
    must not start a thread per core in each of them (oversubscribed threads
    spin and slow every worker down many times over). Set before torch loads."""
    os.environ["OMP_NUM_THREADS"] = "1"
    os.environ["MKL_NUM_THREADS"] = "1"


def play_task(task: PoolTask) -> list[Any]:
    """A whole task in this process, in order (the in-process and Ray back ends)."""
    return [task.play(index) for index in range(len(task.jobs))]


def play_in_process(tasks: Sequence[PoolTask]) -> Iterator[list[Any]]:
    """Each task's outputs, task by task, in this process."""
    for task in tasks:
        yield play_task(task)


# ---------------------------------------------------------------------- whose code runs
class Watched:
    """An agent whose every call is marked in the worker's shared status, so
    that when the process dies (or hangs) the parent knows whose code it was
    in, since when, and at which action. ``steps`` is shared by the seats of
    one game: ``steps[0]`` counts its actions."""

    def __init__(self, agent: Any, seat: int, status: Any, steps: list[int]) -> None:
        self.agent = agent
        self.seat = seat
        self.status = status
        self.steps = steps

    def enter(self) -> None:
        self.status[STATUS_STEP] = self.steps[0]
        self.status[STATUS_SINCE] = time.time()
        self.status[STATUS_SEAT] = self.seat

    def leave(self) -> None:
        self.status[STATUS_SEAT] = -1
        self.status[STATUS_SINCE] = 0.0

    def reset(self, seat: int, rules: Any, num_players: int) -> None:
        self.enter()
        try:
            self.agent.reset(seat, rules, num_players)
        finally:
            self.leave()

    def act(self, *args: Any) -> int:
        """The agent's answer: ``act(observation, view)`` in Burako, ``act(observation)`` in Rummy."""
        self.enter()
        try:
            return self.agent.act(*args)
        finally:
            self.leave()
            self.steps[0] += 1


def watched_build(build: Callable[[], Any], seat: int, status: Any, steps: list[int]) -> Any:
    """``build()`` an agent for ``seat``; with a pool worker's ``status``, the
    building (the participant's code too) and every later call are watched."""
    if status is None:
        return build()
    watched = Watched(None, seat, status, steps)
    watched.enter()
    try:
        watched.agent = build()
    finally:
        watched.leave()
    return watched


# ---------------------------------------------------------------------- the pool
def _pool_worker(conn: Any, status: Any) -> None:
    """A pool worker process: takes a task, sends each job's output as it
    finishes (or the exception that stopped it), then "done".

    Ctrl-C at a terminal reaches the whole process group: the parent handles it (its
    ``finally`` stops every worker), so a worker ignores SIGINT instead of printing a
    KeyboardInterrupt traceback of its own beside the parent's one-line message."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    one_thread_per_worker()
    while True:
        task = conn.recv()
        if task is None:
            return
        for index in range(len(task.jobs)):
            try:
                output = task.play(index, status)
            except Exception as exc:
                text = traceback.format_exc()
                try:
                    conn.send(("error", index, (exc, text)))
                except Exception:  # an exception that does not pickle: its text still arrives
                    conn.send(("error", index, (RuntimeError(f"{type(exc).__name__}: {exc}"), text)))
                break
            conn.send(("game", index, output))
        conn.send(("done", len(task.jobs), None))


class _Worker:
    """One pool process, its pipe and shared status, and the task it is on."""

    def __init__(self, ctx: Any) -> None:
        self.status = ctx.Array("d", [-1.0, 0.0, 0.0], lock=False)
        self.conn, child = ctx.Pipe()
        self.process = ctx.Process(target=_pool_worker, args=(child, self.status), daemon=True)
        self.process.start()
        child.close()
        self.task: Any = None
        self.next_job = 0
        self.killed_for_hang = False

    def give(self, task: PoolTask) -> None:
        self.task, self.next_job, self.killed_for_hang = task, 0, False
        self.status[STATUS_SEAT], self.status[STATUS_SINCE] = -1, 0.0
        self.conn.send(task)

    def death(self) -> WorkerDeath:
        return WorkerDeath(
            task=self.task,
            index=self.next_job,
            seat=int(self.status[STATUS_SEAT]),
            step=int(self.status[STATUS_STEP]),
            hung=self.killed_for_hang,
            exitcode=self.process.exitcode,
        )

    def stop(self) -> None:
        if self.process.is_alive():
            self.process.kill()
        self.process.join(5)
        self.conn.close()


def play_in_pool(tasks: Sequence[PoolTask], workers: int, on_death: Callable[[WorkerDeath], Any]) -> Iterator[Any]:
    """Every job's output, in the order jobs finish, from ``workers`` spawned
    processes (see the module docstring for faults; ``on_death`` gives the
    output of the job a dead worker was playing, or raises)."""
    if not tasks:
        return
    ctx = multiprocessing.get_context("spawn")
    queue = list(reversed(tasks))
    pool = [_Worker(ctx) for _ in range(max(1, min(workers, len(tasks))))]
    try:
        while queue or any(w.task is not None for w in pool):
            for k, worker in enumerate(pool):
                if worker.task is None and queue:
                    if not worker.process.is_alive():  # died between tasks: nobody's game was in flight
                        worker.stop()
                        pool[k] = worker = _Worker(ctx)
                    worker.give(queue.pop())
            busy = [w for w in pool if w.task is not None]
            ready = set(mp_connection.wait([w.conn for w in busy] + [w.process.sentinel for w in busy], timeout=0.5))
            for k, worker in enumerate(pool):
                if worker.task is None:
                    continue
                if worker.conn in ready or worker.process.sentinel in ready:
                    try:
                        while worker.conn.poll():
                            kind, index, output = worker.conn.recv()
                            if kind == "game":
                                worker.next_job = index + 1
                                yield output
                            elif kind == "error":
                                exc, text = output
                                raise exc from RemoteTraceback(text)
                            else:
                                worker.task = None
                                break
                        if worker.task is None or worker.process.is_alive():
                            continue
                    except (EOFError, OSError):
                        pass
                    worker.process.join(1)
                    if worker.process.is_alive():
                        continue
                    death = worker.death()
                    worker.stop()
                    output = on_death(death)
                    pool[k] = _Worker(ctx)
                    rest = death.task.jobs[death.index + 1 :]
                    if rest:
                        queue.append(dataclasses.replace(death.task, jobs=rest))
                    yield output
                    continue
                limit = worker.task.move_time_limit
                since = worker.status[STATUS_SINCE]
                if limit is not None and since > 0 and time.time() - since > limit + HANG_GRACE_SECONDS:
                    worker.killed_for_hang = True
                    worker.process.kill()
    finally:
        for worker in pool:
            worker.stop()
