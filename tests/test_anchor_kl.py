"""``anchor_kl_coef``: PPO kept near the network it started from by KL(anchor || policy) over each
decision's legal moves; the anchor is frozen and kept in the run folder (``anchor.pt``)."""

from __future__ import annotations

import copy
import time
from pathlib import Path

import numpy as np
import pytest
import torch
from conftest import unforced_positions

from agents import checkpoint as ckpt
from agents.network import NetworkShape, PolicyNet, masked_logits
from burako_env.rules import load_rules
from training.network import LegalIndex, anchor_kl, evaluate_actions, legal_figures
from training.ppo import ANCHOR_FILE, PPOConfig, Trainer


def positions(count: int = 40) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    obs, masks, actions = unforced_positions(count)
    return torch.from_numpy(obs), torch.from_numpy(masks), torch.from_numpy(actions)


def small_net(seed: int) -> PolicyNet:
    rules = load_rules("burako")
    torch.manual_seed(seed)
    net = PolicyNet(NetworkShape.for_env(2, rules, hidden=32, slot_embed=4), rules)
    torch.nn.init.normal_(net.policy_head.weight, std=0.5)  # far from the near-uniform start
    return net


def test_anchor_kl_is_the_kl_of_the_masked_distributions_and_moves_the_policy_only() -> None:
    obs, masks, actions = positions()
    policy, anchor = small_net(0), small_net(1)
    pairs = LegalIndex.of_mask(masks).pairs(torch.arange(len(actions)))
    logp, entropy, dist = legal_figures(policy, policy.features(obs)[0], masks, actions, pairs)
    # the first two are evaluate_actions' own figures
    for mine, theirs in zip((logp, entropy), evaluate_actions(policy, obs, masks, actions), strict=False):
        assert torch.allclose(mine, theirs, atol=1e-6)
    kl = anchor_kl(anchor, obs, masks, pairs, dist)
    # the same divergence through all 3,519 logits, masked
    p_log = torch.log_softmax(masked_logits(policy(obs)[0], masks), dim=1)
    a_log = torch.log_softmax(masked_logits(anchor(obs)[0], masks), dim=1)
    expected = torch.where(masks, a_log.exp() * (a_log - p_log), torch.zeros_like(p_log)).sum(1)
    assert kl.shape == (len(actions),) and torch.allclose(kl, expected, atol=1e-5)
    assert (kl > -1e-6).all() and kl.mean() > 0.01  # never below 0; two different networks disagree
    kl.mean().backward()
    assert policy.policy_head.weight.grad is not None and policy.policy_head.weight.grad.abs().sum() > 0
    assert all(p.grad is None for p in anchor.parameters())
    # a network is its own anchor at no cost
    _, _, same = legal_figures(anchor, anchor.features(obs)[0], masks, actions, pairs)
    own = anchor_kl(copy.deepcopy(anchor), obs, masks, pairs, same)
    assert torch.allclose(own, torch.zeros(len(actions)), atol=1e-6)


def test_anchor_kl_coef_is_checked_with_the_config() -> None:
    with pytest.raises(ValueError, match=r"anchor_kl_coef must be >= 0, got -0\.1"):
        PPOConfig(bc_teacher="planner", anchor_kl_coef=-0.1)
    with pytest.raises(ValueError, match="anchor_kl_coef needs a warm start to stay near"):
        PPOConfig(bc_teacher=None, anchor_kl_coef=0.1)
    with pytest.raises(ValueError, match="anchor_kl_coef needs policy_head: legal, not 'full'"):
        PPOConfig(bc_teacher="planner", anchor_kl_coef=0.1, policy_head="full")
    # scheduled: each listed update's value is checked when the config is read
    with pytest.raises(ValueError, match="at update 100: anchor_kl_coef needs a warm start"):
        PPOConfig(bc_teacher=None, schedules={"anchor_kl_coef": [[100, 0.2]]})
    config = PPOConfig(bc_teacher="planner", schedules={"anchor_kl_coef": [[0, 0.3], [500, 0.0, "linear"]]})
    assert config.anchor_kl_coef == 0.0


def test_a_run_keeps_its_start_as_the_anchor_trains_toward_it_and_resumes_with_it(tmp_path: Path) -> None:
    """The network PPO starts from (here init_checkpoint's) is written to anchor.pt before the first
    update and stays as it is; the loss logs the divergence; a resumed run reads the same anchor, and a
    run under way without one is refused by name."""
    start = tmp_path / "start.pt"
    net = small_net(3)
    ckpt.save(ckpt.policy_payload(net, load_rules("burako"), {}, half=False), start)
    values = dict(
        run_root=str(tmp_path / "runs"), bc_teacher=None, init_checkpoint=str(start), hidden=32, slot_embed=4,
        num_envs=8, batch_size=300, minibatch_size=128, update_epochs=2, total_steps=900, eval_every=0,
        eval_games=2, eval_opponents=["random"], league_baselines=["random"], snapshot_every=0,
        checkpoint_every=1, anchor_kl_coef=0.5, learning_rate=3e-3, workers=1,
    )  # fmt: skip
    trainer = Trainer(PPOConfig(**values), progress=False)
    trainer.train()
    assert trainer.update >= 2
    anchor = ckpt.load(trainer.run_dir / ANCHOR_FILE)["policy"]["state_dict"]
    for name, tensor in net.state_dict().items():
        assert torch.equal(anchor[name], tensor), name
    assert any(not torch.equal(trainer.net.state_dict()[k], v) for k, v in net.state_dict().items())
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(str(trainer.run_dir))
    events.Reload()
    logged = [e.value for e in events.Scalars("losses/anchor_kl")]
    assert len(logged) == trainer.update and all(np.isfinite(logged)) and logged[-1] > 0
    # resumed (a longer run): the anchor is read back, not the resumed weights
    resumed = Trainer(PPOConfig(**{**values, "total_steps": 1200}), resume=trainer.run_dir, progress=False)
    resumed.train()
    assert resumed.anchor is not None and resumed.update > trainer.update
    for name, tensor in net.state_dict().items():
        assert torch.equal(resumed.anchor.state_dict()[name], tensor), name
    (trainer.run_dir / ANCHOR_FILE).unlink()
    with pytest.raises(ckpt.CheckpointError, match=r"anchor\.pt is missing: anchor_kl_coef needs the network"):
        Trainer(PPOConfig(**{**values, "total_steps": 1500}), resume=trainer.run_dir, progress=False)


def test_the_divergence_in_the_loss_keeps_an_update_nearer_its_anchor(tmp_path: Path) -> None:
    """The same batch, the same start, the same minibatches: an update with a large ``anchor_kl_coef``
    ends nearer the anchor than one without (the term enters the loss, with the sign that pulls)."""
    start = tmp_path / "start.pt"
    ckpt.save(ckpt.policy_payload(small_net(4), load_rules("burako"), {}, half=False), start)
    values = dict(
        run_root=str(tmp_path / "runs"), bc_teacher=None, init_checkpoint=str(start), hidden=32, slot_embed=4,
        num_envs=8, batch_size=600, minibatch_size=100, update_epochs=3, eval_every=0, league_baselines=["random"],
        snapshot_every=0, anchor_kl_coef=20.0, learning_rate=1e-2, target_kl=None,
    )  # fmt: skip
    trainer = Trainer(PPOConfig(**values), progress=False)
    trainer.started = time.perf_counter()  # as train() sets it: the anchor's file says when it was made
    trainer.anchor = trainer._anchor()
    episodes = trainer.collect()
    obs, masks, actions = positions(60)
    pairs = LegalIndex.of_mask(masks).pairs(torch.arange(len(actions)))
    weights = copy.deepcopy(trainer.net.state_dict())
    optimiser = copy.deepcopy(trainer.optimizer.state_dict())
    generator = copy.deepcopy(trainer.rng)
    divergence = {}
    for coef in (20.0, 0.0):
        trainer.net.load_state_dict(weights)
        trainer.optimizer.load_state_dict(optimiser)
        trainer.rng = copy.deepcopy(generator)
        trainer.live_cfg = PPOConfig(**{**values, "anchor_kl_coef": coef})
        stats = trainer._ppo_update(episodes)
        assert ("anchor_kl" in stats) == (coef > 0)
        with torch.no_grad():
            _, _, dist = legal_figures(trainer.net, trainer.net.features(obs)[0], masks, actions, pairs)
            divergence[coef] = anchor_kl(trainer.anchor, obs, masks, pairs, dist).mean().item()
    trainer.writer.close()
    trainer.lock.release()
    assert divergence[0.0] > 0.005 and divergence[20.0] < 0.5 * divergence[0.0], divergence


def test_the_anchor_is_the_clone_and_a_resume_before_the_first_update_keeps_it(tmp_path: Path) -> None:
    """With cloning, the anchor is the clone (not the network before it); a run stopped after cloning
    and resumed before its first update writes the same anchor again."""

    class Stop(Exception):
        pass

    def stop() -> None:
        raise Stop

    def until_the_first_update(trainer: Trainer) -> dict[str, torch.Tensor]:
        """Train up to the first PPO update (cloning, the anchor), stop there: the anchor written."""
        trainer.collect_and_update = stop  # type: ignore[method-assign]
        with pytest.raises(Stop):
            trainer.train()
        trainer.writer.close()
        trainer.lock.release()
        return ckpt.load(trainer.run_dir / ANCHOR_FILE)["policy"]["state_dict"]

    values = dict(
        run_root=str(tmp_path), bc_teacher="planner", bc_games=4, bc_epochs=1, workers=1, hidden=32, slot_embed=4,
        num_envs=4, eval_every=0, league_baselines=["random"], snapshot_every=0, anchor_kl_coef=0.5,
    )  # fmt: skip
    trainer = Trainer(PPOConfig(**values), progress=False)
    before = copy.deepcopy(trainer.net.state_dict())
    anchor = until_the_first_update(trainer)
    assert all(torch.equal(anchor[k], v) for k, v in trainer.net.state_dict().items())
    assert not all(torch.equal(anchor[k], v) for k, v in before.items())
    resumed = Trainer(PPOConfig(**values), resume=trainer.run_dir, progress=False)
    assert resumed.update == 0 and resumed.bc_done
    again = until_the_first_update(resumed)
    assert all(torch.equal(again[k], v) for k, v in anchor.items())
