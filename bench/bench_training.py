"""The learning loop's speed: today's path against the new one, side by side.

    .venv/bin/python bench/bench_training.py                       # configs/ppo_selfplay.yaml, 3 rounds
    .venv/bin/python bench/bench_training.py --rounds 5 --batch 8192 --league both
    .venv/bin/python bench/bench_training.py --profile             # + cProfile of one round per path

Each path is a :class:`training.ppo.Trainer` built from the same config,
differing only in the fields below; both play from the same seed. Each path
lives in its own process (the allocator's settings are per process:
``keep_freed_memory``), driven in turn from this one; a waiting path sleeps on
its pipe and takes no core. A round
times, for every path in turn (interleaved, so slow phases of a shared
machine hit all of them): one rollout (``collect``: play until ``batch``
learner decisions lie in finished hands) and one PPO update on it
(``update_epochs`` passes of minibatches). Figures are **learner decisions
per second**: stored decisions / rollout seconds, / update seconds, and / their
sum (end to end). A warm-up rollout per path comes first (untimed), so hands
in play carry over as in a long run. Medians over rounds, and the pooled
rate (all rounds' decisions / all their seconds): a round counts the decisions
of the hands that finish in it, some of them played in the round before, so
single rounds swing (the engine rollout's by 5x) where the pooled rate does
not. The load average (``os.getloadavg``) before and after goes with them.

| path    | fields                                                                        |
|---------|-------------------------------------------------------------------------------|
| today   | ``rollout: engine``, ``policy_head: full``, every meld slot multiplied,       |
|         | the allocator's defaults, plain Adam, OpenMP's default waits (the loop        |
|         | before issue 15)                                                              |
| new     | ``rollout: vector``, ``policy_head: legal``, ``torch_threads: 1``,            |
|         | ``num_envs: 128`` (configs/ppo_reference.yaml's choices), waiting OpenMP      |
|         | threads sleep (the training package's default)                                |

``--variant NAME:FIELD=V,FIELD=V`` adds a what-if path: the new path with
those fields changed (a smaller network, fewer passes), e.g.
``--variant lean:hidden=128,slot_embed=8,update_epochs=1``; its speed says
nothing of how well it learns. A field written ``env.VAR=V`` is an environment
variable of that path's process instead, set before it imports torch
(``env.VAR=`` removes it), e.g.
``--variant spin:env.OMP_WAIT_POLICY=,env.GOMP_SPINCOUNT=300000``: the new
path with OpenMP's default waits (training/openmp.py).

``--load N`` keeps N other processes spinning a core each from the warm-up
to the last round, as a second job on the machine would: torch's OpenMP
threads wait at barriers for a thread whose core is taken.

``--league``: ``config`` (the config's league as it starts: self-play share
plus the baselines; with no snapshot yet the baselines get every other game,
80% in the reference config), ``running`` (the config's league once a run is
under way: ``max_snapshots`` snapshots in it, copies of the starting network
that cost what trained ones cost, so ``baseline_fraction`` holds; 20% in the
reference config, ``--variant NAME:baseline_fraction=0.8`` its later share: a field a
path or variant sets drops the config's schedule of that field),
``selfplay`` (``self_play_fraction: 1``: the loop without baseline agents), or
``both`` (config and selfplay).
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import io
import json
import multiprocessing as mp
import os
import pstats
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

# the training package before torch, as burako-train imports them: OpenMP's waiters sleep (training/openmp.py)
from training.openmp import DEFAULT_WAITS, WAIT_SETTINGS, set_environment  # noqa: E402
from training.ppo import Trainer, load_config  # noqa: E402

PATHS: dict[str, list[str]] = {
    "today": [
        *("rollout=engine", "policy_head=full", "precision=float32", "update_threads=2", "keep_freed_memory=false"),
        "baseline_worker_share=0",
    ],
    "new": ["rollout=vector", "policy_head=legal", "torch_threads=1", "num_envs=128", "precision=auto"],
}
#: paths whose optimiser is today's plain (unfused) Adam
PLAIN_ADAM = {"today"}
#: a path's environment variables (``env.VAR=V`` fields of a variant; None: removed), set before its
#: process imports torch. Today's OpenMP threads wait as libgomp's defaults have them
#: (training/openmp.py); the other paths inherit the package's (waiters sleep).
PATH_ENV: dict[str, dict[str, str | None]] = {"today": dict(DEFAULT_WAITS)}
LEAGUES: dict[str, list[str]] = {
    "config": [],
    "running": [],
    "selfplay": ["self_play_fraction=1.0", "baseline_fraction=0"],
}
#: config fields whose schedules a league overrides (a scheduled share would undo it)
LEAGUE_FIELDS: dict[str, set[str]] = {"selfplay": {"self_play_fraction", "baseline_fraction"}}


def unscheduled(config: str, fields: set[str]) -> list[str]:
    """The override that drops ``fields``' schedules from ``config``'s (a JSON mapping is YAML)."""
    if not fields:
        return []
    schedules = load_config(config).schedules
    return [f"schedules={json.dumps({k: v for k, v in schedules.items() if k not in fields})}"]


def load() -> str:
    return "{:.2f} {:.2f} {:.2f}".format(*os.getloadavg())


def make_trainer(
    config: str, path: str, league: str, batch: int | None, run_root: str, fields: list[str] | None = None
) -> Trainer:
    """``path``'s trainer; ``fields``: its config fields (default ``PATHS[path]``; a variant's come this way)."""
    fields = PATHS[path] if fields is None else fields
    overrides = ["bc_teacher=null", f"run_root={run_root}", "eval_every=0", *fields, *LEAGUES[league]]
    # a field the path or variant sets wins over the config's schedule of it (the reference config schedules
    # baseline_fraction from 0.2: a variant's 0.8 was undone at update 0 until 2026-12-06)
    named = {f.split("=", 1)[0] for f in fields if "=" in f and not f.startswith("env.")}
    overrides += unscheduled(config, LEAGUE_FIELDS.get(league, set()) | named)
    if batch is not None:
        overrides.append(f"batch_size={batch}")
    trainer = Trainer(load_config(config, overrides), progress=False)
    if league == "running":  # snapshots in the league, so the config's baseline_fraction holds
        for number in range(1, trainer.cfg.max_snapshots + 1):
            trainer.league.add_snapshot(number, trainer.net.state_dict())
    if path == "today":  # before issue 15 every batch multiplied all 74 meld slots, each minibatch a fresh tensor
        trainer.net.skip_empty_slots_from = None
        trainer.reuse_minibatch_buffer = False
    if path in PLAIN_ADAM:
        cfg = trainer.cfg
        import torch

        trainer.optimizer = torch.optim.Adam(trainer.net.parameters(), lr=cfg.learning_rate, eps=1e-5)
    return trainer


def one_round(trainer: Trainer) -> dict[str, float]:
    stats, rollout_s, update_s = trainer.collect_and_update()
    n = stats["batch_decisions"]
    row = {
        "decisions": n,
        "rollout_decisions": trainer.rollout_decisions,  # overlap_rollout: the next update's batch
        "rollout_s": rollout_s,
        "update_s": update_s,
        "loop_s": trainer.loop_seconds,  # overlap_rollout: less than the two added
        "rollout": trainer.rollout_decisions / rollout_s,
        "update": n / update_s,
        "end_to_end": n / trainer.loop_seconds,
    }
    if trainer.vector is not None:
        for part, seconds in trainer.vector.timing.items():
            row[f"share_{part}"] = seconds / rollout_s
    return row


def profile_round(trainer: Trainer, top: int = 14) -> str:
    profiler = cProfile.Profile()
    profiler.enable()
    one_round(trainer)
    profiler.disable()
    out = io.StringIO()
    pstats.Stats(profiler, stream=out).sort_stats("tottime").print_stats(top)
    return out.getvalue()


def path_process(conn: Any, make_args: tuple[Any, ...]) -> None:
    """One path's trainer in its own process: answers "warmup", "round" and "profile" until "stop"."""
    trainer = make_trainer(*make_args)
    conn.send(("ready", {name: os.environ.get(name) for name in WAIT_SETTINGS}))
    try:
        while (command := conn.recv()) != "stop":
            if command == "warmup":
                start = time.perf_counter()
                if trainer.cfg.overlap_rollout:  # and a batch collected for the first round's update
                    trainer.collect_and_update()
                else:
                    trainer.collect()  # hands in play, as in a long run
                conn.send(time.perf_counter() - start)
            elif command == "round":
                conn.send(one_round(trainer))
            elif command == "profile":
                conn.send(profile_round(trainer))
            else:  # the process ends: the main one's next read raises
                raise ValueError(f"path process: unknown command {command!r}")
    finally:
        trainer.close()  # a baseline_worker_share variant's own process


class PathProcess:
    """The main process's handle on a :func:`path_process`."""

    def __init__(self, context: Any, make_args: tuple[Any, ...], env: dict[str, str | None] | None = None) -> None:
        self.conn, child = context.Pipe()
        # not daemonic: a daemonic process may not start one of its own (``baseline_worker_share``); it ends
        # on "stop", or on EOF when this process dies without sending it
        self.process = context.Process(target=path_process, args=(child, make_args))
        saved = {name: os.environ.get(name) for name in env or {}}
        set_environment(env or {})  # a spawned process starts with this process's environment as it is now
        try:
            self.process.start()
        finally:
            set_environment(saved)
        child.close()  # the child's end lives in the child only: its death is then an EOF here, not a hang
        answer = self.ask(None)
        if not (isinstance(answer, tuple) and answer[0] == "ready"):
            raise RuntimeError(f"path process {make_args[1]} did not start")
        waits = ", ".join(f"{name}={value}" for name, value in answer[1].items() if value is not None)
        print(f"path {make_args[1]}/{make_args[2]}: OpenMP waits {waits or 'as the defaults have them'}", flush=True)

    def ask(self, command: str | None) -> Any:
        if command is not None:
            self.conn.send(command)
        try:
            return self.conn.recv()
        except EOFError:
            self.process.join(timeout=5)  # for its exit code; its traceback is on stderr above
            raise RuntimeError(f"a path process died (exit code {self.process.exitcode})") from None

    def stop(self) -> None:
        with contextlib.suppress(BrokenPipeError, OSError):  # already gone
            self.conn.send("stop")
        self.process.join(timeout=30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", default=str(ROOT / "configs" / "ppo_selfplay.yaml"))
    parser.add_argument("--rounds", type=int, default=3, help="timed rounds per path (median; default 3)")
    parser.add_argument("--batch", type=int, default=None, help="batch_size override (default: the config's)")
    parser.add_argument("--league", choices=("config", "running", "selfplay", "both"), default="both")
    parser.add_argument("--paths", default="today,new", help="comma-separated: today,new")
    parser.add_argument(
        "--variant",
        action="append",
        default=[],
        metavar="NAME:FIELD=V[,FIELD=V]",
        help="a what-if path: the new path with these config fields (repeatable)",
    )
    parser.add_argument("--load", type=int, default=0, help="other processes spinning a core each (default 0)")
    parser.add_argument("--profile", action="store_true", help="print a cProfile of one extra round per path")
    parser.add_argument("--json", default=None, help="append the result rows to this JSONL file")
    args = parser.parse_args()
    leagues = ["config", "selfplay"] if args.league == "both" else [args.league]
    paths = args.paths.split(",")
    for spec in args.variant:
        name, _, fields = spec.partition(":")
        if not name or name in PATHS or not fields:
            parser.error(f"--variant {spec!r}: want NAME:FIELD=V[,FIELD=V] with a new name (not {sorted(PATHS)})")
        env_fields = [f for f in fields.split(",") if f.startswith("env.")]
        if any("=" not in f or f.startswith("env.=") for f in env_fields):
            parser.error(f"--variant {spec!r}: an environment field is env.VAR=VALUE")
        PATH_ENV[name] = {var: value or None for var, value in (f[4:].split("=", 1) for f in env_fields)}
        if "OMP_WAIT_POLICY" in PATH_ENV[name] and not any(PATH_ENV[name].get(v) for v in WAIT_SETTINGS):
            parser.error(
                f"--variant {spec!r}: without OMP_WAIT_POLICY the training package sets it again (training/openmp.py); "
                "libgomp's default waits are env.OMP_WAIT_POLICY=,env.GOMP_SPINCOUNT=300000"
            )
        PATHS[name] = [*PATHS["new"], *(f for f in fields.split(",") if not f.startswith("env."))]
        paths.append(name)
    unknown = [p for p in paths if p not in PATHS]
    if unknown:
        parser.error(f"--paths: unknown {unknown}; known: {sorted(PATHS)}")
    print(f"load before: {load()}  (cpus: {os.cpu_count()})", flush=True)
    run_root = tempfile.mkdtemp(prefix="bench_training_")
    context = mp.get_context("spawn")  # a fresh interpreter each: no torch or allocator state inherited
    trainers: dict[tuple[str, str], PathProcess] = {}
    busy: list[subprocess.Popen[bytes]] = []
    try:
        for lg in leagues:
            for p in paths:
                make_args = (args.config, p, lg, args.batch, run_root, PATHS[p])
                trainers[(p, lg)] = PathProcess(context, make_args, PATH_ENV.get(p))
        for _ in range(args.load):  # appended one by one: a failed start still stops those started
            busy.append(subprocess.Popen([sys.executable, "-c", "while True: pass"]))
        if busy:
            print(f"{len(busy)} busy process(es) spinning from here to the last round", flush=True)
        run_rounds(args, leagues, trainers)
    finally:
        for proc in busy:
            proc.kill()
            proc.wait()
        for trainer in trainers.values():
            trainer.stop()
        shutil.rmtree(run_root, ignore_errors=True)  # every run left its run folders in /tmp


def run_rounds(args: argparse.Namespace, leagues: list[str], trainers: dict[tuple[str, str], PathProcess]) -> None:
    """Warm up, time the rounds, print the table and ratios (and the profiles)."""
    for key, trainer in trainers.items():
        print(f"warm-up {key}: {trainer.ask('warmup'):.1f} s", flush=True)
    rows: dict[tuple[str, str], list[dict[str, float]]] = {key: [] for key in trainers}
    for r in range(args.rounds):
        for key, trainer in trainers.items():
            row = trainer.ask("round")
            rows[key].append(row)
            print(
                f"round {r} {key[0]:>5}/{key[1]:<8} n={row['decisions']:.0f} rollout {row['rollout']:8.0f}/s "
                f"update {row['update']:7.0f}/s end-to-end {row['end_to_end']:7.0f}/s  load {load()}",
                flush=True,
            )
    print(f"load after: {load()}")
    summary: list[dict[str, Any]] = []
    for (path, league), results in rows.items():
        med = {k: statistics.median(row[k] for row in results) for k in results[0]}
        total = {
            k: sum(row[k] for row in results)
            for k in ("decisions", "rollout_decisions", "rollout_s", "update_s", "loop_s")
        }
        pooled = {
            "pooled_rollout": total["rollout_decisions"] / total["rollout_s"],
            "pooled_update": total["decisions"] / total["update_s"],
            "pooled_end_to_end": total["decisions"] / total["loop_s"],
        }
        summary.append({"path": path, "league": league, "rounds": len(results), **med, **pooled})
    print(
        "\n| league | path | decisions/update | rollout dec/s | update dec/s | end-to-end dec/s "
        "| pooled: rollout | update | end to end | baseline share |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for row in summary:
        share = f"{row['share_baselines']:.2f}" if "share_baselines" in row else "-"
        print(
            f"| {row['league']} | {row['path']} | {row['decisions']:.0f} | {row['rollout']:,.0f} | "
            f"{row['update']:,.0f} | {row['end_to_end']:,.0f} | {row['pooled_rollout']:,.0f} | "
            f"{row['pooled_update']:,.0f} | {row['pooled_end_to_end']:,.0f} | {share} |"
        )
    for league in leagues:
        by_path = {row["path"]: row for row in summary if row["league"] == league}
        for path in (p for p in by_path if p != "today" and "today" in by_path):
            for prefix, label in (("", "medians"), ("pooled_", "pooled")):
                ratios = {
                    k: by_path[path][prefix + k] / by_path["today"][prefix + k]
                    for k in ("rollout", "update", "end_to_end")
                }
                print(f"{league}: {path} / today ({label}) = " + ", ".join(f"{k} {v:.1f}x" for k, v in ratios.items()))
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)  # bench/results/ is not in a fresh checkout
        with open(args.json, "a", encoding="utf-8") as fh:
            for row in summary:
                fh.write(json.dumps({**row, "load_after": load()}) + "\n")
    if args.profile:
        for key, trainer in trainers.items():
            print(f"\n===== cProfile, one round: {key}\n{trainer.ask('profile')}")


if __name__ == "__main__":
    main()
