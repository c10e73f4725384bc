"""The parts training/ppo.py delegates to: the readable-engine rollout
(training/engine_rollout.py) and the shared ``key=value`` parsing
(training/options.py)."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest

from agents.options import parse_options, split_assignment, yaml_value
from training.ppo import PPOConfig, Trainer, load_config

ROOT = Path(__file__).resolve().parents[1]
SMOKE = ROOT / "configs" / "ppo_smoke.yaml"


def test_engine_rollout_collects_whole_hands_with_zero_sum_self_play_rewards(tmp_path: Path) -> None:
    config = PPOConfig(
        run_root=str(tmp_path), rollout="engine", policy_head="full", num_envs=4, batch_size=200,
        minibatch_size=64, update_epochs=1, hidden=16, slot_embed=4, league_baselines=["random"],
        self_play_fraction=1.0, snapshot_every=0, workers=1, torch_threads=1,
    )  # fmt: skip
    trainer = Trainer(config, progress=False)
    try:
        assert trainer.vector is None and len(trainer.rollout.tables) == 4
        episodes = trainer.collect()
        assert sum(ep.actions.size for ep in episodes) >= 200
        by_hand: dict[int, list[float]] = {}
        for ep in episodes:
            n = ep.actions.size
            assert ep.obs.shape[0] == ep.masks.shape[0] == ep.logprobs.size == ep.values.size == n
            assert ep.masks[np.arange(n), ep.actions].all()  # every stored action was legal
            assert ep.masks.sum(axis=1).min() > 1  # forced moves are not stored
            by_hand.setdefault(ep.hand, []).append(ep.reward)
        # self-play: both seats of a hand are learners, with opposite rewards
        assert any(len(r) == 2 for r in by_hand.values())
        assert all(sum(r) == pytest.approx(0.0) for r in by_hand.values() if len(r) == 2)
        stats, rollout_seconds, update_seconds = trainer.collect_and_update()
        assert stats["batch_decisions"] >= 200 and rollout_seconds > 0 and update_seconds > 0
    finally:
        trainer.writer.close()
        trainer.lock.release()


def test_key_value_options_one_way_for_every_command() -> None:
    assert split_assignment(" a.b = 3", "--set") == ("a.b", " 3")
    for bad in ("novalue", "=3", " =3"):
        with pytest.raises(ValueError, match=r"--set: expected key=value"):
            split_assignment(bad, "--set")
    assert yaml_value("[1, 2]", "--set x") == [1, 2] and yaml_value("  ", "--set x") is None
    assert parse_options(["n=1", "n=2", "name=uct"], "--a-opt") == {"n": 2, "name": "uct"}


def test_an_epoch_splits_its_batch_into_near_equal_minibatches() -> None:
    """A batch overshoots batch_size by the hands it finished (16,384 + 145 rows in the reference run):
    minibatches of minibatch_size left one of 145 rows (once 2), which took a full optimizer step on
    advantages normalised over a handful of rows, and whose KL alone decided target_kl. ``equal``
    (the default since 2026-12-06) splits into round(n / size) near-equal minibatches; ``fixed`` is
    the old split, kept by the configs of the published runs."""
    from training.ppo import minibatch_bounds

    def sizes(n: int, size: int, split: str) -> list[int]:
        bounds = minibatch_bounds(n, size, split)
        assert bounds[0][0] == 0 and bounds[-1][1] == n
        assert all(a[1] == b[0] for a, b in itertools.pairwise(bounds))  # every row once, in order
        return [b - a for a, b in bounds]

    assert sizes(16_529, 2048, "fixed") == [2048] * 8 + [145]
    assert sorted(set(sizes(16_529, 2048, "equal"))) == [2066, 2067] and len(sizes(16_529, 2048, "equal")) == 8
    assert len(sizes(4_098, 512, "equal")) == 8 and max(sizes(4_098, 512, "equal")) <= 513
    assert sizes(100, 256, "equal") == [100] and sizes(100, 256, "fixed") == [100]
    assert len(sizes(3_000, 1024, "equal")) == 3  # 2.93 minibatches: 3 of 1,000
    assert load_config(SMOKE).minibatch_split == "equal"
    assert load_config(ROOT / "configs" / "ppo_reference.yaml").minibatch_split == "equal"  # the shipped run's
    with pytest.raises(ValueError, match="minibatch_split must be one of equal, fixed, got 'even'"):
        load_config(SMOKE, ["minibatch_split=even"])
