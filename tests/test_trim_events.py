"""The docs' trimmed TensorBoard file: every scalar but the league's per-snapshot curves, point for point."""

from __future__ import annotations

from pathlib import Path

import pytest
from torch.utils.tensorboard import SummaryWriter

from burako_env.analysis import tensorboard_scalars
from training.trim_events import main, trim_events


def scalars(folder: Path) -> dict[str, list[tuple[int, float, float]]]:
    """Every point of every tag: (step, value, wall time)."""
    frame = tensorboard_scalars(folder)
    return {
        tag: list(zip(part["step"], part["value"], part["wall_time"], strict=True))
        for tag, part in frame.groupby("tag")
    }


def test_trimming_drops_the_per_snapshot_curves_and_keeps_every_other_point(tmp_path: Path) -> None:
    run = tmp_path / "run"
    writer = SummaryWriter(str(run))
    for step in range(10_050):  # more points than TensorBoard keeps of a tag by default (10,000)
        writer.add_scalar("charts/SPS", step / 10, step, walltime=1e9 + step)
    for step in range(0, 3000, 100):
        writer.add_scalar("league/p_planner", 0.6, step)
        writer.add_scalar("league/p_snapshot_10", 0.1, step)
        writer.add_scalar("league/winrate_snapshot_10", 0.5, step)
    writer.add_scalar("eval/winrate_vs_planner", 0.7, 2900)
    writer.close()
    counts = trim_events(run, tmp_path / "trimmed")
    assert counts == {"charts/SPS": 10_050, "eval/winrate_vs_planner": 1, "league/p_planner": 30}
    before, after = scalars(run), scalars(tmp_path / "trimmed")
    assert after == {tag: before[tag] for tag in counts}
    assert len(list(run.glob("events.out.tfevents.*"))) == 1  # the run folder is not written to
    assert after["charts/SPS"][-1] == (10_049, 1004.9000244140625, 1e9 + 10_049)  # step, float32 value, wall time


def test_trimming_refuses_a_folder_without_events_a_dest_inside_the_run_or_holding_events(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(ValueError, match="no TensorBoard event file"):
        trim_events(tmp_path, tmp_path / "out")
    assert main([str(tmp_path / "missing"), str(tmp_path / "out")]) == 2
    assert "no TensorBoard event file" in capsys.readouterr().err
    writer = SummaryWriter(str(tmp_path / "run"))
    writer.add_scalar("charts/SPS", 1.0, 0)
    writer.close()
    for dest in (tmp_path / "run", tmp_path / "run" / "trimmed"):
        with pytest.raises(ValueError, match="outside the run's folder"):
            trim_events(tmp_path / "run", dest)
    (tmp_path / "a_file").write_text("x")
    with pytest.raises(ValueError, match="is a file, not a folder"):
        trim_events(tmp_path / "run", tmp_path / "a_file")
    trim_events(tmp_path / "run", tmp_path / "out")
    with pytest.raises(ValueError, match="already holds an event file"):  # a second file would double the points
        trim_events(tmp_path / "run", tmp_path / "out")
    assert len(list((tmp_path / "out").glob("events.out.tfevents.*"))) == 1
    assert len(list((tmp_path / "run").iterdir())) == 1  # only the run's own event file
