"""Averaged policies: ``agents.checkpoint.average_policies``, ``burako-average`` and a run's
``average_kept_policies`` (its ``policy.pt`` the mean of its last network and last kept policies)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from agents import checkpoint as ckpt
from agents.registry import make_agent
from training import average, checkpoint_curve
from training.ppo import PPOConfig, Trainer, load_config

ROOT = Path(__file__).resolve().parent.parent
SMOKE = ROOT / "configs" / "ppo_smoke.yaml"


def smoke_values(root: Path, **changes: object) -> dict[str, object]:
    values = {**load_config(SMOKE).to_dict(), "run_root": str(root), "total_steps": 2500, "bc_teacher": None}
    values.update(eval_every=0, num_envs=8, **changes)
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


def test_fewer_kept_policies_than_asked_average_those_there_are(tmp_path: Path) -> None:
    values = smoke_values(tmp_path, keep_policy_every=2, average_kept_policies=5)
    trainer = Trainer(PPOConfig(**values), progress=False)
    trainer.train()
    assert trainer.update == 3
    assert ckpt.load(trainer.run_dir / "policy.pt")["averaged"] == 2  # update 2's kept policy and the last network


def test_burako_average_writes_the_mean(run_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    sources = [run_dir / "policies" / "update_000001.pt", run_dir / "checkpoints" / "final.pt"]
    out = tmp_path / "mean.pt"
    assert average.main([*map(str, sources), "--out", str(out)]) == 0
    assert "the mean of 2 policies, trained to update 3" in capsys.readouterr().out
    data = ckpt.load(out)
    first, final = weights(sources[0]), weights(sources[1])
    assert data["averaged"] == 2 and data["format"] == ckpt.POLICY_FORMAT
    # the training checkpoint is last: its float32 precision is the output's
    name = next(iter(final))
    assert torch.equal(data["policy"]["state_dict"][name], ((first[name].double() + final[name].double()) / 2).float())


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
    corrupt = tmp_path / "corrupt.pt"
    corrupt.write_bytes(b"not a checkpoint")
    cases = {
        "at least two policies": [kept],
        "is one of the sources": [kept, str(out)],
        "another network": [kept, str(other)],
        "other rules": [kept, str(rules)],
        "cannot be read": [kept, str(corrupt)],
    }
    for why, sources in cases.items():
        target = sources[-1] if why == "is one of the sources" else str(out)
        with pytest.raises(SystemExit):
            average.main([*sources, "--out", target])
        assert why in capsys.readouterr().err
        assert not out.exists()


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
