"""Copy a run's TensorBoard scalars into one smaller event file, for the docs.

    python -m training.trim_events runs/<run> docs/training/reference_run   # a folder without event files

A two-hour run logs the league's share and win rate of every snapshot it ever
held (``league/p_snapshot_<update>``, ``league/winrate_snapshot_<update>``):
hundreds of tags, most of the event file. This copies every other scalar
(charts, losses, evaluations, cloning, the rollout's time shares, the league's
size, baseline share and its baselines' and self-play's curves; every point,
with its step and wall time) into a new event file in ``DEST``, the file
``docs/training/reference_run/`` ships and notebook 03 plots. The run folder
is not touched.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from training.league import SNAPSHOT_PREFIX


def kept(tag: str) -> bool:
    """Whether the trimmed file holds this scalar tag: all but the league's per-snapshot curves."""
    snapshot = SNAPSHOT_PREFIX.replace(":", "_")  # as the trainer writes a member's name into a tag
    return not tag.startswith((f"league/p_{snapshot}", f"league/winrate_{snapshot}"))


def trim_events(source: Path, dest: Path) -> dict[str, int]:
    """Write the kept scalars of the event files in ``source`` to a new file in ``dest``; points per tag."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    from torch.utils.tensorboard import SummaryWriter

    if not source.is_dir() or not any(source.glob("events.out.tfevents.*")):
        raise ValueError(f"{source}: no TensorBoard event file (events.out.tfevents.*) in this folder")
    if dest.resolve().is_relative_to(source.resolve()):
        raise ValueError(f"{dest}: the trimmed file must go outside the run's folder (TensorBoard would read it twice)")
    if dest.exists() and not dest.is_dir():
        raise ValueError(f"{dest} is a file, not a folder")
    held = sorted(dest.glob("events.out.tfevents.*")) if dest.is_dir() else []
    if held:  # TensorBoard reads every event file of a folder: the points would be there twice
        raise ValueError(f"{dest} already holds an event file ({held[0].name}); delete it or name an empty folder")
    events = EventAccumulator(str(source), size_guidance={"scalars": 0})  # 0: every point, not a sample
    events.Reload()
    tags = sorted(t for t in events.Tags()["scalars"] if kept(t))
    if not tags:
        raise ValueError(f"{source}: no scalar to keep (only the league's per-snapshot curves, or none)")
    dest.mkdir(parents=True, exist_ok=True)
    counts: dict[str, int] = {}
    writer = SummaryWriter(str(dest))
    try:
        for tag in tags:
            points = events.Scalars(tag)
            for point in points:
                writer.add_scalar(tag, point.value, point.step, walltime=point.wall_time)
            counts[tag] = len(points)
    finally:
        writer.close()
    return counts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m training.trim_events", description=(__doc__ or "").split("\n\n")[0]
    )
    parser.add_argument("source", type=Path, help="a run folder (its events.out.tfevents.* files)")
    parser.add_argument("dest", type=Path, help="the folder for the trimmed event file")
    args = parser.parse_args(argv)
    try:
        counts = trim_events(args.source, args.dest)
    except ValueError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(f"{sum(counts.values()):,} points of {len(counts)} tags written to {args.dest}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
