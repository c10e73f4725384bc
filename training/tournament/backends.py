"""Where a tournament's games run: ``inprocess`` (one process; for
debugging), ``pool`` (:mod:`training.game_pool`: local spawned processes; an
agent whose worker dies or hangs forfeits the game in flight) and ``ray``
(the same tasks as Ray tasks; a task that fails, its worker dead, stops the run with
a :class:`TournamentError` and a rerun resumes). Results are identical whatever the back end:
every game is a pure function of the config."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from agents.runner import AgentFault
from training.duplicate import deal_seed
from training.game_pool import WorkerDeath, play_in_pool, play_in_process, play_task
from training.tournament.config import TournamentConfig, TournamentError
from training.tournament.schedule import GameOutput, GameTask, forfeit_output, seat_names


def death_forfeit(death: WorkerDeath) -> GameOutput:
    """The forfeit of the game a dead (or stopped) pool worker was playing.
    A death outside any agent's code is not an agent's fault: it stops the run."""
    task: GameTask = death.task
    job = task.jobs[death.index]
    seat, step = death.seat, death.step
    if seat < 0:
        raise TournamentError(
            f"a pool worker process died (exit code {death.exitcode}) outside any agent's code while playing game "
            f"{job.key} (its traceback, if any, is above); run the same command again to resume"
        )
    names = seat_names(job, task.num_players)
    if death.hung:
        kind, what = "timeout", f"did not answer within {task.move_time_limit:g} s; its process was stopped"
    else:
        kind, what = "crash", f"ended its worker process (exit code {death.exitcode})"
    dseed = deal_seed(job.pairing.seed, job.deal)
    fault = AgentFault(
        f"agent {names[seat]!r} in seat {seat} {what} at action {step} of deal {dseed}",
        kind=kind,
        agent=names[seat],
        seat=seat,
        side=seat % 2,
        step=step,
        turn=-1,
        phase="unknown",
        deal_seed=dseed,
        cause=f"process exit code {death.exitcode}",
    )
    return forfeit_output(job, task.rules, task.num_players, task.tournament_seed, fault, 0.0, task.game)


def _iter_pool(tasks: Sequence[GameTask], workers: int) -> Iterator[list[GameOutput]]:
    for output in play_in_pool(tasks, workers, death_forfeit):
        yield [output]


def ray_failure(task: GameTask, exc: BaseException) -> TournamentError:
    """The error that stops a Ray tournament whose task failed outside any agent's code (agents' own
    faults are forfeits inside the task): Ray cannot say which seat was playing when a worker died,
    so no game is forfeited; the games already finished are kept and a rerun resumes."""
    keys = ", ".join(str(job.key) for job in task.jobs[:3]) + (" ..." if len(task.jobs) > 3 else "")
    return TournamentError(
        f"a Ray task of {len(task.jobs)} games ({keys}) failed: {type(exc).__name__}: {exc}; "
        "the games finished before it are saved: run the same command again to resume"
    )


def _iter_ray(
    tasks: Sequence[GameTask], workers: int, address: str | None, runtime_env: Mapping[str, Any] | None
) -> Iterator[list[GameOutput]]:
    """The same tasks as Ray tasks. Joins a running Ray (``address``, or one
    this process already started), else starts a local one with ``workers``
    CPUs and shuts it down at the end."""
    try:
        import ray
    except ImportError as exc:
        raise TournamentError('backend ray needs the ray extra: pip install -e ".[ray]"') from exc
    started = False
    if not ray.is_initialized():
        kwargs: dict[str, Any] = {"include_dashboard": False, "log_to_driver": True}
        if runtime_env:
            kwargs["runtime_env"] = dict(runtime_env)
        if address:
            ray.init(address=address, **kwargs)
        else:
            ray.init(num_cpus=workers, **kwargs)
        started = True
    from ray.exceptions import RayError

    remote = ray.remote(num_cpus=1, max_retries=0)(play_task)
    task_of: dict[Any, GameTask] = {}  # Ray object ref -> its task
    for task in tasks:
        task_of[remote.remote(task)] = task
    pending = list(task_of)
    try:
        while pending:
            done, pending = ray.wait(pending, num_returns=1)
            for ref in done:
                try:
                    outputs = ray.get(ref)
                except RayError as exc:  # a dead worker or node, or an error outside the agents' code
                    raise ray_failure(task_of[ref], exc) from exc
                yield outputs
    finally:
        for ref in pending:
            ray.cancel(ref, force=True)
        if started:
            ray.shutdown()


def execute(config: TournamentConfig, tasks: Sequence[GameTask]) -> Iterator[list[GameOutput]]:
    """Each task's games, in the order they finish (the caller sorts)."""
    if config.backend == "inprocess" or not tasks:
        return play_in_process(tasks)
    if config.backend == "pool":
        return _iter_pool(tasks, min(config.workers, len(tasks)))
    return _iter_ray(tasks, config.workers, config.ray_address, config.ray_runtime_env)
