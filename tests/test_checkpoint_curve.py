"""Kept policies (``keep_policy_every``) and ``burako-curve``: a learning curve against an opponent
too costly to play during training, point by point, resumable."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import torch

from agents import checkpoint as ckpt
from burako_env.rules import load_rules
from training import checkpoint_curve
from training.duplicate import AgentSpec
from training.evaluate import evaluate
from training.ppo import PPOConfig, Trainer, load_config

ROOT = Path(__file__).resolve().parent.parent
SMOKE = ROOT / "configs" / "ppo_smoke.yaml"


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A three-update smoke run that keeps its policy every update and evaluates every other one."""
    root = tmp_path_factory.mktemp("runs")
    values = {**load_config(SMOKE).to_dict(), "run_root": str(root), "total_steps": 2500, "bc_teacher": None}
    # random the league's only baseline: the planner's readable moves were half the run, and the curve is not about them
    values.update(eval_every=2, eval_games=4, eval_opponents=["random"], league_baselines=["random"])
    values.update(keep_policy_every=1, num_envs=8)
    trainer = Trainer(PPOConfig(**values), progress=False)
    trainer.train()
    assert trainer.update == 3
    return trainer.run_dir


def test_kept_policies_say_how_far_their_run_had_trained(run_dir: Path) -> None:
    kept = sorted((run_dir / "policies").glob("*.pt"))
    assert [p.name for p in kept] == ["update_000001.pt", "update_000002.pt", "update_000003.pt"]
    steps = []
    for path in kept:
        data = ckpt.load(path)
        progress = ckpt.training_progress(data)
        assert data["format"] == ckpt.POLICY_FORMAT and progress is not None
        assert progress["update"] == int(path.stem.split("_")[1]) and progress["minutes"] > 0
        steps.append(progress["global_step"])
        assert all(t.dtype == torch.float16 for t in data["policy"]["state_dict"].values() if t.is_floating_point())
    assert 0 < steps[0] < steps[1] < steps[2]
    final = ckpt.load(run_dir / "checkpoints" / "final.pt")
    assert ckpt.training_progress(ckpt.load(run_dir / "policy.pt")) == {
        "update": 3,
        "global_step": steps[2],
        "minutes": pytest.approx(final["trainer"]["elapsed"] / 60, abs=0.05),
    }
    assert ckpt.training_progress(final)["global_step"] == steps[2]


def test_a_malformed_trained_part_is_refused(tmp_path: Path, run_dir: Path) -> None:
    data = ckpt.load(run_dir / "policies" / "update_000001.pt")
    nan, negative = (
        {"update": 1, "global_step": 2, "minutes": float("nan")},
        {"update": -1, "global_step": 2, "minutes": 0},
    )
    for bad in (
        {"update": 1, "global_step": 2},
        {"update": "1", "global_step": 2, "minutes": 0.1},
        [1, 2, 3],
        nan,
        negative,
    ):
        path = ckpt.save({**data, "trained": bad}, tmp_path / "bad.pt")
        with pytest.raises(ckpt.CheckpointError, match=r"'trained' must map exactly \['global_step', 'minutes'"):
            ckpt.load(path)
    del data["trained"]
    bare = ckpt.save(data, tmp_path / "bare.pt")
    assert ckpt.training_progress(ckpt.load(bare)) is None
    with pytest.raises(ValueError, match=r"bare.pt does not say how far its run had trained"):
        checkpoint_curve.curve_points([bare])


def test_the_curve_plays_each_kept_policy_on_the_same_deals_and_resumes(
    tmp_path: Path, run_dir: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    curve = tmp_path / "curve.json"
    args = [str(run_dir), "--b", "random", "--games", "4", "--seed", "7", "--json", str(curve), "--no-progress"]
    assert checkpoint_curve.main([*args, "--plot", str(tmp_path / "curve.png"), "--with-training-evals"]) == 0
    data = json.loads(curve.read_text())
    assert {k: data[k] for k in checkpoint_curve.CURVE_KEYS} == {
        "b": "random", "games": 4, "seed": 7, "rules": "burako", "num_players": 2,
    }  # fmt: skip
    # policy.pt is update 3's policy again: one point per update, in training order
    assert [(p["update"], Path(p["checkpoint"]).name) for p in data["points"]] == [
        (1, "update_000001.pt"), (2, "update_000002.pt"), (3, "update_000003.pt"),
    ]  # fmt: skip
    second = data["points"][1]
    direct = evaluate(
        AgentSpec.of("policy", {"checkpoint": second["checkpoint"]}), AgentSpec.of("random"), games=4, seed=7
    )
    assert second["random"] == direct.summary.curve_point()
    assert (tmp_path / "curve.png").stat().st_size > 5000
    table = capsys.readouterr().out
    assert "policy vs random" in table and table.count("\n") >= 4

    # a kill after two points: the same command plays the third only
    data["points"] = data["points"][:2]
    curve.write_text(json.dumps(data))
    played: list[str] = []
    real = checkpoint_curve.evaluate

    def counting(a: AgentSpec, *rest: Any, **kw: Any) -> Any:
        played.append(dict(a.options)["checkpoint"])
        return real(a, *rest, **kw)

    monkeypatch.setattr(checkpoint_curve, "evaluate", counting)
    histories: list[list[dict[str, Any]]] = []
    monkeypatch.setattr(checkpoint_curve, "plot_learning_curve", lambda history, *a, **k: histories.append(history))
    assert checkpoint_curve.main([*args, "--plot", str(tmp_path / "again.png"), "--with-training-evals"]) == 0
    assert [Path(p).name for p in played] == ["update_000003.pt"]
    again = json.loads(curve.read_text())
    assert again["points"][:2] == data["points"] and len(again["points"]) == 3
    # the run's own evaluations (updates 2 and 3) are drawn beside, under their own label
    (history,) = histories
    assert sorted(r["update"] for r in history if "random (training evals)" in r) == [2, 3]
    assert sorted(r["update"] for r in history if "random" in r) == [1, 2, 3]

    # one kept policy given alone: nothing is played, the table shows it, the file keeps all three points
    played.clear()
    capsys.readouterr()
    first = str(run_dir / "policies" / "update_000001.pt")
    assert checkpoint_curve.main([first, *args[1:]]) == 0
    assert played == [] and json.loads(curve.read_text())["points"] == again["points"]
    rows = [line for line in capsys.readouterr().out.splitlines() if line.lstrip()[:1].isdigit()]
    assert len(rows) == 1 and rows[0].split()[0] == "1"


def test_the_curve_plays_on_the_rules_the_run_was_trained_on(
    tmp_path: Path, run_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every preset shares one layout, so a policy of a burako_br run seated at burako's table without
    a word: ``--rules`` defaulted to burako. The run's own rules are now the default."""
    data = ckpt.load(run_dir / "policies" / "update_000001.pt")
    brazilian = ckpt.save({**data, "rules": load_rules("burako_br").to_dict()}, tmp_path / "br.pt")
    seen: list[tuple[str, int]] = []

    class Played(Exception):
        pass

    def record(*args: Any, rules: Any, num_players: int, **kwargs: Any) -> None:
        seen.append((rules.name, num_players))
        raise Played  # the table the games would be played at is what is checked

    monkeypatch.setattr(checkpoint_curve, "evaluate", record)
    args = [str(brazilian), "--b", "random", "--games", "2", "--no-progress"]
    for extra, table in (([], ("burako_br", 2)), (["--rules", "burako"], ("burako", 2))):
        with pytest.raises(Played):
            checkpoint_curve.main([*args, *extra])
        assert seen.pop() == table


def test_a_kept_policy_rewritten_since_its_point_is_played_again(
    tmp_path: Path, run_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run resumed after a kill keeps the policies of the updates it replays again, under the same
    names and update numbers: the curve file's point of the old file (another SHA-256) is played
    again and replaced, as is a point written before points named their file's SHA-256."""
    run = tmp_path / "run"
    shutil.copytree(run_dir / "policies", run / "policies")
    curve = tmp_path / "curve.json"
    args = [str(run), "--b", "random", "--games", "2", "--seed", "7", "--json", str(curve), "--no-progress"]
    assert checkpoint_curve.main(args) == 0
    before = json.loads(curve.read_text())["points"]
    kept = run / "policies" / "update_000002.pt"
    assert before[1]["sha256"] == hashlib.sha256(kept.read_bytes()).hexdigest()
    data = ckpt.load(kept)  # the replayed update: same progress, other weights
    bias = next(k for k in data["policy"]["state_dict"] if k.endswith("bias"))
    data["policy"]["state_dict"][bias] = data["policy"]["state_dict"][bias] + 0.25
    ckpt.save(data, kept)
    played: list[str] = []
    real = checkpoint_curve.evaluate

    def counting(a: AgentSpec, *rest: Any, **kw: Any) -> Any:
        played.append(Path(dict(a.options)["checkpoint"]).name)
        return real(a, *rest, **kw)

    monkeypatch.setattr(checkpoint_curve, "evaluate", counting)
    assert checkpoint_curve.main(args) == 0
    assert played == ["update_000002.pt"]
    after = json.loads(curve.read_text())["points"]
    assert len(after) == 3 and after[0] == before[0] and after[2] == before[2]
    assert after[1]["sha256"] == hashlib.sha256(kept.read_bytes()).hexdigest() != before[1]["sha256"]
    # the rewritten file came with another step (a replayed update need not make as many decisions): the
    # point of its old step leaves the file with it, not kept beside the new one
    stale = json.loads(curve.read_text())
    stale["points"][1]["step"] -= 7
    curve.write_text(json.dumps(stale))
    played.clear()
    assert checkpoint_curve.main(args) == 0 and played == ["update_000002.pt"]
    assert json.loads(curve.read_text())["points"] == after
    # a curve file from before points named their file's SHA-256: its points cannot be checked, played again
    old = json.loads(curve.read_text())
    del old["points"][0]["sha256"]
    curve.write_text(json.dumps(old))
    played.clear()
    assert checkpoint_curve.main(args) == 0 and played == ["update_000001.pt"]
    assert json.loads(curve.read_text())["points"] == after


def test_bad_curve_requests_are_refused_before_any_game(
    tmp_path: Path, run_dir: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(checkpoint_curve, "evaluate", lambda *a, **k: pytest.fail("a game was played"))
    curve = tmp_path / "curve.json"
    curve.write_text(
        json.dumps({"b": "random", "games": 4, "seed": 8, "rules": "burako", "num_players": 2, "points": []})
    )
    kept_one = str(run_dir / "policies" / "update_000001.pt")
    cases = [
        ([str(run_dir), "--b", "random", "--games", "4", "--seed", "7", "--json", str(curve)], "holds a curve with"),
        ([str(tmp_path / "nowhere")], "is neither a run folder nor a checkpoint file"),
        ([str(tmp_path)], "has no kept policies"),
        ([str(run_dir), "--b", "ismcts", "--b-opt", "simulations=0"], "simulations"),
        ([kept_one, "--with-training-evals", "--plot", str(tmp_path / "c.png")], "needs a training checkpoint"),
        ([str(run_dir), "--with-training-evals"], "give --plot too"),  # it was silently ignored
        ([str(run_dir), "--games", "5"], "--games must be a positive even number"),
        ([str(run_dir), "--workers", "0"], "--workers >= 1"),
        ([str(run_dir), "--players", "4"], "layout"),
    ]
    for argv, message in cases:
        if "--b" not in argv:
            argv = [*argv, "--b", "random"]
        with pytest.raises(SystemExit):
            checkpoint_curve.main([*argv, "--no-progress"])
        assert message in capsys.readouterr().err


def test_a_curve_takes_one_runs_networks(tmp_path: Path, run_dir: Path) -> None:
    """Policies of two runs made one curve, and a second network of the same update was dropped
    silently (points were keyed by update and decisions only)."""
    kept = run_dir / "policies" / "update_000001.pt"
    other_run = ckpt.load(kept)
    other_run["config"]["seed"] = 99
    torch.save(other_run, tmp_path / "other_run.pt")
    with pytest.raises(ValueError, match="is not of the run of"):
        checkpoint_curve.curve_points([kept, tmp_path / "other_run.pt"])
    changed = ckpt.load(kept)
    first = next(iter(changed["policy"]["state_dict"]))
    changed["policy"]["state_dict"][first] = changed["policy"]["state_dict"][first] + 1.0
    torch.save(changed, tmp_path / "changed.pt")
    with pytest.raises(ValueError, match="other networks of the same update 1"):
        checkpoint_curve.curve_points([kept, tmp_path / "changed.pt"])
    same = ckpt.load(kept)
    torch.save(same, tmp_path / "same.pt")  # the same network in another file counts once
    assert len(checkpoint_curve.curve_points([kept, tmp_path / "same.pt"])) == 1
