"""The PPO update in a process of its own, beside the games (``update_process``, with ``overlap_rollout``).

Overlapped in one process (``overlap_rollout`` alone), the games and the update share one interpreter:
the rollout keeps ~60% of its speed alone, the update ~90% (bench/README.md, "Why the overlap gains a
quarter, not double"). Here the update runs in a second process (a :class:`ProcessLearner`), so each side
keeps its own interpreter; the loop is the thread version's otherwise: the games of the next batch are
played by the weights from before the update that learns from this batch, and the call returns once both
are done.

What lives where:

| state                                   | main process (``Trainer``)            | learner process              |
|-----------------------------------------|---------------------------------------|------------------------------|
| games, league, evaluations, run folder  | yes                                   | no                           |
| the decision store's observations       | writes them (shared memory)           | reads the batch's rows        |
| the network                             | a copy, loaded after every update     | learns (the one that counts) |
| optimiser, the update's generator       | a copy, loaded at every checkpoint    | steps and draws              |

Messages (main to learner on a pipe, one at a time, each answered; an error in the learner comes back as
``("error", traceback)`` and is raised in the main process as :class:`LearnerError`):

| request                     | carries                                                          | answer          |
|-----------------------------|------------------------------------------------------------------|-----------------|
| ``("load", state)``         | network, optimiser, update generator, anchor (``torch.save``)    | ``("ok",)``     |
| ``("update", job)``         | the batch's small arrays, the observations' segment, rewards,    | ``("done",      |
|                             | lengths, the update's config and step size                       | stats, state,   |
|                             |                                                                  | seconds)``      |
| ``("state",)``              |                                                                  | ``("state", s)``|
| ``("close",)``              |                                                                  | (exits)         |

The learner's torch threads are ``torch_threads`` while the games beside its update are played and
``update_threads`` once the main process says they are done (an event), as in the thread version.
"""

from __future__ import annotations

import contextlib
import io
import multiprocessing as mp
import signal
import time
import traceback
from multiprocessing.connection import Connection
from multiprocessing.shared_memory import SharedMemory
from multiprocessing.synchronize import Event
from typing import Any

import numpy as np
import torch

from agents.network import NetworkShape, PolicyNet
from training.memory import keep_freed_memory
from training.ppo import PPOConfig, PPOLearning, fused_adam, resolve_device, resolve_precision
from training.resume import load_optimizer_state


class LearnerError(RuntimeError):
    """The learner process failed (its traceback in the message) or is gone."""


class SharedArrays:
    """Zero-filled arrays in named shared memory (the decision store's observations), kept until
    :meth:`close`: a grown store's old array may still be read by an update under way."""

    def __init__(self) -> None:
        self._segments: list[tuple[np.ndarray, SharedMemory]] = []

    def zeros(self, shape: tuple[int, ...], dtype: Any) -> np.ndarray:
        size = max(int(np.prod(shape)) * np.dtype(dtype).itemsize, 1)
        memory = SharedMemory(create=True, size=size)
        array: np.ndarray = np.ndarray(shape, dtype=dtype, buffer=memory.buf)
        array[...] = 0  # a new segment is zeros already on Linux; not promised everywhere
        self._segments.append((array, memory))
        return array

    def name_of(self, array: np.ndarray) -> str:
        for kept, memory in self._segments:
            if kept is array:
                return memory.name
        raise ValueError("SharedArrays.name_of: that array is not one of these segments")

    def retire_all_but(self, array: np.ndarray) -> None:
        """Free every segment but ``array``'s (no update reads them any more)."""
        keep = []
        for kept, memory in self._segments:
            if kept is array:
                keep.append((kept, memory))
            else:
                _free(memory)
        self._segments = keep

    def close(self) -> None:
        for _, memory in self._segments:
            _free(memory)
        self._segments = []


def _free(memory: SharedMemory) -> None:
    """Unlink a segment: its memory goes once no array maps it (a view still held keeps its mapping)."""
    with contextlib.suppress(BufferError):
        memory.close()
    with contextlib.suppress(FileNotFoundError):
        memory.unlink()


def _to_bytes(value: Any) -> bytes:
    buffer = io.BytesIO()
    torch.save(value, buffer)
    return buffer.getvalue()


def _from_bytes(data: bytes) -> Any:
    return torch.load(io.BytesIO(data), weights_only=True)


class _Done:
    """The event the main process sets once the games beside the update are done, read as a future's
    ``done()`` (what :meth:`PPOLearning.learn` asks of ``_rollout_beside``)."""

    def __init__(self, event: Event) -> None:
        self.event = event

    def done(self) -> bool:
        return self.event.is_set()


class ProcessLearner(PPOLearning):
    """The learning state of a run in the learner process: its network, optimiser and update generator
    (the main process's are copies), and what :meth:`PPOLearning.learn` reads."""

    def __init__(self, config: PPOConfig, shape: NetworkShape, rules: Any, beside: Event) -> None:
        self.cfg = self.live_cfg = config
        self.device = resolve_device(config.device)
        self.compute_dtype = resolve_precision(config.precision, self.device)
        self.rules = rules
        self.net = PolicyNet(shape, rules).to(self.device)
        self.optimizer = fused_adam(self.net.parameters(), self.device, lr=config.learning_rate, eps=1e-5)
        self.update_rng = np.random.default_rng()
        self.anchor = None
        self._update_buffers = {}
        self._beside = _Done(beside)
        self._rollout_beside = None
        self._segment: tuple[str, SharedMemory] | None = None

    def load(self, state: dict[str, Any]) -> None:
        self.net.load_state_dict(state["net"])
        load_optimizer_state(self.optimizer, state["optimizer"])
        self.update_rng.bit_generator.state = state["update_rng"]
        self.anchor = None
        if state.get("anchor") is not None:
            anchor = PolicyNet(self.net.shape, self.rules).to(self.device)
            anchor.load_state_dict(state["anchor"])
            self.anchor = anchor.eval().requires_grad_(False)

    def state(self) -> dict[str, Any]:
        return {"optimizer": self.optimizer.state_dict(), "update_rng": self.update_rng.bit_generator.state}

    def observations(self, name: str, shape: tuple[int, ...]) -> np.ndarray:
        """The decision store's observations, from the main process's segment ``name``."""
        if self._segment is None or self._segment[0] != name:
            if self._segment is not None:
                self._segment[1].close()
            # attaching registers the segment again with the resource tracker this process shares with the
            # main one (spawned): a set, so the main process's unlink unregisters it once for both
            memory = SharedMemory(name=name)
            self._segment = (name, memory)
        return np.ndarray(shape, dtype=np.float32, buffer=self._segment[1].buf)

    def update(self, job: dict[str, Any]) -> tuple[dict[str, float], dict[str, torch.Tensor], float]:
        """One update (:meth:`UpdateProcess.begin`'s job): its stats, the network after it, its seconds."""
        started = time.perf_counter()
        self.live_cfg = job["live_cfg"]
        for group in self.optimizer.param_groups:
            group["lr"] = job["learning_rate"]
        batch = dict(job["batch"])
        batch["obs_store"] = self.observations(job["obs_segment"], job["obs_shape"])
        self._rollout_beside = self._beside if job["beside"] else None
        torch.set_num_threads(self.cfg.torch_threads)
        try:
            with self.autocast():
                stats = self.learn(batch, job["rewards"], job["lengths"])
        finally:
            self._rollout_beside = None
        return stats, self.net.state_dict(), time.perf_counter() - started


def serve(conn: Connection, beside: Event, config: PPOConfig, shape: NetworkShape, rules: Any) -> None:
    """The learner process: answers the main process's requests until ``close`` or a closed pipe."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the main process's to handle
    torch.set_num_threads(config.torch_threads)
    if config.keep_freed_memory:
        keep_freed_memory()
    learner = ProcessLearner(config, shape, rules, beside)
    while True:
        try:
            request = conn.recv()
        except EOFError:  # the main process is gone
            return
        kind = request[0]
        if kind == "close":
            return
        try:
            if kind == "load":
                learner.load(_from_bytes(request[1]))
                conn.send(("ok",))
            elif kind == "update":
                stats, net_state, seconds = learner.update(request[1])
                conn.send(("done", stats, _to_bytes(net_state), seconds))
            elif kind == "state":
                conn.send(("state", _to_bytes(learner.state())))
            else:
                conn.send(("error", f"unknown request {kind!r}"))
        except Exception:  # answered, not raised: the main process raises it
            conn.send(("error", traceback.format_exc()))


class UpdateProcess:
    """The main process's side of the learner process (module docstring): one update at a time."""

    def __init__(self, config: PPOConfig, shape: NetworkShape, rules: Any) -> None:
        context = mp.get_context("spawn")  # not fork: torch's and numba's threads do not survive a fork
        self._conn, child = context.Pipe()
        self.beside = context.Event()
        self.process = context.Process(
            target=serve,
            args=(child, self.beside, config, shape, rules),
            name="burako-learner",
            daemon=True,
        )
        self.process.start()
        child.close()
        self._pending = False

    def _ask(self, request: tuple[Any, ...]) -> tuple[Any, ...]:
        self._conn.send(request)
        return self._answer()

    def _answer(self) -> tuple[Any, ...]:
        try:
            answer = self._conn.recv()
        except EOFError as error:
            raise LearnerError(f"the learner process ended (exit code {self.process.exitcode})") from error
        if answer[0] == "error":
            raise LearnerError(f"the learner process failed:\n{answer[1]}")
        return answer

    def load(
        self,
        net: PolicyNet,
        optimizer: torch.optim.Optimizer,
        update_rng: np.random.Generator,
        anchor: PolicyNet | None,
    ) -> None:
        """The learning state the next updates start from (a run's start, a resume, a warm start)."""
        state = {
            "net": net.state_dict(),
            "optimizer": optimizer.state_dict(),
            "update_rng": update_rng.bit_generator.state,
            "anchor": anchor.state_dict() if anchor is not None else None,
        }
        self._ask(("load", _to_bytes(state)))

    def begin(self, job: dict[str, Any]) -> None:
        """Start an update (:meth:`ProcessLearner.update`'s ``job``); :meth:`end` waits for it."""
        if self._pending:
            raise RuntimeError("UpdateProcess.begin: an update is under way")
        self.beside.clear()
        self._conn.send(("update", job))
        self._pending = True

    def games_done(self) -> None:
        """The games beside the update are done: it widens to ``update_threads``."""
        self.beside.set()

    def end(self) -> tuple[dict[str, float], dict[str, torch.Tensor], float]:
        """The update's stats, the network it learned and its seconds in the learner."""
        self._pending = False
        _, stats, state, seconds = self._answer()
        return stats, _from_bytes(state), seconds

    def state(self) -> dict[str, Any]:
        """The learner's optimiser state and update generator state (for a checkpoint)."""
        _, state = self._ask(("state",))
        return _from_bytes(state)

    def close(self) -> None:
        if self.process.is_alive():
            try:
                if self._pending:  # an update under way (an error or Ctrl-C in the games): not waited for
                    self.process.terminate()
                else:
                    self._conn.send(("close",))
            except (BrokenPipeError, OSError):
                pass
            self.process.join(timeout=30)
            if self.process.is_alive():
                self.process.kill()
                self.process.join()
        self._conn.close()
