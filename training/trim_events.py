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

from burako_env.analysis import tensorboard_scalars
from training.league import SNAPSHOT_PREFIX, member_tag


def kept(tag: str) -> bool:
    """Whether the trimmed file holds this scalar tag: all but the league's per-snapshot curves."""
    snapshot = member_tag(SNAPSHOT_PREFIX)
    return not tag.startswith((f"league/p_{snapshot}", f"league/winrate_{snapshot}"))


def trim_events(source: Path, dest: Path) -> dict[str, int]:
    """Write the kept scalars of the event files in ``source`` to a new file in ``dest``; points per tag."""
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
    scalars = tensorboard_scalars(source)  # every point of every tag, not TensorBoard's sample
    scalars = scalars[scalars["tag"].map(kept)].sort_values("tag", kind="stable")
    if scalars.empty:
        raise ValueError(f"{source}: no scalar to keep (only the league's per-snapshot curves, or none)")
    dest.mkdir(parents=True, exist_ok=True)
    writer = SummaryWriter(str(dest))
    try:
        for row in scalars.itertuples(index=False):
            writer.add_scalar(row.tag, row.value, row.step, walltime=row.wall_time)
    finally:
        writer.close()
    counts = scalars.groupby("tag").size()
    return {str(tag): int(n) for tag, n in counts.items()}


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
