"""The parts training/ppo.py delegates to: the readable-engine rollout
(training/engine_rollout.py) and the shared ``key=value`` parsing
(training/options.py)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from agents.options import parse_options, split_assignment, yaml_value
from training.ppo import PPOConfig, Trainer


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
