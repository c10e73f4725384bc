"""Resuming a training run: what a resume refuses, and what it keeps (faults found in a review of
2026-12-05). Each test saves a run's checkpoint without training (a tiny network, no games), as
``train()`` leaves it, then resumes it the way a user would."""

from __future__ import annotations

import dataclasses
import time
import zipfile
from pathlib import Path

import pytest
import torch

from agents import checkpoint as ckpt
from training.ppo import PPOConfig, Trainer, main
from training.resume import record_config

ROOT = Path(__file__).resolve().parent.parent


def tiny_config(tmp_path: Path, **overrides: object) -> PPOConfig:
    values: dict[str, object] = {
        "run_root": str(tmp_path / "runs"),
        "num_envs": 1,
        "hidden": 16,
        "slot_embed": 4,
        "workers": 1,
        "minibatch_size": 64,
        "bc_teacher": None,
        "max_snapshots": 3,
    }
    values.update(overrides)
    return PPOConfig(**values)


def saved_run(config: PPOConfig, update: int = 3, snapshots: int = 2) -> Path:
    """A run folder whose checkpoint is at ``update`` with ``snapshots`` league snapshots, its
    config.yaml written (as ``train()`` leaves them); the run is then "killed" (lock released)."""
    trainer = Trainer(config, progress=False)
    trainer.started = time.perf_counter()  # what train() sets
    for number in range(1, snapshots + 1):
        trainer.league.add_snapshot(number, trainer.net.state_dict())
    trainer.update = update
    trainer.global_step = 100 * update
    record_config(trainer.run_dir, config.to_dict(), trainer.update, trainer.global_step)
    trainer.save_checkpoint()
    trainer.writer.close()
    trainer.lock.release()
    trainer.close()
    return trainer.run_dir


def resumed(config: PPOConfig, path: str | Path) -> Trainer:
    trainer = Trainer(config, resume=path, progress=False)
    trainer.writer.close()
    trainer.lock.release()
    return trainer


def test_a_resume_from_inside_checkpoints_continues_in_its_run_folder_and_a_moved_checkpoint_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--resume latest.pt`` from inside the run's checkpoints/ took "." for the checkpoints' folder
    and its parent for the run: the run went on in checkpoints/checkpoints/. A checkpoint copied out
    of its run folder has no run to continue in: refused, nothing written beside it."""
    config = tiny_config(tmp_path)
    run_dir = saved_run(config)
    monkeypatch.chdir(run_dir / "checkpoints")
    trainer = resumed(config, "latest.pt")
    assert trainer.run_dir.resolve() == run_dir.resolve() and trainer.update == 3
    assert not (run_dir / "checkpoints" / "checkpoints").exists()
    elsewhere = tmp_path / "copied"
    elsewhere.mkdir()
    (elsewhere / "latest.pt").write_bytes((run_dir / "checkpoints" / "latest.pt").read_bytes())
    with pytest.raises(ckpt.CheckpointError, match=r"not in a run folder's checkpoints/.*resume from the run folder"):
        Trainer(config, resume=elsewhere / "latest.pt", progress=False)
    assert sorted(p.name for p in elsewhere.iterdir()) == ["latest.pt"]


def test_a_resume_under_edited_rules_or_another_seed_is_refused(tmp_path: Path) -> None:
    """The rules file of a run edited since it started (closing_bonus 100 -> 5000): the resume went on
    under the new rules without a word. And --set seed=N on resume changed nothing (the random state
    comes from the checkpoint) while config.yaml recorded N. Both are refused now."""
    rules = tmp_path / "my_rules.yaml"
    preset = (ROOT / "configs" / "rules" / "burako.yaml").read_text()
    rules.write_text(preset)
    config = tiny_config(tmp_path, rules=str(rules), seed=7)
    run_dir = saved_run(config)
    assert resumed(config, run_dir).update == 3  # unchanged: resumes
    rules.write_text(preset.replace("closing_bonus: 100 ", "closing_bonus: 5000 "))
    with pytest.raises(ckpt.CheckpointError, match=r"other rules .*differ in \['closing_bonus'\].*start a new run"):
        Trainer(config, resume=run_dir, progress=False)
    rules.write_text(preset.replace("name: burako", "name: my_burako"))  # a label: the same games
    assert resumed(config, run_dir).update == 3
    rules.write_text(preset)
    # a checkpoint from before a rules field existed spells it out nowhere: read as its default, not refused
    latest = run_dir / "checkpoints" / "latest.pt"
    saved = latest.read_bytes()
    data = torch.load(latest, map_location="cpu", weights_only=True)
    del data["rules"]["muerto_penalty"]  # absent: its default, 100, as the preset has it
    torch.save(data, latest)
    assert resumed(config, run_dir).update == 3
    latest.write_bytes(saved)
    with pytest.raises(ckpt.CheckpointError, match=r"the run's seed is 7, the config says 8.*--set seed=7"):
        Trainer(dataclasses.replace(config, seed=8), resume=run_dir, progress=False)
    assert resumed(config, run_dir).update == 3


def test_a_resume_that_fails_its_checks_leaves_the_run_folder_as_it_was(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """burako-train --resume with a bad league option crashed with a raw TypeError (a new run gets a clear
    error); with anchor_kl_coef on a run that never kept its anchor, it recorded the change in config.yaml
    and config_changes.yaml before failing with a traceback. Both are clear errors now, before anything
    in the run folder changes."""
    first = Trainer(tiny_config(tmp_path), progress=False)
    first.writer.close()
    first.lock.release()
    first.started = time.perf_counter()
    start = tmp_path / "start.pt"
    first.export_policy(start, half=False)
    config = tiny_config(tmp_path, init_checkpoint=str(start))
    run_dir = saved_run(config)
    before = {p.name: p.read_bytes() for p in run_dir.iterdir() if p.is_file()}
    for setting, said in (
        ("league_baseline_options={planner: {bogus: 1}}", "league_baseline_options: planner refuses"),
        ("anchor_kl_coef=0.1", "anchor.pt is missing"),
    ):
        with pytest.raises(SystemExit) as stop:
            main(["--resume", str(run_dir), "--set", setting, "--no-progress"])
        assert stop.value.code == 2
        assert said in capsys.readouterr().err
        assert {p.name: p.read_bytes() for p in run_dir.iterdir() if p.is_file()} == before


def test_a_resume_with_fewer_snapshots_allowed_keeps_the_newest(tmp_path: Path) -> None:
    """--set max_snapshots=1 on resume: the league kept every stored snapshot for the rest of the run."""
    config = tiny_config(tmp_path)
    run_dir = saved_run(config, snapshots=3)
    trainer = resumed(dataclasses.replace(config, max_snapshots=1), run_dir)
    assert list(trainer.league.snapshots) == ["snapshot:3"]
    assert list(resumed(config, run_dir).league.snapshots) == ["snapshot:1", "snapshot:2", "snapshot:3"]


def _rewrite(path: Path, change: object) -> None:
    data = torch.load(path, map_location="cpu", weights_only=True)
    change(data)  # type: ignore[operator]
    torch.save(data, path)


def test_a_damaged_training_checkpoint_is_refused_naming_what_is_wrong(tmp_path: Path) -> None:
    """Four damages that loaded (or failed with a raw RuntimeError): a flipped bit in the weights
    (torch.load does not check the archive's CRCs), NaN in a league snapshot (a failed game later),
    a snapshot of another network (a size mismatch), a negative width (a tensor of negative size)."""
    config = tiny_config(tmp_path)
    run_dir = saved_run(config)
    latest = run_dir / "checkpoints" / "latest.pt"
    good = latest.read_bytes()

    with zipfile.ZipFile(latest) as archive:
        member = max(archive.infolist(), key=lambda info: info.compress_size)
        start = member.header_offset + 30 + len(member.filename.encode()) + len(member.extra)
    flipped = bytearray(good)
    flipped[start + member.compress_size // 2] ^= 0x10
    latest.write_bytes(bytes(flipped))
    with pytest.raises(ckpt.CheckpointError, match=r"fails its CRC check"):
        ckpt.load(latest)

    def nan_snapshot(data: dict) -> None:
        weights = next(iter(data["trainer"]["league"]["snapshots"].values()))
        next(iter(weights.values()))[0] = float("nan")

    def wider_snapshot(data: dict) -> None:
        weights = next(iter(data["trainer"]["league"]["snapshots"].values()))
        name = next(iter(weights))
        weights[name] = torch.zeros(weights[name].shape[0] + 1, *weights[name].shape[1:])

    def negative_width(data: dict) -> None:
        data["policy"]["shape"]["hidden"] = -1

    for change, said in (
        (nan_snapshot, r"league snapshot 'snapshot:1'.*NaN or infinite"),
        (wider_snapshot, r"the training state does not fit this run"),
        (negative_width, r"network shape 'hidden' is -1, outside \[1, 16384\]"),
    ):
        latest.write_bytes(good)
        _rewrite(latest, change)
        with pytest.raises(ckpt.CheckpointError, match=said):
            Trainer(config, resume=run_dir, progress=False)
    latest.write_bytes(good)
    assert resumed(config, run_dir).update == 3
    # torch may save without CRCs (torch.serialization.set_crc32_options(False)): nothing to check, read as is
    torch.serialization.set_crc32_options(False)
    try:
        _rewrite(latest, lambda data: None)
    finally:
        torch.serialization.set_crc32_options(True)
    assert ckpt.load(latest)["trainer"]["update"] == 3


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device (scripts/device_check.sh runs it)")
def test_a_resume_on_cuda_continues_cudas_random_state(tmp_path: Path) -> None:
    """On a GPU the rollout draws its actions from CUDA's generator: the checkpoint keeps its state
    (only the CPU's was kept, so each resumed part replayed the draws the run started with)."""
    config = tiny_config(tmp_path, device="cuda")
    trainer = Trainer(config, progress=False)
    torch.cuda.manual_seed_all(123)
    torch.rand(5, device="cuda")  # the generator moves on from its seed
    state = torch.cuda.get_rng_state(again_device := torch.device("cuda"))
    trainer.started = time.perf_counter()
    trainer.save_checkpoint()
    trainer.writer.close()
    trainer.lock.release()
    again = resumed(config, trainer.run_dir)
    assert again.device.type == "cuda"
    assert torch.equal(torch.cuda.get_rng_state(again_device), state)


def test_a_resume_continues_torchs_cpu_random_state(tmp_path: Path) -> None:
    """The resume restored torch's generator, then built a network to check the league's snapshots
    with, whose initial weights drew from it: the resumed run did not go on from the checkpoint's state."""
    config = tiny_config(tmp_path)
    run_dir = saved_run(config, snapshots=1)
    checkpoint = torch.load(run_dir / "checkpoints" / "latest.pt", map_location="cpu", weights_only=True)
    resumed(config, run_dir)
    assert torch.equal(torch.get_rng_state(), checkpoint["trainer"]["rng"]["torch"])


def test_checkpoint_loading_refuses_text_odd_tensors_and_oversized_shapes_clearly(tmp_path: Path) -> None:
    """From a review: a CSV or text file gave the unpickler's bare KeyError/IndexError; complex weights
    (NaN included) and int weights loaded, sparse ones failed with NotImplementedError; a 2.7 MB file
    whose shape asked for hidden=2048 built a 1 GB network before it was refused; version True passed
    as 1. And one network saved in float16 (a kept policy) and float32 (a checkpoint) had two digests."""
    shipped = ckpt.load(ROOT / "agents" / "checkpoints" / "burako_ppo.pt")
    for name, text in (("csv.pt", b"update,win_rate\n1,0.5\n"), ("text.pt", b"hello world\n")):
        (tmp_path / name).write_bytes(text)
        with pytest.raises(ckpt.CheckpointError, match=r"cannot be read \(corrupt, truncated or not a checkpoint"):
            ckpt.load(tmp_path / name)

    def crafted(change: object) -> Path:
        data = torch.load(ROOT / "agents" / "checkpoints" / "burako_ppo.pt", map_location="cpu", weights_only=True)
        change(data)  # type: ignore[operator]
        path = tmp_path / "crafted.pt"
        torch.save(data, path)
        return path

    first = next(iter(shipped["policy"]["state_dict"]))

    def retyped(make: object) -> object:
        return lambda data: data["policy"]["state_dict"].__setitem__(first, make(data["policy"]["state_dict"][first]))  # type: ignore[operator]

    for make, what in (
        (lambda t: t.to(torch.complex64) * float("nan"), "complex64"),
        (lambda t: t.to(torch.int32), "int32"),
        (lambda t: t.float().to_sparse(), "sparse_coo"),
    ):
        with pytest.raises(ckpt.CheckpointError, match=rf"\[{first!r}\] is a .*{what}.*; weights are dense float"):
            ckpt.load(crafted(retyped(make)))
    with pytest.raises(ckpt.CheckpointError, match="has version True"):
        ckpt.load(crafted(lambda data: data.__setitem__("version", True)))
    bomb = crafted(lambda data: data["policy"]["shape"].update(hidden=2048, slot_embed=1024))
    start = time.perf_counter()
    with pytest.raises(ckpt.CheckpointError, match="weights do not fit the network"):
        ckpt.build_policy(ckpt.load(bomb), str(bomb))
    assert time.perf_counter() - start < 3.0  # 6 s and 1 GB before: the network was built first
    as_float32 = dict(shipped, policy=dict(shipped["policy"]))
    as_float32["policy"]["state_dict"] = {k: v.float() for k, v in shipped["policy"]["state_dict"].items()}
    assert ckpt.weights_digest(as_float32) == ckpt.weights_digest(shipped)
