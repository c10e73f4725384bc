"""A learning curve against one opponent, over a run's kept policies (``burako-curve``).

    burako-curve runs/<run> --b ismcts --b-opt simulations=30 --games 100 --seed 2026 \\
        --workers 2 --json curve.json --plot curve.png --with-training-evals

Training evaluates against cheap baselines only (``eval_opponents``); an
opponent that costs minutes a game, a search, is played afterwards on the
policies the run kept (``keep_policy_every``: ``policies/update_<n>.pt``). Each
source is a run folder (its ``policies/*.pt`` and its last network:
``policy.pt``, or ``policy_last.pt`` beside an averaged ``policy.pt``) or a
checkpoint file (a kept policy, or a training checkpoint such as
``checkpoints/latest.pt``). Every file must say how far its run had trained
(``agents.checkpoint.training_progress``); two files of the same update
(and decisions) and the same network count once. The files must be one
run's (network shape, rules, ``exp_name`` and seed): another run's file, or
another network at the same update, is refused. Each point is ``burako-eval``'s duplicate evaluation of the
policy (agent A) against ``--b`` on the same deals (``--seed``), so points
differ by the policy only. The games follow the rules and player count the run
was trained for, unless ``--rules`` or ``--players`` say otherwise.

``--json`` holds the curve and is rewritten after every point: the same
command after a kill plays only the points it lacks (it refuses a file made
with another opponent, game count, seed or rules). Points are keyed by update
and decisions, and a file keeps every point it holds: a later command with
more kept policies (the run went on) adds theirs. Each point names its
file's SHA-256: a policy file rewritten since (a run resumed after a kill
replays the updates after its last checkpoint, and keeps their policies
again) is played again and its point replaced, as is a point written before
points named their file's SHA-256. The table and the plot show
the points of the sources given. ``--plot`` draws it
(:func:`training.curves.plot_learning_curve`); with ``--with-training-evals``
the training's own evaluations (the ``eval_history`` of the training
checkpoint among the sources, or a run folder's ``checkpoints/latest.pt``)
are drawn beside it, labelled ``(training evals)``.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Any

from tqdm import tqdm

from agents import checkpoint as ckpt
from agents.options import parse_options
from burako_env.rules import Rules, RulesError, load_rules
from training.curves import plot_learning_curve
from training.duplicate import AgentSpec
from training.evaluate import evaluate
from training.files import (
    KEPT_POLICIES,
    LAST_POLICY_FILE,
    POLICY_FILE,
    check_output_file,
    file_digest,
    json_report,
    write_text_atomic,
)
from training.signals import sigterm_as_interrupt

#: what a curve file must match to be continued: the figures of one set of games
CURVE_KEYS = ("b", "games", "seed", "rules", "num_players")


def curve_sources(sources: list[str]) -> list[Path]:
    """The checkpoint files named by ``sources`` (a run folder stands for its kept policies and last network)."""
    files: list[Path] = []
    for source in sources:
        path = Path(source)
        if path.is_dir():
            # the run's last network: policy.pt, or policy_last.pt beside an averaged policy.pt
            last = next((path / n for n in (LAST_POLICY_FILE, POLICY_FILE) if (path / n).is_file()), None)
            found = sorted((path / KEPT_POLICIES).glob("*.pt")) + ([] if last is None else [last])
            if not found:
                raise ValueError(
                    f"run folder {source} has no kept policies (policies/*.pt: keep_policy_every) nor policy.pt "
                    "nor policy_last.pt"
                )
            files.extend(found)
        elif path.is_file():
            files.append(path)
        else:
            raise ValueError(f"{source} is neither a run folder nor a checkpoint file")
    return files


def curve_points(files: list[Path]) -> list[dict[str, Any]]:
    """One point per update (a policy kept at the run's last update and its last network count once),
    ordered by training decisions: ``checkpoint``, ``update``, ``step``, ``minutes``. An averaged policy
    is refused: it carries its last network's progress but is not the network of any one update."""
    points: dict[tuple[int, int], dict[str, Any]] = {}
    run: tuple[Any, ...] | None = None
    first: Path | None = None
    for path in files:
        data = ckpt.load(path)
        # one run's networks: two runs' policies made one curve, and one run's update hid the other's
        shape, rules = ckpt.policy_description(data, str(path))
        config = data.get("config") or {}
        identity = (shape, rules, config.get("exp_name"), config.get("seed"))
        if run is None:
            run, first = identity, path
        elif identity != run:
            raise ValueError(
                f"{path} is not of the run of {first} (network shape, rules, exp_name or seed differ): a learning "
                "curve follows one run; give each run its own burako-curve"
            )
        if "averaged" in data:
            raise ValueError(
                f"{path} is the mean of {data['averaged']} policies, not one update's network: no point of a "
                "learning curve (play it with burako-eval; a run folder's last network is its policy_last.pt)"
            )
        progress = ckpt.training_progress(data)
        if progress is None:
            raise ValueError(
                f"{path} does not say how far its run had trained (a policy exported before 2026-12-05 or by "
                "hand); give the run's kept policies or a training checkpoint"
            )
        point = {
            "checkpoint": str(path),
            "sha256": file_digest(path),
            "update": progress["update"],
            "step": progress["global_step"],
        }
        weights = ckpt.weights_digest(data, str(path))
        same = points.get((point["update"], point["step"]))
        if same is not None and same["weights"] != weights:  # the same network may sit in two files (policy.pt)
            raise ValueError(
                f"{path} and {same['checkpoint']} are other networks of the same update {point['update']} "
                f"({point['step']} decisions): the same run cannot have two; give one of them"
            )
        points.setdefault(
            (point["update"], point["step"]), {**point, "minutes": progress["minutes"], "weights": weights}
        )
    ordered = sorted(points.values(), key=lambda p: (p["step"], p["update"]))
    return [{k: v for k, v in p.items() if k != "weights"} for p in ordered]


def run_table(path: Path) -> tuple[Rules, int]:
    """The rules and player count a run's checkpoint was trained for (one run's files share them,
    :func:`curve_points`)."""
    shape, rules = ckpt.policy_description(ckpt.load(path), str(path))
    if not isinstance(rules, Rules):
        raise ValueError(f"{path} is a {shape.game} policy; burako-curve plays Burako policies")
    return rules, shape.num_players


def training_evals(files: list[Path], sources: list[str]) -> list[dict[str, Any]]:
    """The training's own evaluation rows (its ``eval_history``), each opponent labelled ``(training evals)``:
    from the furthest-trained training checkpoint among ``files`` or the run folders' ``checkpoints/latest.pt``."""
    candidates = list(files) + [Path(s) / "checkpoints" / "latest.pt" for s in sources if Path(s).is_dir()]
    best: dict[str, Any] | None = None
    for path in candidates:
        if not path.is_file():
            continue
        data = ckpt.load(path)
        if data["format"] == ckpt.TRAINING_FORMAT and (
            best is None or data["trainer"]["global_step"] > best["trainer"]["global_step"]
        ):
            best = data
    if best is None:
        raise ValueError("--with-training-evals needs a training checkpoint (a run folder: its checkpoints/latest.pt)")
    rows = json.loads(best["trainer"]["eval_history"])
    return [{k: v for k, v in row.items() if not isinstance(v, dict)} | {
        f"{k} (training evals)": v for k, v in row.items() if isinstance(v, dict)
    } for row in rows]  # fmt: skip


def load_curve(path: Path | None, settings: dict[str, Any]) -> list[dict[str, Any]]:
    """The points already played into ``path`` (none when it does not exist); a curve made with other
    settings is refused, not mixed in."""
    if path is None or not path.is_file():
        return []
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        kept = {k: data[k] for k in CURVE_KEYS}
        points = list(data["points"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ValueError(f"--json {path} is not a curve file of burako-curve ({exc}); name another file") from exc
    if kept != settings:
        raise ValueError(
            f"--json {path} holds a curve with {kept}, not {settings}; name another file to start a new curve"
        )
    return [_with_nan(point) for point in points]


def _with_nan(value: Any) -> Any:
    """A point as it was before ``json_report`` wrote its no-number figures (one deal's intervals) as null."""
    if value is None:
        return math.nan
    if isinstance(value, dict):
        return {k: v if k in ("checkpoint", "sha256") else _with_nan(v) for k, v in value.items()}
    return value


def format_curve(points: list[dict[str, Any]], b: str) -> str:
    lines = [f"policy vs {b}", "update  decisions  minutes  win rate [95% CI]      score diff [95% CI]"]
    for p in points:
        r = p[b]
        lines.append(
            f"{p['update']:>6}  {p['step'] / 1e6:>8.2f}M  {p['minutes']:>7.1f}  "
            f"{r['win_rate']:.3f} [{r['low']:.3f}, {r['high']:.3f}]  "
            f"{r['score']:+7.1f} [{r['score_low']:+.1f}, {r['score_high']:+.1f}]"
        )
    return "\n".join(lines)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="burako-curve", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("sources", nargs="+", help="run folders or checkpoint files")
    parser.add_argument("--b", required=True, help="the opponent: an agent name or module:Class")
    parser.add_argument("--b-opt", action="append", metavar="KEY=VALUE", help="option for the opponent (repeatable)")
    parser.add_argument("--games", type=int, default=100, help="games per point, an even number (2 per deal)")
    parser.add_argument("--seed", type=int, default=0, help="deal seed, the same for every point")
    parser.add_argument(
        "--rules", default=None, help="rules preset name or YAML path (default: the rules the run was trained on)"
    )
    parser.add_argument(
        "--players", type=int, default=None, choices=(2, 4), help="default: the player count the run was trained for"
    )
    parser.add_argument("--workers", type=int, default=1, help="worker processes")
    parser.add_argument("--json", metavar="PATH", help="the curve, rewritten after every point; continued when rerun")
    parser.add_argument("--plot", metavar="PATH", help="a PNG of the curve")
    parser.add_argument("--with-training-evals", action="store_true", help="plot the run's own evaluations beside")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        json_path = None if args.json is None else check_output_file(args.json, "--json")
        plot_path = None if args.plot is None else check_output_file(args.plot, "--plot")
        b = AgentSpec.of(args.b, parse_options(args.b_opt, "--b-opt"))
        b.build(0)  # an unknown name or a bad option fails before any game
        if args.games <= 0 or args.games % 2:
            raise ValueError(f"--games must be a positive even number (each deal is played twice), got {args.games}")
        if args.seed < 0 or args.workers < 1:
            raise ValueError(f"--seed must be >= 0 and --workers >= 1, got {args.seed} and {args.workers}")
        files = curve_sources(args.sources)
        points = curve_points(files)
        # the run's own table unless told otherwise: the presets share one layout, so a policy trained
        # on burako_br played its whole curve on burako's rules without a word
        trained_rules, trained_players = run_table(files[0])
        rules = trained_rules if args.rules is None else load_rules(args.rules)
        players = trained_players if args.players is None else args.players
        settings = {"b": b.label, "games": args.games, "seed": args.seed, "rules": args.rules or rules.name}
        settings["num_players"] = players
        #: every point the file holds (kept whatever the sources of this run), by update and decisions
        played = {(p["update"], p["step"]): p for p in load_curve(json_path, settings)}
        if args.with_training_evals and args.plot is None:
            raise ValueError("--with-training-evals draws the run's own evaluations in --plot: give --plot too")
        extra = training_evals(files, args.sources) if args.with_training_evals else []
        for point in points:  # every policy is loaded and seated before the first game: a bad file costs nothing
            AgentSpec.of("policy", {"checkpoint": point["checkpoint"]}).build(0).reset(0, rules, players)
    except (ValueError, ckpt.CheckpointError, RulesError) as exc:
        parser.error(str(exc))

    def save() -> None:
        if json_path is not None:
            ordered = sorted(played.values(), key=lambda p: (p["step"], p["update"]))
            write_text_atomic(json_path, json_report({**settings, "points": ordered}))

    def is_played(point: dict[str, Any]) -> bool:
        """Played from this very file: a point of a file rewritten since, or written before points
        named their file's SHA-256, is played again (never reused unchecked, as burako-eval --resume)."""
        kept = played.get((point["update"], point["step"]))
        return kept is not None and kept.get("sha256") == point["sha256"]

    todo = [p for p in points if not is_played(p)]
    try:
        with sigterm_as_interrupt():
            for point in tqdm(todo, desc=f"policies vs {b.label}", unit="policy", disable=args.no_progress):
                summary = evaluate(
                    AgentSpec.of("policy", {"checkpoint": point["checkpoint"]}),
                    b,
                    games=args.games,
                    seed=args.seed,
                    rules=rules,
                    num_players=players,
                    workers=args.workers,
                ).summary
                key = (point["update"], point["step"])
                # a file rewritten by a resumed run may hold another step: its old point leaves with it
                stale = [k for k, p in played.items() if p["checkpoint"] == point["checkpoint"] and k != key]
                for k in stale:
                    del played[k]
                played[key] = {**point, b.label: summary.curve_point()}
                save()
    except KeyboardInterrupt:
        kept = f"the same command continues it from {json_path}" if json_path else "no --json file: nothing was kept"
        done = sum(is_played(p) for p in points)
        print(f"burako-curve: interrupted after {done} of {len(points)} points; {kept}", file=sys.stderr)
        return 130
    curve = [played[(p["update"], p["step"])] for p in points]
    print(format_curve(curve, b.label))
    if plot_path is not None:
        history = sorted(curve + extra, key=lambda row: row["step"])
        plot_learning_curve(history, plot_path, title=f"policy vs {b.label}, {args.games} games a point")
        print(f"plot: {plot_path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
