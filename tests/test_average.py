"""Averaged policies: ``agents.checkpoint.average_policies``, ``burako-average`` and a run's
``average_kept_policies`` (its ``policy.pt`` the mean of its last network and last kept policies)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
import torch

from agents import checkpoint as ckpt
from agents.registry import make_agent
from training import average, checkpoint_curve, ppo
from training.ppo import PPOConfig, Trainer, load_config

ROOT = Path(__file__).resolve().parent.parent
SMOKE = ROOT / "configs" / "ppo_smoke.yaml"


def smoke_values(root: Path, **changes: object) -> dict[str, object]:
    """The smoke config, shortened: random the only baseline in its league and at its end's evaluation
    (the planner's moves on the readable engine were two thirds of a run's time; averaging is not about them)."""
    values = {**load_config(SMOKE).to_dict(), "run_root": str(root), "total_steps": 2500, "bc_teacher": None}
    values.update(eval_every=0, num_envs=8, league_baselines=["random"], eval_opponents=["random"], **changes)
    return values


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A three-update smoke run that keeps every update's policy and averages the last two kept with its last."""
    values = smoke_values(tmp_path_factory.mktemp("runs"), keep_policy_every=1, average_kept_policies=2)
    trainer = Trainer(PPOConfig(**values), progress=False)
    trainer.train()
    assert trainer.update == 3
    return trainer.run_dir


def weights(path: Path) -> dict[str, torch.Tensor]:
    return ckpt.load(path)["policy"]["state_dict"]


def test_a_run_averages_its_last_network_with_its_last_kept_policies(run_dir: Path) -> None:
    kept = [weights(run_dir / "policies" / f"update_00000{n}.pt") for n in (1, 2, 3)]
    last = weights(run_dir / "policy_last.pt")
    # update 3's kept file is the last network itself: it counts once, so updates 1 and 2 join it
    assert all(torch.equal(last[k], kept[2][k]) for k in last)
    averaged = ckpt.load(run_dir / "policy.pt")
    assert averaged["averaged"] == 3
    assert averaged["trained"] == ckpt.load(run_dir / "policy_last.pt")["trained"]
    assert averaged["trained"]["update"] == 3
    for name, tensor in averaged["policy"]["state_dict"].items():
        expected = ((kept[0][name].double() + kept[1][name].double() + last[name].double()) / 3).half()
        assert tensor.dtype == torch.float16 and torch.equal(tensor, expected), name
    assert any(not torch.equal(kept[0][k], last[k]) for k in last)  # the mean is not one of them
    agent = make_agent("policy", checkpoint=str(run_dir / "policy.pt"))
    agent.reset(0)  # an averaged policy plays as any other


def test_the_curve_of_an_averaging_run_ends_at_its_last_network(run_dir: Path) -> None:
    files = checkpoint_curve.curve_sources([str(run_dir)])
    assert run_dir / "policy_last.pt" in files and run_dir / "policy.pt" not in files
    with pytest.raises(ValueError, match=r"policy\.pt is the mean of 3 policies, not one update.s network"):
        checkpoint_curve.curve_points([*files, run_dir / "policy.pt"])


def test_fewer_kept_policies_than_asked_average_those_there_are_and_export_copies_the_mean(tmp_path: Path) -> None:
    sets = {"run_root": str(tmp_path), "total_steps": 2500, "bc_teacher": "null", "eval_every": 0, "num_envs": 8}
    sets.update(league_baselines="[random]", eval_opponents="[random]")  # as smoke_values, through --set
    sets.update(keep_policy_every=2, average_kept_policies=5)
    export = tmp_path / "exported.pt"
    argv = ["--config", str(SMOKE), "--no-progress", "--export", str(export)]
    assert ppo.main(argv + [arg for k, v in sets.items() for arg in ("--set", f"{k}={v}")]) == 0
    (run,) = tmp_path.glob("burako2p__*")
    assert ckpt.load(run / "policy.pt")["averaged"] == 2  # update 2's kept policy and the last network (update 3)
    exported = ckpt.load(export)
    assert exported["averaged"] == 2 and exported["trained"]["update"] == 3
    assert all(torch.equal(exported["policy"]["state_dict"][k], v) for k, v in weights(run / "policy.pt").items())


def test_a_resumed_end_averages_only_this_runs_kept_policies_and_forgets_an_old_last_network(
    run_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = tmp_path / run_dir.name
    shutil.copytree(run_dir, run)
    values = smoke_values(tmp_path, keep_policy_every=1, average_kept_policies=2, eval_games=2)

    def end_again(**changes: object) -> dict[str, Any]:
        trainer = Trainer(PPOConfig(**{**values, **changes}), resume=run, progress=False)
        trainer.train()  # the run is done: it only writes its outputs again
        assert trainer.update == 3
        return ckpt.load(run / "policy.pt")

    kept = run / "policies"
    shutil.copyfile(kept / "update_000001.pt", kept / "update_000009.pt")  # left past the end: not averaged
    assert end_again()["averaged"] == 3
    shutil.copyfile(kept / "update_000001.pt", kept / "update_000002.pt")  # not this run's policy at update 2
    capsys.readouterr()
    data = end_again()
    assert "averaged" not in data and "update_000002.pt is not this run's policy at update 2" in capsys.readouterr().err
    last = weights(run / "policy_last.pt")
    assert all(torch.equal(data["policy"]["state_dict"][k], v) for k, v in last.items())
    data = end_again(average_kept_policies=0)
    assert "averaged" not in data and not (run / "policy_last.pt").exists()
    assert all(torch.equal(data["policy"]["state_dict"][k], v) for k, v in last.items())


def test_burako_average_writes_the_mean(run_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    sources = [run_dir / "policies" / "update_000001.pt", run_dir / "checkpoints" / "final.pt"]
    out = tmp_path / "mean.pt"
    assert average.main([*map(str, sources), "--out", str(out)]) == 0
    assert "the mean of 2 policies, trained to update 3" in capsys.readouterr().out
    data = ckpt.load(out)
    first, final = weights(sources[0]), weights(sources[1])
    assert data["averaged"] == 2 and data["format"] == ckpt.POLICY_FORMAT
    # the training checkpoint is last: its float32 precision is the output's
    for name, tensor in data["policy"]["state_dict"].items():
        assert tensor.dtype == torch.float32
        assert torch.equal(tensor, ((first[name].double() + final[name].double()) / 2).float()), name


def test_bad_averaging_requests_are_refused_and_write_nothing(
    run_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    kept = str(run_dir / "policies" / "update_000001.pt")
    out = tmp_path / "mean.pt"
    other = tmp_path / "other.pt"
    data = ckpt.load(run_dir / "policy_last.pt")
    data["policy"]["shape"] = {**data["policy"]["shape"], "hidden": 32}
    ckpt.save(data, other)
    rules = tmp_path / "rules.pt"
    data = ckpt.load(run_dir / "policy_last.pt")
    data["rules"] = {**data["rules"], "hand_size": 9}
    ckpt.save(data, rules)
    names = tmp_path / "names.pt"
    data = ckpt.load(run_dir / "policy_last.pt")
    data["policy"]["state_dict"]["extra"] = torch.zeros(2)
    ckpt.save(data, names)
    bare = tmp_path / "bare.pt"  # a copy exported without its progress: no same-update check applies
    data = ckpt.load(kept)
    del data["trained"]
    ckpt.save(data, bare)
    corrupt = tmp_path / "corrupt.pt"
    corrupt.write_bytes(b"not a checkpoint")
    final = str(run_dir / "checkpoints" / "final.pt")
    cases = {
        "at least two policies": [kept],
        "is one of the sources": [kept, str(out)],
        "another network": [kept, str(other)],
        "other rules": [kept, str(rules)],
        "do not match": [kept, str(names)],
        "cannot be read": [kept, str(corrupt)],
        "does not exist": [kept, str(tmp_path / "missing.pt")],
        "give the furthest-trained policy last": [final, kept],
        # counted twice: the same file, the same update in two files, a mean taken as one policy
        "given more than once": [kept, kept, final],
        "are the same update (3) of a run": [str(run_dir / "policies" / "update_000003.pt"), final],
        "is already the mean of 3 policies": [kept, str(run_dir / "policy.pt")],
        "holds the same network as": [str(bare), kept, final],
    }
    out.write_bytes(b"an earlier file")
    for why, sources in cases.items():
        with pytest.raises(SystemExit):
            average.main([*sources, "--out", str(out)])
        assert why in capsys.readouterr().err
        assert out.read_bytes() == b"an earlier file"


def test_warm_start_exports_of_two_runs_average(run_dir: Path) -> None:
    """Two runs' policies at update 0 (exported after cloning, before PPO) share their progress, (0, 0),
    and are no "same update of a run": they average."""
    first = ckpt.load(run_dir / "policies" / "update_000001.pt")
    second = ckpt.load(run_dir / "policies" / "update_000002.pt")
    for data in (first, second):
        data["trained"] = {"update": 0, "global_step": 0, "minutes": 1.0}
    assert ckpt.average_policies([first, second], ["a.pt", "b.pt"])["averaged"] == 2


def test_a_malformed_averaged_part_is_refused(run_dir: Path, tmp_path: Path) -> None:
    for bad in (1, 2.0, True, "3"):
        data = ckpt.load(run_dir / "policy.pt")
        data["averaged"] = bad
        path = tmp_path / "bad.pt"
        ckpt.save(data, path)
        with pytest.raises(ckpt.CheckpointError, match="'averaged' must be a whole number"):
            ckpt.load(path)


def test_average_kept_policies_is_checked_with_the_config(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="average_kept_policies needs keep_policy_every > 0"):
        PPOConfig(**smoke_values(tmp_path, average_kept_policies=3))
    with pytest.raises(ValueError, match="average_kept_policies must be >= 0"):
        PPOConfig(**smoke_values(tmp_path, keep_policy_every=1, average_kept_policies=-1))
