"""The batched API beside a busy CPU: thread settings measured side by side.

    .venv/bin/python bench/bench_threads.py                 # 3 rounds, one concurrent busy process
    .venv/bin/python bench/bench_threads.py --load 0        # no extra load
    .venv/bin/python bench/bench_threads.py --seconds 5 --rounds 5 --torch

Each setting runs in its own process (numba fixes its threading layer at the
first parallel call), for ``--seconds`` of ``BurakoVectorEnv(--batch).step``
with uniformly random legal actions, while ``--load`` other processes spin a
CPU each (started before, stopped after). Rounds interleave the settings, so
slow phases of a shared machine hit all of them; medians of agent steps/s.

| setting     | threading layer / scheduling                                              |
|-------------|---------------------------------------------------------------------------|
| default     | whatever ``burako_env.vector`` chooses by itself (today: workqueue,       |
|             | dynamic chunks), every core                                               |
| one-thread  | the same with ``num_threads=1``                                           |
| omp-static  | ``NUMBA_THREADING_LAYER=omp``, static chunks (the settings before         |
|             | issue 15), every core                                                     |

``--torch``: each step is followed by a forward pass of the policy network
on the step's observations (torch's own threads, ``torch.set_num_threads``
= ``--torch-threads``), as in training, so numba and torch share the process.

Done-when (issue 15): with one other CPU-bound process running, ``default``
is never slower than ``one-thread`` in the same run.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

SETTINGS: dict[str, tuple[dict[str, str], int | None, int]] = {
    # name: (environment, num_threads, chunksize; 0 = numba's static split)
    "default": ({}, None, 1),
    "one-thread": ({}, 1, 1),
    "omp-static": ({"NUMBA_THREADING_LAYER": "omp"}, None, 0),
}

WORKER = r"""
import json, sys, time
import numba
import numpy as np
sys.path.insert(0, {root!r})
from burako_env import vector
vector.PARALLEL_CHUNKSIZE = {chunk}
from burako_env.vector import BurakoVectorEnv, sample_legal_actions
if {threads} is not None:  # the whole process, the sampler too (an env's num_threads is its kernels' only)
    numba.set_num_threads({threads})
env = BurakoVectorEnv({batch}, num_players={players}, num_threads={threads})
net = None
if {torch}:
    import torch
    torch.set_num_threads({torch_threads})
    from agents.network import NetworkShape, PolicyNet
    from training.network import sample_actions
    net = PolicyNet(NetworkShape.for_env({players}, env.rules), env.rules)
obs, masks, _ = env.reset(seed=0)
rng = np.random.default_rng(0)
def one():
    global obs, masks
    if net is not None:
        with torch.inference_mode():
            sample_actions(net, torch.from_numpy(obs), torch.from_numpy(masks.view(np.bool_)))
    obs, masks, *_ = env.step(sample_legal_actions(masks, rng))
for _ in range(10):
    one()
steps = 0
start = time.perf_counter()
while time.perf_counter() - start < {seconds}:
    one()
    steps += {batch}
elapsed = time.perf_counter() - start
row = {{"steps_per_s": steps / elapsed, "layer": numba.threading_layer(), "threads": env.step_threads}}
print(json.dumps(row))
"""


def run_setting(name: str, args: argparse.Namespace) -> dict:
    env_vars, threads, chunk = SETTINGS[name]
    code = WORKER.format(
        root=str(ROOT),
        chunk=chunk,
        batch=args.batch,
        players=args.players,
        threads=threads,
        seconds=args.seconds,
        torch=args.torch,
        torch_threads=args.torch_threads,
    )
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_THREADING_LAYER"}
    env.update(env_vars)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--load", type=int, default=1, help="busy processes running meanwhile (default 1)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=3.0, help="timed seconds per setting and round")
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--players", type=int, default=2, choices=(2, 4))
    parser.add_argument("--settings", default=",".join(SETTINGS))
    parser.add_argument("--torch", action="store_true", help="a policy forward pass after every step")
    parser.add_argument("--torch-threads", type=int, default=1)
    parser.add_argument("--json", default=None, help="append the medians to this JSONL file")
    args = parser.parse_args()
    names = args.settings.split(",")
    busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(args.load)]
    results: dict[str, list[float]] = {name: [] for name in names}
    layers: dict[str, str] = {}
    try:
        print(f"load average at start: {os.getloadavg()[0]:.2f} (cpus: {os.cpu_count()}, busy: {args.load})")
        for r in range(args.rounds):
            for name in names:
                row = run_setting(name, args)
                results[name].append(row["steps_per_s"])
                layers[name] = f"{row['layer']} x{row['threads']}"
                print(f"round {r} {name:<11} {row['steps_per_s']:>10,.0f} steps/s ({layers[name]})", flush=True)
        load = os.getloadavg()[0]
    finally:
        for proc in busy:
            proc.kill()
            proc.wait()
    print(f"load average at end: {load:.2f}")
    label = f"{args.load} busy process(es){', + torch forward' if args.torch else ''}"
    print(f"\n| setting ({label}) | layer x threads | median steps/s | runs |")
    print("|---|---|---|---|")
    for name in names:
        runs = ", ".join(f"{v:,.0f}" for v in results[name])
        print(f"| {name} | {layers[name]} | {statistics.median(results[name]):,.0f} | {runs} |")
    if "default" in results and "one-thread" in results:
        ratio = statistics.median(results["default"]) / statistics.median(results["one-thread"])
        print(f"default / one-thread: {ratio:.2f}x")
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)  # bench/results/ is not in a fresh checkout
        with open(args.json, "a", encoding="utf-8") as fh:
            row = {"label": label, "load_end": load, **{k: statistics.median(v) for k, v in results.items()}}
            fh.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()
