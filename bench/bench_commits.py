"""The learning loop of two checkouts, side by side: did a change make it faster?

    git worktree add /tmp/base <commit>          # the code to compare against
    .venv/bin/python bench/bench_commits.py --base /tmp/base --rounds 6
    .venv/bin/python bench/bench_commits.py --base /tmp/base --league selfplay --config configs/ppo_selfplay.yaml

``bench/bench_training.py`` compares paths of *one* checkout. A change to the
code itself (a faster heuristic, a cheaper determinization) needs the same
trainer built from two checkouts, and the host this project runs on changes
speed by 1.4x within twenty minutes at the same load (``bench/README.md``), so
two benchmark runs one after the other say little. Here each checkout's
trainer lives in its own process (started with that checkout first on its
``sys.path``), both built by that checkout's ``bench_training.make_trainer``
from the same config, seed and path (``new`` unless ``--path``); after one
untimed warm-up round each, rounds alternate (base, this, base, this ...), so a
slow phase of the machine hits both. Figures: learner decisions per second,
rollout, update and end to end, per round, then pooled (all rounds'
decisions / all their seconds) and medians, with the ratio this / base.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
KEYS = ("rollout", "update", "end_to_end")


def serve(tree: str, config: str, path: str, league: str, fields: list[str]) -> None:
    """One checkout's trainer: a JSON line per timed round asked for on stdin, until "stop"."""
    sys.path[:0] = [str(Path(tree) / "bench"), tree]
    if path == "today":  # OpenMP's default waits, as bench_training gives its today path (before torch loads)
        with contextlib.suppress(ImportError):  # a checkout from before training/openmp.py waits so already
            from training.openmp import use_default_waits

            use_default_waits()
    import bench_training  # the checkout's own, found through the path just set

    with tempfile.TemporaryDirectory() as run_root:
        fields = bench_training.PATHS[path] + fields
        trainer = bench_training.make_trainer(config, path, league, None, run_root, fields)
        try:
            bench_training.one_round(trainer)  # warm-up: hands in play carry over, as in a long run
            print(json.dumps({"ready": str(Path(bench_training.__file__).resolve())}), flush=True)
            for line in sys.stdin:
                if line.strip() == "stop":
                    break
                print(json.dumps(bench_training.one_round(trainer)), flush=True)
        finally:
            trainer.close()


def pooled(rows: list[dict[str, Any]], key: str) -> float:
    """All rounds' decisions / all their seconds. A checkout from before 2026-12-07 gives no ``loop_s`` (its
    loop was its rollout and update, one after the other) nor ``rollout_decisions`` (its rollout's batch
    was its update's)."""
    if key == "end_to_end":
        return sum(r["decisions"] for r in rows) / sum(r.get("loop_s", r["rollout_s"] + r["update_s"]) for r in rows)
    if key == "rollout":
        return sum(r.get("rollout_decisions", r["decisions"]) for r in rows) / sum(r["rollout_s"] for r in rows)
    return sum(r["decisions"] for r in rows) / sum(r["update_s"] for r in rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base", required=True, help="a checkout of the code to compare against (git worktree add)")
    parser.add_argument("--config", default="configs/ppo_reference.yaml")
    parser.add_argument("--rounds", type=int, default=5, help="timed rounds per checkout (default 5)")
    parser.add_argument("--league", choices=["config", "running", "selfplay"], default="config")
    parser.add_argument("--path", default="new", help="bench_training's path: new (default) or today")
    parser.add_argument("--set", action="append", default=[], metavar="FIELD=V", help="a config field for both")
    parser.add_argument("--serve", help=argparse.SUPPRESS)  # internal: run one checkout's trainer
    args = parser.parse_args()
    if args.serve:
        serve(args.serve, args.config, args.path, args.league, args.set)
        return
    base = Path(args.base).resolve()
    if not (base / "bench" / "bench_training.py").is_file():
        parser.error(f"--base {base} is not a checkout of this project (no bench/bench_training.py)")
    trees = {"base": base, "this": ROOT}
    servers: dict[str, subprocess.Popen[str]] = {}
    try:
        for name, tree in trees.items():  # run from the checkout, so its config files are the ones read
            command = [sys.executable, __file__, "--base", str(base), "--serve", str(tree), "--config", args.config]
            command += ["--path", args.path, "--league", args.league, *(f"--set={f}" for f in args.set)]
            servers[name] = subprocess.Popen(
                command, cwd=tree, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
            )
            ready = servers[name].stdout.readline()  # type: ignore[union-attr]
            if not ready:
                raise SystemExit(f"the {name} checkout's trainer did not start ({tree}); its error is above")
            print(f"{name}: {json.loads(ready)['ready']}")
        load_before = os.getloadavg()
        print("load before: {:.2f} {:.2f} {:.2f}".format(*load_before), flush=True)
        rows: dict[str, list[dict[str, Any]]] = {name: [] for name in trees}
        for r in range(args.rounds):
            for name, server in servers.items():
                server.stdin.write("round\n")  # type: ignore[union-attr]
                server.stdin.flush()  # type: ignore[union-attr]
                row = json.loads(server.stdout.readline())  # type: ignore[union-attr]
                rows[name].append(row)
                rates = "  ".join(f"{k} {row[k]:7.0f}/s" for k in KEYS)
                print(f"round {r}  {name:4s}  n={row['decisions']:.0f}  {rates}", flush=True)
        print("load after: {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))
    finally:
        for server in servers.values():
            if server.poll() is None:
                server.stdin.write("stop\n")  # type: ignore[union-attr]
                server.stdin.flush()  # type: ignore[union-attr]
                server.wait(timeout=60)
    print("\n| figure | base pooled | this pooled | this / base | base median | this median |")
    print("|---|---|---|---|---|---|")
    for key in KEYS:
        b, t = pooled(rows["base"], key), pooled(rows["this"], key)
        mb, mt = (statistics.median(r[key] for r in rows[n]) for n in ("base", "this"))
        print(f"| {key} | {b:,.0f} | {t:,.0f} | {t / b:.2f}x | {mb:,.0f} | {mt:,.0f} |")


if __name__ == "__main__":
    main()
