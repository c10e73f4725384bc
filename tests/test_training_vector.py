"""Training on the compiled core (issue 15): the batched rollout, the
legal-action policy head, schedules, devices and resuming after a kill."""

from __future__ import annotations

import copy
import dataclasses
import math
import os
import platform
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from conftest import episodes_by_hand, kill_after_first_checkpoint

from agents import checkpoint as ckpt
from agents.network import CompactRows, NetworkShape, PolicyNet, SparseRows
from burako_env.engine import GameState
from burako_env.melds import MELD_FEATURE_SIZE, MELD_PRESENT
from burako_env.observation import Observer
from burako_env.rules import load_rules
from burako_env.vector import BurakoVectorEnv, sample_legal_actions
from training import memory
from training import ppo as ppo_module
from training.league import SELF
from training.memory import keep_freed_memory
from training.network import (
    LegalIndex,
    evaluate_actions,
    evaluate_actions_dense,
    legal_log_probs,
    sample_actions,
)
from training.ppo import (
    PPOConfig,
    Trainer,
    fused_adam,
    hand_reward,
    load_config,
    minibatch_bounds,
    native_bfloat16,
    resolve_device,
    resolve_precision,
)
from training.resume import load_optimizer_state
from training.rollout import DecisionStore, StoredCollect, StoredEpisode, episode_batch
from training.schedule import schedule_problems, value_at

ROOT = Path(__file__).resolve().parent.parent
SMOKE = ROOT / "configs" / "ppo_smoke.yaml"


def vector_config(tmp_path: Path, **overrides: object) -> PPOConfig:
    cfg = load_config(SMOKE)
    values = {
        **cfg.to_dict(),
        "run_root": str(tmp_path),
        "total_steps": 600,
        "bc_teacher": None,
        "eval_games": 4,
        "eval_every": 0,
        "eval_opponents": ["random"],
        "num_envs": 6,
        "batch_size": 300,
        "rollout": "vector",
        "env_threads": 1,
    }
    values.update(overrides)
    return PPOConfig(**values)


def real_positions(n: int, num_players: int = 2, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """Observations and masks of random-play positions from the batched env."""
    env = BurakoVectorEnv(64, num_players=num_players, num_threads=1)
    obs, masks, _ = env.reset(seed=seed)
    rng = np.random.default_rng(seed)
    observations, legal = [], []
    while sum(len(o) for o in observations) < n:
        observations.append(obs.copy())
        legal.append(masks.astype(bool))
        obs, masks, *_ = env.step(sample_legal_actions(masks, rng))
    return torch.from_numpy(np.concatenate(observations)[:n]), torch.from_numpy(np.concatenate(legal)[:n])


# ---------------------------------------------------------------------- the legal-action head
def test_legal_action_head_samples_only_legal_actions_and_matches_the_full_head() -> None:
    """E3 for the learner: Gumbel-max over the legal actions never yields an
    illegal one; log-probabilities and entropies equal the full-width head's."""
    rules = load_rules("burako")
    torch.manual_seed(0)
    net = PolicyNet(NetworkShape.for_env(2, rules, hidden=32, slot_embed=4), rules)
    obs, mask = real_positions(300)
    generator = torch.Generator().manual_seed(1)
    for _ in range(10):
        actions, logp, _ = sample_actions(net, obs, mask, generator=generator)
        assert bool(mask[torch.arange(len(mask)), actions].all())
    logp_dense, entropy_dense, _ = evaluate_actions_dense(net, obs, mask, actions)
    logp_legal, entropy_legal, _ = evaluate_actions(net, obs, mask, actions)
    assert torch.allclose(logp, logp_dense, atol=1e-5)
    assert torch.allclose(logp_legal, logp_dense, atol=1e-5)
    assert torch.allclose(entropy_legal, entropy_dense, atol=1e-4)
    # the batch-wide legal index cut per minibatch gives the same pairs as the minibatch's mask
    idx = torch.randperm(len(mask), generator=generator)[:97]
    pairs = LegalIndex.of_mask(mask).pairs(idx)
    assert all(torch.equal(a, b) for a, b in zip(pairs, mask[idx].nonzero(as_tuple=True), strict=True))
    # the same pairs read straight from the rollout store's bit-packed masks (no unpacking)
    from_bits = LegalIndex.of_packed(np.packbits(mask.numpy(), axis=1))
    for name in ("counts", "cols", "starts"):
        assert torch.equal(getattr(from_bits, name), getattr(LegalIndex.of_mask(mask), name))
    assert all(torch.equal(a, b) for a, b in zip(from_bits.pairs(idx), pairs, strict=True))
    odd = mask[:5].clone()
    odd[[0, -1]] = False  # rows with no legal action, the last one too
    odd[1, [0, 7, 8, odd.shape[1] - 1]] = True  # a byte's first and last bits, the last action
    from_bits = LegalIndex.of_packed(np.packbits(odd.numpy(), axis=1), torch.device("cpu"))
    for name in ("counts", "cols", "starts"):
        assert torch.equal(getattr(from_bits, name), getattr(LegalIndex.of_mask(odd), name))
    assert from_bits.counts.tolist()[0] == from_bits.counts.tolist()[-1] == 0
    logp_cut, _, _ = evaluate_actions(net, obs[idx], mask[idx], actions[idx], pairs)
    assert torch.allclose(logp_cut, logp_dense[idx], atol=1e-5)
    # gradients agree too: the same parameters, the same distribution
    grads = []
    for fn in (evaluate_actions, evaluate_actions_dense):
        net.zero_grad()
        lp, ent, values = fn(net, obs, mask, actions)
        (lp.mean() + 0.1 * ent.mean() + values.mean()).backward()
        grads.append(net.policy_head.weight.grad.clone())
    assert torch.allclose(grads[0], grads[1], atol=1e-6)


def test_draws_without_gradients_run_in_one_compiled_loop_and_equal_the_torch_ops(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A rollout's draw (no gradients, float32 on the CPU) is one compiled loop
    (``agents.pair_kernel.fused_sample``): from the same generator it draws the same actions as
    the torch ops, with the same log-probabilities to float rounding, and leaves the generator where
    they leave it; flat and peaked policies alike. A row with no legal action is an error."""
    import training.network as training_network

    rules = load_rules("burako")
    torch.manual_seed(0)
    net = PolicyNet(NetworkShape.for_env(2, rules, hidden=32, slot_embed=4), rules)
    obs, mask = real_positions(600, seed=4)
    calls = []
    fused = training_network.fused_sample
    monkeypatch.setattr(training_network, "fused_sample", lambda *a: calls.append(1) or fused(*a))
    for scale in (1.0, 300.0):  # near-uniform, then near-greedy
        with torch.no_grad():
            net.policy_head.weight.mul_(scale)
        ours, torchs = torch.Generator().manual_seed(9), torch.Generator().manual_seed(9)
        for _ in range(3):
            with torch.no_grad():
                actions, logp, values = sample_actions(net, obs, mask, generator=ours)
            expected = sample_actions(net, obs, mask, generator=torchs)  # gradients on: the torch ops
            assert torch.equal(actions, expected[0])
            assert torch.allclose(logp, expected[1].detach(), atol=1e-5)
            assert torch.equal(values, expected[2].detach())
        assert torch.equal(torch.rand(4, generator=ours), torch.rand(4, generator=torchs))
    assert len(calls) == 6
    empty = mask[:3].clone()
    empty[1] = False
    with pytest.raises(ValueError, match="row 1 has no legal action, or NaN"), torch.no_grad():
        sample_actions(net, obs[:3], empty)


@pytest.mark.parametrize("value_torso", [False, True])
def test_snapshots_sample_in_one_pass_each_from_its_own_network(tmp_path: Path, value_torso: bool) -> None:
    """The rollout samples every snapshot's rows in one pass (``Trainer.snapshot_groups``):
    each row's legal log-probabilities are its own snapshot's, whatever the order and
    grouping of the snapshots in the step, and every sampled move is legal (E3); the
    stacked heads are rebuilt when the cached snapshots change, not every step."""
    trainer = Trainer(vector_config(tmp_path, max_snapshots=3, value_torso=value_torso), progress=False)
    try:
        for number in (1, 2, 3):  # three different networks
            with torch.no_grad():
                for parameter in trainer.net.parameters():
                    parameter.add_(0.05 * torch.randn_like(parameter))
            trainer.league.add_snapshot(number, trainer.net.state_dict())
        names = list(trainer.league.snapshots)
        obs, mask = (t.to(trainer.device) for t in real_positions(60))  # the networks' device (CUDA there)
        for order, sizes in (([2, 0, 1], [7, 20, 33]), ([1, 2], [30, 30]), ([0], [60])):
            chosen = [names[i] for i in order]
            groups = trainer.snapshot_groups(chosen, sizes)
            h, _ = groups.features(obs)
            _, _, logp = legal_log_probs(groups, h, mask)
            start = 0
            own = []
            for name, size in zip(chosen, sizes, strict=True):
                net = trainer._snapshot_net(name)
                own.append(
                    legal_log_probs(net, net.features(obs[start : start + size])[0], mask[start : start + size])[2]
                )
                start += size
            assert torch.allclose(logp, torch.cat(own), atol=1e-5)
            for _ in range(5):
                actions, _, _ = sample_actions(groups, obs, mask)
                assert bool(mask[torch.arange(len(mask), device=mask.device), actions].all())
            # a rollout's draw (no gradients: one compiled loop on the CPU) reads each row's own head too
            ours, torchs = (torch.Generator(device=obs.device).manual_seed(2) for _ in range(2))
            with torch.no_grad():
                drawn = sample_actions(groups, obs, mask, generator=ours)
            expected = sample_actions(groups, obs, mask, generator=torchs)
            assert torch.equal(drawn[0], expected[0]) and torch.allclose(drawn[1], expected[1].detach(), atol=1e-5)
        stack = trainer._snapshot_stack
        trainer.snapshot_groups(names[:1], [60])
        assert trainer._snapshot_stack is stack  # same snapshots cached: the stack is reused
        trainer.league.add_snapshot(4, trainer.net.state_dict())  # the oldest leaves the league
        trainer.rollout.opponent = [SELF] * len(trainer.rollout.opponent)  # and no table plays it
        trainer.snapshot_groups([list(trainer.league.snapshots)[-1]], [60])
        assert trainer._snapshot_stack is not stack
        assert set(trainer._snapshot_stack[0]) == set(trainer.league.snapshots)
    finally:
        trainer.close()


def assert_same_first_layer(net: PolicyNet, rows: CompactRows | SparseRows, dense: torch.Tensor, outputs: int) -> None:
    """Torso outputs, values and every parameter's gradient (``outputs`` tensors in all) of ``rows`` equal
    those of the same rows ``dense``, to float rounding."""
    results = []
    for batch in (rows, dense):
        net.zero_grad()
        h, values = net.features(batch)
        (h.square().sum() + values.sum()).backward()
        results.append([h, values] + [p.grad.clone() for p in net.parameters() if p.grad is not None])
    assert len(results[0]) == len(results[1]) == outputs
    for a, b in zip(*results, strict=True):
        assert torch.allclose(a, b, rtol=1e-4, atol=1e-5)


def expand(net: PolicyNet, rows: CompactRows | SparseRows) -> torch.Tensor:
    """Full observation rows from compact or sparse ones: the dropped slots and columns as zeros."""
    full = torch.zeros(len(rows), net.shape.obs_size)
    rest = torch.cat([torch.arange(start, start + size) for start, size in net.rest_runs])
    if isinstance(rows, SparseRows):
        slot_offsets = torch.cat([start + 60 * torch.arange(n) for start, n in net.slot_blocks])
        columns = slot_offsets[rows.slot_index].unsqueeze(1) + torch.arange(60)
        full[rows.slot_rows.unsqueeze(1), columns] = rows.slot_features
        full[rows.rest_rows, rest[rows.rest_cols]] = rows.rest_values
        return full
    for (start, _), part in zip(net.slot_blocks, rows.slots, strict=True):
        full[:, start : start + part.shape[1]] = part
    full[:, rest[rows.rest_cols]] = rows.rest
    return full


@pytest.mark.parametrize(
    ("reuse_buffer", "split", "compact", "sparse"),
    [
        (True, "equal", True, False),
        (True, "equal", True, True),
        (True, "equal", False, False),
        (False, "equal", False, False),
        (True, "fixed", True, False),
    ],
)
def test_every_minibatch_trains_on_its_own_rows_of_the_batch(
    tmp_path: Path, reuse_buffer: bool, split: str, compact: bool, sparse: bool
) -> None:
    """The update gathers each minibatch into one reused buffer (or, as before issue 15, a fresh
    tensor): every minibatch, the short last one included, must see exactly the batch's rows the
    epoch's permutation picked for it. In float32 on the CPU the reused buffer gathers them straight
    from the decision store's rows (no gathered copy of the whole batch first); with
    ``compact_batches`` from the batch's compact rows, which must hold every input that is not zero."""
    cfg = vector_config(tmp_path, self_play_fraction=1.0, league_baselines=[], snapshot_every=0, precision="float32")
    trainer = Trainer(cfg, progress=False)
    trainer.reuse_minibatch_buffer = reuse_buffer
    trainer.compact_batches = compact
    trainer.sparse_batches = sparse
    episodes = trainer.collect()
    obs = torch.from_numpy(episode_batch(episodes)["obs"])
    n = obs.shape[0]
    size = 70 if n % 70 else 71  # a short last minibatch
    # every epoch runs (no target_kl); "fixed": minibatches of `size` and a short last one, "equal":
    # round(n / size) near-equal ones (training.ppo.minibatch_bounds)
    trainer.live_cfg = dataclasses.replace(trainer.cfg, target_kl=None, minibatch_size=size, minibatch_split=split)
    bounds = minibatch_bounds(n, size, split)
    assert (bounds[-1][1] - bounds[-1][0] < size) == (split == "fixed")
    rng = np.random.default_rng()
    rng.bit_generator.state = copy.deepcopy(trainer.rng.bit_generator.state)
    expected = [
        obs[perm[start:stop]]
        for perm in (rng.permutation(n) for _ in range(cfg.update_epochs))
        for start, stop in bounds
    ]
    seen: list[torch.Tensor] = []
    features = trainer.net.features

    def record(batch: torch.Tensor | CompactRows | SparseRows, *rest: Any) -> tuple[torch.Tensor, torch.Tensor]:
        assert isinstance(batch, CompactRows) == (compact and reuse_buffer and not sparse)
        assert isinstance(batch, SparseRows) == sparse
        seen.append(expand(trainer.net, batch) if isinstance(batch, CompactRows | SparseRows) else batch.clone())
        return features(batch, *rest)

    trainer.net.features = record  # type: ignore[method-assign]
    trainer._ppo_update(episodes)
    assert len(seen) == len(expected)
    for got, want in zip(seen, expected, strict=True):
        assert torch.equal(got.cpu(), want)


@pytest.mark.parametrize(("variable", "attribute"), [("COMPACT", "compact_batches"), ("SPARSE", "sparse_batches")])
def test_the_environment_switch_keeps_the_full_rows(variable: str, attribute: str) -> None:
    """``BURAKO_COMPACT_BATCHES=0`` gathers minibatches from the full rows, as updates before compact
    rows did (their float rounding, so a run made before can be repeated); any other value compacts.
    ``BURAKO_SPARSE_BATCHES=0`` keeps the compact rows where sparse ones would serve."""
    code = f"from training.ppo import Trainer; print(Trainer.{attribute})"
    for value, expected in (("0", "False"), ("1", "True")):
        env = {**os.environ, f"BURAKO_{variable}_BATCHES": value}
        result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
        assert result.stdout.strip() == expected


def test_an_update_on_compact_rows_learns_what_the_full_rows_teach(tmp_path: Path) -> None:
    """``compact_batches`` changes how an update reads its batch, not what it learns: from the same
    state, the losses and the weights after an update equal the full rows' to float rounding."""
    cfg = vector_config(tmp_path, self_play_fraction=1.0, league_baselines=[], snapshot_every=0, precision="float32")
    trainer = Trainer(cfg, progress=False)
    episodes = trainer.collect()
    start = (copy.deepcopy(trainer.net.state_dict()), copy.deepcopy(trainer.optimizer.state_dict()))
    draws = copy.deepcopy(trainer.rng.bit_generator.state)
    results = []
    reads: list[type] = []
    features = trainer.net.features

    def record(batch: Any, *rest: Any) -> tuple[torch.Tensor, torch.Tensor]:
        reads.append(type(batch))
        return features(batch, *rest)

    trainer.net.features = record  # type: ignore[method-assign]
    for compact, sparse in ((False, False), (True, False), (True, True)):
        trainer.compact_batches = compact
        trainer.sparse_batches = sparse
        trainer.net.load_state_dict(start[0])
        trainer.optimizer.load_state_dict(start[1])
        trainer.rng.bit_generator.state = copy.deepcopy(draws)
        stats = trainer._ppo_update(episodes)
        results.append((stats, {k: v.clone() for k, v in trainer.net.state_dict().items()}))
    assert set(reads) == {torch.Tensor, CompactRows, SparseRows}  # each path ran
    (full, full_weights), *others = results
    for stats, weights in others:
        for key in ("policy_loss", "value_loss", "entropy", "approx_kl", "clipfrac"):
            assert stats[key] == pytest.approx(full[key], rel=1e-4, abs=1e-6), key
        for name, weight in full_weights.items():
            assert torch.allclose(weights[name], weight, rtol=1e-4, atol=1e-6), name
    moved = max(float((full_weights[k] - start[0][k]).abs().max()) for k in full_weights)
    assert moved > 1e-4  # the update moved the weights, and every path moved them alike


@pytest.mark.parametrize(("num_players", "value_torso"), [(2, False), (4, False), (2, True)])
def test_sparse_rows_keep_every_input_and_give_the_dense_first_layer(num_players: int, value_torso: bool) -> None:
    """``PolicyNet.sparse`` keeps each row's used meld slots and set columns and nothing else: expanded,
    any minibatch of it is the rows again, exactly. Through the compiled first layer
    (agents/sparse_kernel.py) the torso outputs, values and every gradient equal the dense product's, on
    later positions (melds on the table) and on fresh deals (no slot in use: the kernel's empty inputs)."""
    rules = load_rules("burako")
    torch.manual_seed(1)
    net = PolicyNet(NetworkShape.for_env(num_players, rules, hidden=32, slot_embed=4, value_torso=value_torso), rules)
    with torch.no_grad():  # an empty slot's encoding is not zero: every empty slot adds it
        net.slot_encoder[0].bias.uniform_(0.1, 0.5)
    obs, _ = real_positions(600, num_players, seed=4)
    net.skip_empty_slots_from = None  # the reference: every slot multiplied
    melded = obs[300:].clone()
    # random play melds little: some rows also get a late slot of the first side and the last pending option
    for start, n_slots in (net.slot_blocks[0], net.slot_blocks[-1]):
        late = start + (n_slots - 1) * 60
        melded[::7, late : late + 60] = torch.rand(len(melded[::7]), 60)
        melded[::7, late + MELD_PRESENT] = 1.0
    for positions in (melded, obs[:20]):
        store = torch.cat([torch.ones(5, obs.shape[1]), positions])  # the batch is some rows of a store
        batch = net.sparse(store, torch.arange(5, 5 + len(positions)))
        assert len(batch) == len(positions)
        idx = torch.randperm(len(positions))[: len(positions) // 2]
        minibatch = batch.select(idx)
        assert torch.equal(expand(net, minibatch), positions[idx])
        assert torch.equal(minibatch.slot_rows, torch.sort(minibatch.slot_rows).values)  # row by row
        if len(positions) == 20:
            assert minibatch.slot_index.numel() == 0  # a fresh deal has no meld
        assert_same_first_layer(net, minibatch, positions[idx], 2 + 8 + 2 * value_torso)
    shape = NetworkShape.for_env(num_players, rules, hidden=32, slot_embed=4, unseen_input=True)
    with pytest.raises(ValueError, match="unseen_input"):
        PolicyNet(shape, rules).sparse(obs)
    with pytest.raises(ValueError, match="float32 rows on the CPU"):
        net.sparse(obs.double())
    with pytest.raises(IndexError, match="outside the 600 rows"):
        net.sparse(obs, torch.tensor([0, 600]))


def test_keep_freed_memory_is_accepted_by_glibc() -> None:
    """glibc refuses an mmap threshold above its ceiling (32 MiB on 64-bit): the values must be in range."""
    if platform.libc_ver()[0] != "glibc":
        pytest.skip("glibc only")
    assert keep_freed_memory()


def test_keep_freed_memory_does_nothing_without_glibc(monkeypatch: pytest.MonkeyPatch) -> None:
    """macOS, Windows, musl: no mallopt to call, the answer is False and nothing is loaded."""
    loaded: list[str] = []
    monkeypatch.setattr(memory.ctypes, "CDLL", lambda name: loaded.append(name))
    monkeypatch.setattr(memory.sys, "platform", "darwin")
    assert not keep_freed_memory()
    monkeypatch.setattr(memory.sys, "platform", "linux")
    monkeypatch.setattr(memory.platform, "libc_ver", lambda: ("", ""))
    assert not keep_freed_memory()
    assert loaded == []


@pytest.mark.parametrize("keep", [True, False])
def test_the_trainer_keeps_freed_memory_only_when_configured(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, keep: bool
) -> None:
    """keep_freed_memory: true asks the allocator once and records its answer; false never asks."""
    calls: list[int] = []
    monkeypatch.setattr(ppo_module, "keep_freed_memory", lambda: calls.append(1) or True)
    trainer = Trainer(vector_config(tmp_path, keep_freed_memory=keep), progress=False)
    assert calls == ([1] if keep else [])
    assert trainer.keeps_freed_memory is keep


@pytest.mark.parametrize(("num_players", "value_torso"), [(2, False), (4, False), (2, True)])
def test_the_first_layer_skips_unused_meld_slots_and_equals_the_dense_product(
    num_players: int, value_torso: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A batch's empty meld slots (past each side's last meld) are not multiplied: their share of
    the torso's first layer is a constant. Values, torso outputs and every gradient equal the
    dense product's on real positions, on fresh deals (no melds at all) and with a side's slots
    all in use; the slots in use are a prefix of each block, as the shortcut assumes."""
    import agents.network as network

    rules = load_rules("burako")
    torch.manual_seed(0)
    net = PolicyNet(NetworkShape.for_env(num_players, rules, hidden=32, slot_embed=4, value_torso=value_torso), rules)
    with torch.no_grad():  # an empty slot's encoding is not zero, so the skipped slots' constant counts
        net.slot_encoder[0].bias.uniform_(0.1, 0.5)
    present_at = network.MELD_PRESENT
    obs, _ = real_positions(600, num_players, seed=3)
    obs = obs[300:]  # later positions: melds on the table
    present = [obs[:, start + present_at : start + n * 60 : 60] for start, n in net.slot_blocks]
    for block in present:  # each block's slots in use are a prefix: no empty slot before a used one
        assert bool((block[:, 1:] <= block[:, :-1]).all())
    assert all(int(block.sum(1).max()) >= 2 for block in present[:-1])  # every side has melds
    # a batch where one side's slots are all in use and the pending options (the last block) hold melds
    full = obs[:40].clone()
    first_slots = obs[:, net.slot_blocks[0][0] : net.slot_blocks[0][0] + 60]
    meld = first_slots[int(first_slots[:, present_at].argmax())].clone()  # some row's first meld
    assert float(meld[present_at]) == 1.0
    start, n = net.slot_blocks[0]
    full[0, start : start + n * 60] = meld.repeat(n)
    start, n = net.slot_blocks[-1]
    full[1, start : start + n * 60] = meld.repeat(n)
    fresh = torch.zeros_like(obs[:20])
    calls = []
    original = PolicyNet._first_layer_skipping_empty_slots
    monkeypatch.setattr(
        PolicyNet, "_first_layer_skipping_empty_slots", lambda self, o: calls.append(1) or original(self, o)
    )
    # which slots each block uses in the three batches: some but not all, all of a block, none
    used = [
        [int(b.any(0).sum()) for b in (o[:, s + present_at : s + n * 60 : 60] for s, n in net.slot_blocks)]
        for o in (obs, full)
    ]
    assert all(0 < u < n for u, (_, n) in zip(used[0][:-1], net.slot_blocks, strict=False))
    assert used[1][0] == net.slot_blocks[0][1] and used[1][-1] == net.slot_blocks[-1][1]
    for batch in (obs, full, fresh):
        outputs = []
        for threshold in (16, None):  # skipping, then dense
            net.skip_empty_slots_from = threshold
            net.zero_grad()
            h, values = net.features(batch)
            (h.square().sum() + values.sum()).backward()
            outputs.append([h, values] + [p.grad.clone() for n, p in net.named_parameters() if p.grad is not None])
        skipping, dense = outputs
        # weights and biases: encoder, two torso layers, value head (and the value's own second layer)
        assert len(skipping) == len(dense) == 2 + 8 + 2 * value_torso
        for a, b in zip(skipping, dense, strict=True):
            assert torch.allclose(a, b, rtol=1e-4, atol=1e-5)
    assert len(calls) == 3  # the shortcut ran once per batch
    # under a bfloat16 autocast, and for small batches, the dense product runs
    net.skip_empty_slots_from = network.SKIP_EMPTY_SLOTS_FROM
    with torch.autocast("cpu", dtype=torch.bfloat16):
        net.features(obs)
    net.features(obs[:15])
    assert len(calls) == 3


def test_forward_passes_without_gradients_keep_the_unused_slots_constant_until_the_weights_change() -> None:
    """A rollout's forward passes (no gradients) reuse each block's ``W_slots @ e0`` over its unused
    slots; it follows the weights: after an optimiser step and after ``load_state_dict`` the torso
    output equals a gradient-enabled forward's of the same weights, bit for bit, and a batch using
    fewer slots gets its own constant."""
    rules = load_rules("burako")
    torch.manual_seed(0)
    net = PolicyNet(NetworkShape.for_env(2, rules, hidden=32, slot_embed=4), rules)
    with torch.no_grad():  # an empty slot's encoding is not zero, so the constant counts
        net.slot_encoder[0].bias.uniform_(0.1, 0.5)
    obs, _ = real_positions(600, 2, seed=3)
    late, fresh = obs[300:364], obs[:64]  # melds on the table / none

    def check() -> None:
        for batch in (late, fresh, late):
            with torch.inference_mode():
                cached = net.features(batch)
            computed = net.features(batch)  # gradients on: nothing kept, computed afresh
            for a, b in zip(cached, computed, strict=True):
                assert torch.equal(a, b.detach())

    check()
    assert len(net._unused_terms[1]) >= 3  # late and fresh batches use different numbers of slots
    optimizer = torch.optim.Adam(net.parameters(), lr=1e-2)
    h, values = net.features(late)
    (h.square().sum() + values.sum()).backward()
    optimizer.step()
    check()  # the step moved the encoder and the first layer: the kept terms were dropped
    other = PolicyNet(NetworkShape.for_env(2, rules, hidden=32, slot_embed=4), rules)
    before = net.features(late)[0].detach()
    net.load_state_dict(other.state_dict())
    check()
    with torch.inference_mode():
        assert not torch.equal(net.features(late)[0], before)
        assert torch.equal(net.features(late)[0], other.features(late)[0])


@pytest.mark.parametrize(("num_players", "value_torso"), [(2, False), (4, False), (2, True)])
def test_compact_rows_keep_every_input_and_give_the_dense_first_layer(num_players: int, value_torso: bool) -> None:
    """``PolicyNet.compact`` drops only each block's slots past the last one any row uses and the
    columns no row sets: expanded, the compact batch and any minibatch of it are the rows again,
    exactly. Torso outputs, values and every gradient equal the dense product's, on later positions
    (melds on the table) and on fresh deals (no melds at all); minibatches reuse their buffers."""
    rules = load_rules("burako")
    torch.manual_seed(0)
    net = PolicyNet(NetworkShape.for_env(num_players, rules, hidden=32, slot_embed=4, value_torso=value_torso), rules)
    with torch.no_grad():  # an empty slot's encoding is not zero, so the dropped slots' constant counts
        net.slot_encoder[0].bias.uniform_(0.1, 0.5)
    obs, _ = real_positions(600, num_players, seed=3)
    net.skip_empty_slots_from = None  # the reference: every slot multiplied
    for positions in (obs[300:], obs[:20]):
        store = torch.cat([torch.ones(5, obs.shape[1]), positions])  # the batch is some rows of a store
        compact = net.compact(store, torch.arange(5, 5 + len(positions)), {})
        assert torch.equal(expand(net, compact), positions)
        assert compact.rest.shape[1] < sum(size for _, size in net.rest_runs)  # columns no row sets are gone
        assert all(part.is_contiguous() for part in compact.slots)
        assert sum(part.shape[1] for part in compact.slots) < sum(n for _, n in net.slot_blocks) * 60
        buffers: dict[str, torch.Tensor] = {}
        first = compact.select(torch.arange(len(positions) // 2), buffers)
        pointers = [part.data_ptr() for part in (*first.slots, first.rest)]
        idx = torch.randperm(len(positions))[: len(positions) // 2]
        minibatch = compact.select(idx, buffers)
        assert [part.data_ptr() for part in (*minibatch.slots, minibatch.rest)] == pointers  # reused
        assert torch.equal(expand(net, minibatch), positions[idx])
        assert_same_first_layer(net, minibatch, positions[idx], 2 + 8 + 2 * value_torso)
    assert sum(part.shape[1] for part in net.compact(obs[:20]).slots) < sum(
        part.shape[1] for part in net.compact(obs[300:]).slots
    )  # fresh deals use fewer slots
    # a network that derives unseen counts reads columns a compact batch drops
    shape = NetworkShape.for_env(num_players, rules, hidden=32, slot_embed=4, unseen_input=True)
    unseen = PolicyNet(shape, rules)
    assert net.compacts and not unseen.compacts
    with pytest.raises(ValueError, match="unseen_input"):
        unseen.compact(obs)


def test_legal_action_sampling_follows_the_policy_distribution() -> None:
    """One position, many draws: empirical frequencies match the softmax."""
    rules = load_rules("burako")
    torch.manual_seed(3)
    net = PolicyNet(NetworkShape.for_env(2, rules, hidden=16, slot_embed=4), rules)
    torch.nn.init.normal_(net.policy_head.weight, std=0.5)
    obs, mask = real_positions(64)
    row = int(torch.argmax(mask.sum(1)))
    reps = 20000
    actions, _, _ = sample_actions(
        net, obs[row].expand(reps, -1), mask[row].expand(reps, -1), generator=torch.Generator().manual_seed(0)
    )
    with torch.no_grad():
        logits, _ = net(obs[row : row + 1])
    probs = torch.softmax(torch.where(mask[row], logits[0], -torch.inf), 0)
    freq = torch.bincount(actions, minlength=probs.numel()).float() / reps
    assert float((freq - probs).abs().max()) < 0.02
    assert bool((freq[~mask[row]] == 0).all())


# ---------------------------------------------------------------------- the batched rollout
def test_batched_rollout_records_the_readable_engines_transitions(tmp_path: Path) -> None:
    """The decisions a batched rollout stores (observation, mask, action) and the
    rewards it credits equal what the readable engine produces when the same
    moves are replayed on the same deals (first hand of every game)."""
    cfg = vector_config(tmp_path, self_play_fraction=1.0, league_baselines=[], snapshot_every=0, num_envs=4)
    trainer = Trainer(cfg, progress=False)
    rollout = trainer.vector
    assert rollout is not None
    rollout.trace = []
    episodes = rollout.collect(500)
    store = rollout.store
    observer = Observer(2, trainer.rules)
    checked_hands = 0
    for game in range(cfg.num_envs):
        moves = [(seat, action, row) for g, seat, action, row in rollout.trace if g == game]
        state = GameState.new_game(np.random.default_rng(rollout.seeds[game]), trainer.rules, 2)
        rows_by_seat: dict[int, list[int]] = {0: [], 1: []}
        for seat, action, row in moves:
            if state.hand_over:
                break
            assert state.current == seat
            mask = state.legal_mask().astype(bool)
            if row >= 0:
                np.testing.assert_array_equal(store.obs[row], observer.encode(state, seat))
                np.testing.assert_array_equal(store.masks_of(np.array([row]))[0], mask)
                assert store.actions[row] == action
                rows_by_seat[seat].append(row)
            else:
                assert mask.sum() == 1 and mask[action]
            state.apply(action)
        if not state.hand_over:
            continue
        checked_hands += 1
        for seat, rows in rows_by_seat.items():
            if not rows:
                continue
            (episode,) = [ep for ep in episodes if ep.seat == seat and ep.rows.size and ep.rows[0] == rows[0]]
            np.testing.assert_array_equal(episode.rows, rows)
            assert episode.reward == pytest.approx(
                hand_reward(state, state.side_of[seat], cfg.win_weight, cfg.score_weight, cfg.reward_scale)
            )
    assert checked_hands >= 2


def test_the_update_reads_the_stores_bits_and_both_heads_learn_the_same(tmp_path: Path) -> None:
    """A batched rollout's batch carries its masks bit-packed (never unpacked for the legal head);
    an update from the same weights, optimiser and permutations gives the same losses with the
    legal-pair head (pairs read from the bits) and the full-width head (the masks unpacked)."""
    cfg = vector_config(tmp_path, self_play_fraction=1.0, league_baselines=[], snapshot_every=0)
    trainer = Trainer(cfg, progress=False)
    episodes = trainer.collect()
    batch = episode_batch(episodes)
    assert "masks" not in batch
    rows = np.concatenate([ep.rows for ep in episodes])
    unpacked = torch.from_numpy(trainer.vector.store.masks_of(rows))
    assert torch.equal(LegalIndex.of_packed(batch["packed_masks"]).cols, LegalIndex.of_mask(unpacked).cols)
    weights = copy.deepcopy(trainer.net.state_dict())
    optimiser = copy.deepcopy(trainer.optimizer.state_dict())
    rng = copy.deepcopy(trainer.rng.bit_generator.state)
    stats = {}
    for head in ("legal", "full"):
        trainer.net.load_state_dict(weights)
        trainer.optimizer.load_state_dict(optimiser)
        trainer.rng.bit_generator.state = rng
        trainer.live_cfg = dataclasses.replace(trainer.cfg, policy_head=head)
        stats[head] = trainer._ppo_update(episodes)
    for key in ("policy_loss", "value_loss", "entropy", "approx_kl", "clipfrac"):
        assert stats["legal"][key] == pytest.approx(stats["full"][key], rel=1e-3, abs=1e-5), key


@pytest.mark.parametrize("num_players", [2, 4])
def test_batched_rollout_credits_each_seat_with_its_side_result(tmp_path: Path, num_players: int) -> None:
    """Self-play hands store every seat (two sides: opposite rewards); hands against
    a baseline store only the learner side's seats; with 4 players partners share
    one result. Every stored action was legal."""
    cfg = vector_config(
        tmp_path,
        num_players=num_players,
        league_baselines=["random"],
        self_play_fraction=0.5 if num_players == 2 else 0.0,
        win_weight=1.0,
        score_weight=0.0,
    )
    trainer = Trainer(cfg, progress=False)
    kinds = set()
    wanted = {True, False} if num_players == 2 else {False}
    for _ in range(6):  # a batch holds a few hands, whose opponents the league draws: until both kinds showed
        episodes = trainer.collect()
        assert sum(ep.rows.size for ep in episodes) >= cfg.batch_size
        assert len(trainer.recent_truncated) == min(trainer.episodes_done, 200)  # every hand in the books
        for hand_episodes in episodes_by_hand(episodes).values():
            opponent = hand_episodes[0].opponent
            kinds.add(opponent == SELF)
            seats = sorted(ep.seat for ep in hand_episodes)
            assert len(seats) == len(set(seats))
            by_side: dict[int, set[float]] = {}
            for ep in hand_episodes:
                by_side.setdefault(ep.seat % 2, set()).add(ep.reward)
            assert all(len(r) == 1 for r in by_side.values())  # partners: one result
            if opponent == SELF:
                if len(by_side) == 2:
                    (a,), (b,) = by_side.values()
                    assert a == -b
            else:
                assert len(by_side) == 1
        if kinds >= wanted:
            break
    assert kinds == wanted
    stats = trainer._ppo_update(episodes)
    assert np.isfinite(stats["loss"]) and stats["batch_decisions"] == sum(ep.rows.size for ep in episodes)


@pytest.mark.parametrize("rollout", ["vector", "engine"])
def test_truncated_hands_earn_truncated_reward_for_every_learner_seat(tmp_path: Path, rollout: str) -> None:
    """V3a: a hand cut at max_turns is unscored; training gives each learner seat
    ``truncated_reward`` (default 0), on both rollouts, and the league records no result."""
    rules = tmp_path / "short.yaml"
    rules.write_text("preset: burako\nname: burako_short\nmax_turns: 4\n", encoding="utf-8")
    rewards: dict[float, set[float]] = {}
    for truncated_reward in (0.0, -0.75):
        cfg = vector_config(
            tmp_path,
            rules=str(rules),
            rollout=rollout,
            policy_head="legal",
            league_baselines=["random"],
            self_play_fraction=0.5,
            batch_size=60,
            truncated_reward=truncated_reward,
        )
        trainer = Trainer(cfg, progress=False)
        episodes = trainer.collect()
        rewards[truncated_reward] = {float(ep.reward) for ep in episodes}
        assert {ep.opponent == SELF for ep in episodes} == {True, False}  # both kinds of hand
        assert sum(games for _, games in trainer.league.results.values()) == 0  # no hand was scored
        assert len(trainer.recent_truncated) > 0 and all(trainer.recent_truncated)  # charts/truncated_share 1.0
    assert rewards == {0.0: {0.0}, -0.75: {-0.75}}


def test_baseline_mirrors_follow_the_compiled_games_and_moves_are_timed_apart(tmp_path: Path) -> None:
    """The readable mirror a baseline plays on stays equal to the compiled game
    it mirrors, move after move (the state read back fresh)."""
    cfg = vector_config(tmp_path, league_baselines=["random"], self_play_fraction=0.0, snapshot_every=0)
    trainer = Trainer(cfg, progress=False)
    rollout = trainer.vector
    assert rollout is not None
    trainer.collect()
    timing = rollout.timing
    assert timing["baselines"] > 0 and timing["env"] > 0 and timing["learner"] > 0
    checked = 0
    for _ in range(40):
        rollout.step([])
        for i, mirror in rollout.mirrors.items():
            assert mirror.to_dict() == rollout.env.game_state(i).to_dict()
            checked += 1
    assert checked >= 40


@pytest.mark.parametrize(("num_players", "share"), [(2, 1.0), (2, 0.5), (4, 0.5)])
def test_baselines_in_a_worker_process_play_the_same_games_as_in_process(
    tmp_path: Path, num_players: int, share: float
) -> None:
    """``baseline_worker_share`` moves some games' baselines (all, or half of the games: the rest
    stay here) to another process and changes nothing else:
    every move of every game, every stored decision and every credited episode equal the
    in-process rollout's from the same seed, over enough steps for hands to end and be re-dealt
    against other opponents (seeded agents, seeded views, mirrors read back once a hand)."""
    results = []
    for worker in (0.0, share):
        cfg = vector_config(
            tmp_path / str(worker),
            num_players=num_players,
            league_baselines=["planner", "greedy", "random", "tests.test_training_vector:_PeekingBaseline"],
            self_play_fraction=0.2,
            baseline_fraction=0.6,
            num_envs=6,
            baseline_worker_share=worker,
        )
        trainer = Trainer(cfg, progress=False)
        rollout = trainer.vector
        assert rollout is not None and (rollout.worker is not None) == bool(worker)
        assert int(rollout.remote_games.sum()) == round(worker * cfg.num_envs)
        rollout.trace = []
        try:
            episodes = rollout.collect(600) + rollout.collect(600)
            assert rollout.timing["baselines"] > 0
            opponents = {ep.opponent for ep in episodes}
            stored = [(ep.seat, ep.opponent, ep.reward, rollout.store.actions[ep.rows].tolist()) for ep in episodes]
            results.append((rollout.trace, stored, opponents, trainer.episodes_done))
        finally:
            trainer.close()
        if worker:
            assert rollout.worker is not None and not rollout.worker.process.is_alive()
    (trace, stored, opponents, hands), (trace_w, stored_w, _, hands_w) = results
    assert {"planner", "greedy", "random"} & opponents and hands >= 6
    assert "tests.test_training_vector:_PeekingBaseline" in opponents
    assert trace_w == trace
    assert stored_w == stored and hands_w == hands


def test_the_compiled_mask_scan_plays_what_numpys_passes_play(tmp_path: Path) -> None:
    """``VectorRollout.scan_masks`` (training/mask_scan.py) changes no move, draw or stored decision: the
    same trace, store rows (observations, packed masks, actions, log-probabilities) and episodes as
    numpy's passes from the same seed, against a baseline and in self-play, forced moves included."""
    results = []
    for scan in (False, True):
        shares = {"self_play_fraction": 0.5, "baseline_fraction": 0.5}
        cfg = vector_config(tmp_path / str(scan), league_baselines=["planner"], num_envs=6, **shares)
        trainer = Trainer(cfg, progress=False)
        rollout = trainer.vector
        assert rollout is not None
        rollout.scan_masks = scan
        rollout.trace = []
        try:
            episodes = rollout.collect(400) + rollout.collect(400)
            rows = np.concatenate([ep.rows for ep in episodes])
            store = rollout.store
            results.append(
                (
                    rollout.trace,
                    [(ep.seat, ep.opponent, ep.reward, ep.rows.tolist()) for ep in episodes],
                    store.obs[rows].copy(),
                    store.packed_masks[rows].copy(),
                    store.actions[rows].copy(),
                    store.logprobs[rows].copy(),
                )
            )
        finally:
            trainer.close()
    (trace, episodes, *arrays), (trace_s, episodes_s, *arrays_s) = results
    assert any(row < 0 for *_, row in trace) and {opponent for _, opponent, _, _ in episodes} >= {SELF, "planner"}
    assert trace_s == trace and episodes_s == episodes
    for before, after in zip(arrays, arrays_s, strict=True):
        np.testing.assert_array_equal(after, before)


def test_a_baseline_that_fails_in_the_worker_names_its_error(tmp_path: Path) -> None:
    """An exception in a baseline's move reaches the trainer as an error with the worker's traceback."""
    cfg = vector_config(
        tmp_path,
        league_baselines=["tests.test_training_vector:_FailingBaseline"],
        self_play_fraction=0.0,
        snapshot_every=0,
        baseline_worker_share=1.0,
    )
    trainer = Trainer(cfg, progress=False)
    try:
        with pytest.raises(RuntimeError, match=r"(?s)a league baseline failed in the worker.*no move in me"):
            trainer.collect()
    finally:
        trainer.close()


def test_a_baseline_worker_that_died_between_steps_is_named(tmp_path: Path) -> None:
    """A worker killed between two steps (the out-of-memory killer, say): the next step's send says the
    worker died and how, not a bare BrokenPipeError."""
    cfg = vector_config(
        tmp_path, league_baselines=["random"], self_play_fraction=0.0, snapshot_every=0, baseline_worker_share=1.0
    )
    trainer = Trainer(cfg, progress=False)
    try:
        rollout = trainer.vector
        assert rollout is not None and rollout.worker is not None
        trainer.collect()
        rollout.worker.process.kill()
        rollout.worker.process.join(timeout=10)
        with pytest.raises(RuntimeError, match=r"the baseline worker died \(exit code -9\)"):
            trainer.collect()
    finally:
        trainer.close()


@pytest.mark.parametrize("share", [1.0, 0.5])
def test_a_collect_interrupted_while_the_baseline_worker_answers_reads_no_stale_answer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, share: float
) -> None:
    """Ctrl-C while the rollout waited for the worker (a notebook): the worker, which ignores SIGINT,
    still answered, and every later step read the answer to the step before (illegal moves, or a
    shape error). Each answer must fit the positions its step asked about. With half the games'
    baselines in this process, their mirrors had taken the step's moves before the wait: a move
    ahead of their games, the next collect failed on an illegal action."""
    from training.baseline_worker import BaselineWorker

    cfg = vector_config(
        tmp_path, league_baselines=["random"], self_play_fraction=0.0, snapshot_every=0, baseline_worker_share=share
    )
    asked: list[list[np.ndarray]] = []
    wrong: list[bool] = []
    interrupt = [False]
    submit, actions = BaselineWorker.submit, BaselineWorker.actions

    def asking(self: BaselineWorker, events: list[Any], requests: list[Any]) -> None:
        asked.append([request[-1] for request in requests])  # each request ends with its legal mask
        submit(self, events, requests)

    def answering(self: BaselineWorker) -> list[int]:
        if interrupt[0]:
            interrupt[0] = False
            raise KeyboardInterrupt  # Ctrl-C while waiting for the answer
        moves = actions(self)
        masks = asked[-1]
        fits = len(moves) == len(masks) and all(mask[move] for move, mask in zip(moves, masks, strict=True))
        wrong.append(not fits)
        return moves

    monkeypatch.setattr(BaselineWorker, "submit", asking)
    monkeypatch.setattr(BaselineWorker, "actions", answering)
    trainer = Trainer(cfg, progress=False)
    try:
        trainer.collect()
        interrupt[0] = True
        with pytest.raises(KeyboardInterrupt):
            trainer.collect()
        trainer.collect()
        assert len(wrong) > 10 and not any(wrong)
    finally:
        trainer.close()


class _InterruptedCollect(StoredCollect):
    """Each step stores two decisions of a finished hand; a hand still in play holds four rows."""

    def __init__(self) -> None:
        self.store = DecisionStore(2, num_actions=8, capacity=8)
        self._learned = []
        self.interrupt = False
        self.in_play: np.ndarray | None = None

    def step(self, finished: list[StoredEpisode]) -> int:
        if self.interrupt:
            raise KeyboardInterrupt
        if self.in_play is None:
            self.in_play = self.store.put(np.zeros((4, 2), np.float32), np.ones((4, 8), np.int8))
        finished.append(
            StoredEpisode(self.store, self.store.put(np.ones((2, 2), np.float32), np.ones((2, 8), np.int8)), 0.0)
        )
        return 2


def test_a_collect_interrupted_midway_frees_the_last_batchs_rows_once() -> None:
    """Ctrl-C in a collect (a notebook), then collect again: the rows of the batch learned before are freed
    once, so the rows handed out next never belong to a live hand or to the batch just returned."""
    rollout = _InterruptedCollect()
    rollout.collect(2)
    rollout.interrupt = True
    with pytest.raises(KeyboardInterrupt):
        rollout.collect(2)
    rollout.interrupt = False
    (episode,) = rollout.collect(2)
    assert rollout.in_play is not None
    held = {*episode.rows.tolist(), *rollout.in_play.tolist()}
    assert rollout.store.size == len(held) == 6
    handed_out = rollout.store.put(np.zeros((2, 2), np.float32), np.ones((2, 8), np.int8))
    assert not held & set(handed_out.tolist())


class _PeekingBaseline:
    """Moves that depend on its seeded generator and on its view's seeded guesses at the hidden tiles."""

    name = "peeking"

    def __init__(self, seed: int | None = None) -> None:
        self.rng = np.random.default_rng(seed)

    def reset(self, seat: int, rules: object = None, num_players: int = 2) -> None:
        pass

    def act(self, observation: Any, view: Any = None) -> int:
        legal = np.flatnonzero(observation["action_mask"])
        guess = view.sample_state().stock
        return int(legal[(sum(guess[:3]) + int(self.rng.integers(7))) % legal.size])


class _FailingBaseline:
    name = "failing"

    def __init__(self, seed: int | None = None) -> None:
        pass

    def reset(self, seat: int, rules: object = None, num_players: int = 2) -> None:
        pass

    def act(self, observation: object, view: object = None) -> int:
        raise ValueError("no move in me")


def test_baseline_worker_needs_the_batched_rollout(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="baseline_worker_share needs rollout: vector"):
        vector_config(tmp_path, rollout="engine", baseline_worker_share=0.5)
    with pytest.raises(ValueError, match=r"baseline_worker_share must be in \[0, 1\]"):
        vector_config(tmp_path, baseline_worker_share=1.5)


def test_decision_store_reuses_released_rows_and_grows_without_moving_live_ones() -> None:
    store = DecisionStore(3, num_actions=10, capacity=2)
    obs = np.arange(15, dtype=np.float32).reshape(5, 3)
    masks = np.zeros((5, 10), dtype=np.int8)
    masks[np.arange(5), [0, 3, 9, 4, 7]] = 1
    first = store.put(obs[[4, 1]], masks[[4, 1]])
    second = store.put(obs[[3]], masks[[3]])  # grows: the first rows keep their contents
    assert store.capacity >= 3 and store.size == 3 and len({*first.tolist(), *second.tolist()}) == 3
    np.testing.assert_array_equal(store.obs[first], obs[[4, 1]])
    np.testing.assert_array_equal(store.masks_of(first), masks[[4, 1]].astype(bool))
    store.release(first)
    assert store.size == 1
    third = store.put(obs[[0, 2]], masks[[0, 2]])
    assert set(third.tolist()) == set(first.tolist())  # reused, not grown
    np.testing.assert_array_equal(store.obs[second], obs[[3]])
    np.testing.assert_array_equal(store.masks_of(third), masks[[0, 2]].astype(bool))


def test_the_store_copies_only_the_meld_slots_in_use_and_keeps_every_row_whole() -> None:
    """``DecisionStore.put(..., slot_blocks=)`` copies per block only the slots in use and clears the slots a
    reused row held past them: every stored row equals the observation, whether the row it reuses held
    more slots, fewer or none, for real positions and for rows whose blocks are filled to the last slot."""
    env = BurakoVectorEnv(8, 2, num_threads=1)
    env.reset(seed=list(range(8)))
    rng = np.random.default_rng(3)
    net = PolicyNet(NetworkShape.for_env(2, env.rules, hidden=16, slot_embed=4), env.rules)
    blocks = net.slot_block_table
    assert (np.diff(blocks[:, 0]) > 0).all()  # by offset, as the copy reads them
    positions = []
    for step in range(400):
        if step % 20 == 0:
            positions.append(env.obs.copy())
        env.step(sample_legal_actions(env.masks, rng))
    real = np.concatenate(positions)
    start, slots, _ = blocks[0]
    in_use = real[:, start + MELD_PRESENT : start + slots * MELD_FEATURE_SIZE : MELD_FEATURE_SIZE].astype(bool).sum(1)
    assert in_use.max() >= 3 and (in_use == 0).any()  # melds on the table in some positions, none in others
    full = real[:4].copy()  # every slot of every block in use
    for start, slots, _ in blocks:
        full[:, start : start + slots * MELD_FEATURE_SIZE] = rng.random((4, slots * MELD_FEATURE_SIZE)) + 0.5
    rows = np.concatenate([full, real, full])
    masks = np.ones((rows.shape[0], env.num_actions), dtype=np.int8)
    store = DecisionStore(env.observation_size, capacity=6)
    for order in (np.arange(rows.shape[0]), rng.permutation(rows.shape[0]), np.arange(rows.shape[0])[::-1]):
        for chunk in np.array_split(order, 12):  # put, check, release: rows are reused by other positions
            stored = store.put(rows, masks[chunk], source_rows=chunk, slot_blocks=blocks)
            np.testing.assert_array_equal(store.obs[stored], rows[chunk])
            store.release(stored)


# ---------------------------------------------------------------------- schedules and devices
def test_league_shares_are_checked_between_listed_updates_and_to_rounding() -> None:
    """A step in baseline_fraction while self_play_fraction moved linearly broke their sum just before
    the step: the config loaded, and the run failed there with a traceback (hours in, maybe). And
    baseline_fraction 0.1 with self_play_fraction 0.9 was refused: 1 - 0.9 is 0.09999999999999998."""
    from training.league import League

    crossing = "schedules={self_play_fraction: [[0, 0.2], [4, 0.8, linear]], baseline_fraction: [[2, 0.1]]}"
    with pytest.raises(ValueError, match=r"at update 1: baseline_fraction 0\.7 must be in \[0, 1 - self_play_fraction"):
        load_config(SMOKE, ["baseline_fraction=0.7", crossing])
    assert load_config(SMOKE, ["baseline_fraction=0.6", crossing]).baseline_fraction == 0.6
    for own, base in ((0.9, 0.1), (0.7, 0.3), (0.2, 0.8), (0.6, 0.4)):
        assert load_config(SMOKE, [f"self_play_fraction={own}", f"baseline_fraction={base}"]).baseline_fraction == base
        league = League(["random"], self_play_fraction=own, baseline_fraction=base)
        league.snapshots["s1"] = {}
        probabilities = league.probabilities()
        assert probabilities["s1"] >= 0 and sum(probabilities.values()) == pytest.approx(1.0)
    with pytest.raises(ValueError, match=r"baseline_fraction 0\.11 must be in \[0, 1 - self_play_fraction = 0\.1\]"):
        League(["random"], self_play_fraction=0.9, baseline_fraction=0.11)


def test_a_config_whose_every_reward_is_zero_is_refused() -> None:
    with pytest.raises(ValueError, match="win_weight and score_weight are 0 and so is truncated_reward"):
        load_config(SMOKE, ["win_weight=0", "score_weight=0"])
    assert load_config(SMOKE, ["win_weight=0", "score_weight=0", "truncated_reward=-0.5"]).truncated_reward == -0.5
    rummy = ROOT / "configs" / "ppo_rummy_smoke.yaml"  # a Rummy hand always ends: truncated_reward never pays
    with pytest.raises(ValueError, match="Rummy's hands are never truncated"):
        load_config(rummy, ["win_weight=0", "score_weight=0", "truncated_reward=-0.5"])


def test_schedules_change_values_from_their_update_on(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert value_at([[2, 0.5], [5, 0.7]], 0, None) is None
    assert value_at([[2, 0.5], [5, 0.7]], 4, None) == 0.5
    assert value_at([[2, 0.5], [5, 0.7]], 5, None) == 0.7
    assert schedule_problems({"learning_rate": [[0, 1.0e-4]]}) == []
    with pytest.raises(ValueError, match="cannot be scheduled"):
        load_config(SMOKE, ["schedules={seed: [[0, 1]]}"])
    with pytest.raises(ValueError, match="updates must increase"):
        load_config(SMOKE, ["schedules={learning_rate: [[3, 0.1], [3, 0.2]]}"])
    with pytest.raises(ValueError, match=r"schedules\.learning_rate at update 3"):
        load_config(SMOKE, ["schedules={learning_rate: [[3, fast]]}"])
    # YAML reads 1e-3 (no dot) as a string: normalised to a float, as for the field itself
    assert load_config(SMOKE, ["schedules={learning_rate: [[3, 1e-3]]}"]).schedules == {"learning_rate": [[3, 1e-3]]}
    # a [update, value, linear] point is reached linearly from the point before it, then held
    linear = load_config(SMOKE, ["schedules={learning_rate: [[2, 1.0e-3], [6, 5.0e-4, linear], [7, 2.0e-3]]}"])
    points = linear.schedules["learning_rate"]
    assert [value_at(points, u, 0.1) for u in range(9)] == pytest.approx(
        [0.1, 0.1, 1.0e-3, 8.75e-4, 7.5e-4, 6.25e-4, 5.0e-4, 2.0e-3, 2.0e-3]
    )
    with pytest.raises(ValueError, match="no point before it"):
        load_config(SMOKE, ["schedules={learning_rate: [[2, 1.0e-3, linear]]}"])
    with pytest.raises(ValueError, match="only a float field moves linearly"):
        load_config(SMOKE, ["schedules={update_epochs: [[0, 4], [9, 1, linear]]}"])
    with pytest.raises(ValueError, match="only a float field moves linearly"):
        load_config(SMOKE, ["schedules={baseline_fraction: [[0, null], [9, 0.5, linear]]}"])
    with pytest.raises(ValueError, match="third element may only be 'linear'"):
        load_config(SMOKE, ["schedules={learning_rate: [[0, 1.0e-3], [9, 1.0e-4, cosine]]}"])
    # a scheduled value out of its field's range, or league shares that do not add up at some update,
    # are refused when the config is read, not when training reaches that update
    with pytest.raises(ValueError, match=r"at update 2: learning_rate must be > 0, got -1\.0"):
        load_config(SMOKE, ["schedules={learning_rate: [[2, -1]]}"])
    with pytest.raises(ValueError, match=r"at update 7: baseline_fraction 0\.5 must be in \[0, 1 - self_play_fraction"):
        load_config(SMOKE, ["baseline_fraction=0.5", "schedules={self_play_fraction: [[0, 0.2], [7, 0.9, linear]]}"])
    with pytest.raises(ValueError, match=r"^bad training config: baseline_fraction 0\.9 must be in"):
        load_config(SMOKE, ["baseline_fraction=0.9", "self_play_fraction=0.2"])
    assert load_config(SMOKE, ["baseline_fraction=0.5", "schedules={self_play_fraction: [[0, 0.2], [7, 0.5]]}"])
    cfg = vector_config(
        tmp_path,
        league_baselines=["random"],
        self_play_fraction=0.2,
        baseline_fraction=None,
        schedules={"baseline_fraction": [[1, 0.5]], "learning_rate": [[0, 1.0e-3], [2, 5.0e-4]]},
        anneal_lr=False,
    )
    trainer = Trainer(cfg, progress=False)
    seen = []
    for update in range(4):
        trainer.update = update
        trainer._apply_schedules()
        lr = trainer._set_learning_rate()
        seen.append((trainer.league.baseline_fraction, lr, trainer.optimizer.param_groups[0]["lr"]))
    assert seen == [(None, 1.0e-3, 1.0e-3), (0.5, 1.0e-3, 1.0e-3), (0.5, 5.0e-4, 5.0e-4), (0.5, 5.0e-4, 5.0e-4)]
    assert trainer.league.probabilities()["random"] == pytest.approx(0.8)  # no snapshot yet: all but self
    # an update's values are set, not checked whole again (~37 ms an update: every schedule point's
    # config was rebuilt and checked); the run's own config keeps its values
    checks: list[int] = []
    monkeypatch.setattr(PPOConfig, "__post_init__", lambda self: checks.append(1))
    trainer._apply_schedules()
    assert checks == [] and trainer.live_cfg.learning_rate == 5.0e-4 and trainer.cfg.learning_rate == cfg.learning_rate
    monkeypatch.undo()
    with pytest.raises(ValueError, match=r"at update 0: baseline_fraction 0\.9 must be in"):
        PPOConfig(**{**cfg.to_dict(), "schedules": {"baseline_fraction": [[0, 0.9]]}})
    trainer.update = 0  # a config changed after its checks (by hand): the update still refuses it
    trainer.cfg.schedules = {"baseline_fraction": [[0, 0.9]]}
    with pytest.raises(ValueError, match=r"at update 0: baseline_fraction 0\.9 must be in"):
        trainer._apply_schedules()


def test_device_auto_picks_cuda_only_when_present() -> None:
    expected = "cuda" if torch.cuda.is_available() else "cpu"
    assert resolve_device("auto").type == expected
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="no CUDA device"):
            resolve_device("cuda")
    with pytest.raises(ValueError, match="device must be"):
        load_config(SMOKE, ["device=tpu"])


# ---------------------------------------------------------------------- resume after a kill
@pytest.mark.slow  # a subprocess with its own torch/numba start-up: ~30 s idle, 90 s on a loaded machine
def test_a_killed_run_resumes_from_its_last_checkpoint(tmp_path: Path) -> None:
    """SIGKILL mid-run (no clean exit), then --resume: the run continues from the
    update and step of checkpoints/latest.pt, in the same folder."""
    args = ["--config", str(SMOKE), "--set", f"run_root={tmp_path}", "--set", "bc_teacher=null"]
    args += ["--set", "total_steps=100000", "--set", "batch_size=150", "--set", "num_envs=6"]
    args += ["--set", "eval_every=0", "--set", "eval_games=4", "--set", "env_threads=1", "--no-progress"]
    latest = kill_after_first_checkpoint(args, tmp_path)
    saved = ckpt.load(latest)["trainer"]
    run_dir = latest.parent.parent
    resumed = Trainer(
        load_config(None, ["total_steps=" + str(saved["global_step"] + 150)], base=ckpt.load(latest)["config"]),
        resume=run_dir,
        progress=False,
    )
    assert (resumed.update, resumed.global_step) == (saved["update"], saved["global_step"])
    assert resumed.run_dir == run_dir
    resumed.train()
    assert resumed.update == saved["update"] + 1
    assert ckpt.load(run_dir / "checkpoints" / "latest.pt")["trainer"]["update"] == saved["update"] + 1


def test_resume_keeps_the_precision_the_run_started_with_under_auto(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``precision: auto`` resolves per machine: a run started where it picked bfloat16 (an AMX CPU, a GPU)
    and resumed elsewhere goes on in bfloat16, and says so; a precision named in the config wins, and the
    change is said; a malformed saved precision is refused as a damaged checkpoint."""
    monkeypatch.setattr(ppo_module, "native_bfloat16", lambda device: False)  # here auto means float32
    trainer = Trainer(vector_config(tmp_path, precision="auto"), progress=False)
    assert trainer.compute_dtype == torch.float32
    trainer.started = time.perf_counter()  # what train() sets before its first checkpoint
    latest = trainer.save_checkpoint()
    trainer.writer.close()
    trainer.lock.release()
    data = ckpt.load(latest)
    assert data["trainer"]["precision"] == "float32"
    data["trainer"]["precision"] = "bfloat16"  # as if written on a machine where auto meant bfloat16
    ckpt.save(data, latest)
    for precision, expected, said in (
        ("auto", torch.bfloat16, "resumed in bfloat16, the precision this run trained in until now"),
        ("float32", torch.float32, "precision changes at this resume: bfloat16 until now, float32 from here"),
    ):
        resumed = Trainer(vector_config(tmp_path, precision=precision), resume=trainer.run_dir, progress=False)
        resumed.writer.close()
        resumed.lock.release()
        assert resumed.compute_dtype == expected
        assert said in capsys.readouterr().err
    data["trainer"]["precision"] = "float16"
    ckpt.save(data, latest)
    with pytest.raises(ckpt.CheckpointError, match=r"trainer 'precision' 'float16' is not one of"):
        Trainer(vector_config(tmp_path, precision="auto"), resume=trainer.run_dir, progress=False)


def test_resume_keeps_the_running_optimisers_fused_kernel() -> None:
    """A checkpoint written by plain Adam (before fused Adam) resumes on the
    fused kernel, with the same moments and step count: its next step is plain
    Adam's, and not a fresh optimiser's."""
    grads = torch.randn(4, 5, generator=torch.Generator().manual_seed(0))

    def step(param: torch.nn.Parameter, optimizer: torch.optim.Optimizer, grad: torch.Tensor) -> None:
        param.grad = grad.clone()
        optimizer.step()

    plain_param = torch.nn.Parameter(torch.zeros(5))
    plain = torch.optim.Adam([plain_param], lr=1e-2, eps=1e-5)
    for grad in grads[:3]:
        step(plain_param, plain, grad)
    fused_param, fresh_param = (torch.nn.Parameter(plain_param.detach().clone()) for _ in range(2))
    fused = fused_adam([fused_param], torch.device("cpu"), lr=1e-2, eps=1e-5)
    if not fused.param_groups[0].get("fused"):
        pytest.skip("this torch build has no fused CPU Adam")
    load_optimizer_state(fused, copy.deepcopy(plain.state_dict()))  # as read from a file: no shared tensors
    assert fused.param_groups[0]["fused"] is True and not plain.param_groups[0]["fused"]
    assert float(fused.state[fused_param]["step"]) == 3.0
    fresh = fused_adam([fresh_param], torch.device("cpu"), lr=1e-2, eps=1e-5)
    for param, optimizer in ((plain_param, plain), (fused_param, fused), (fresh_param, fresh)):
        step(param, optimizer, grads[3])
    torch.testing.assert_close(fused_param.detach(), plain_param.detach(), atol=1e-4, rtol=0)
    assert (fresh_param - plain_param).abs().max() > 1e-3  # the check can tell a lost state


def test_thread_tuner_keeps_the_faster_thread_count_and_keeps_checking() -> None:
    """Issue 15: with num_threads=None the batched API times its steps and
    runs on whichever of one thread and every thread is faster now."""
    from burako_env.vector import ThreadTuner

    tuner = ThreadTuner(2, explore_every=8)
    cost = {1: 1.0, 2: 2.0}  # two threads slower (a core taken)
    used = []
    for _ in range(64):
        threads = tuner.threads()
        used.append(threads)
        tuner.record(threads, cost[threads])
    assert tuner.current == 1 and used[-8:].count(2) == 1
    assert 6 <= used.count(2) <= 10  # the first try, then one step in 8
    cost = {1: 1.0, 2: 0.25}  # the core is free again: two threads win within a few explorations
    for _ in range(64):
        threads = tuner.threads()
        tuner.record(threads, cost[threads])
    assert tuner.current == 2
    assert ThreadTuner(1).choices == (1,)


def test_thread_tuner_leaves_out_each_choice_s_cold_first_step() -> None:
    """The first step of a process loads the kernel (170-260 ms against 1-3 ms a step): charged to
    one thread, it kept the tuner on two threads for 256 steps where one was 3x faster."""
    from burako_env.vector import ThreadTuner

    tuner = ThreadTuner(2)
    cost = {1: 0.001, 2: 0.003}
    cold = {1: 0.26, 2: 0.26}
    for _ in range(6):
        threads = tuner.threads()
        tuner.record(threads, cold.pop(threads, cost[threads]))
    assert tuner.current == 1 and tuner.seconds == cost


# ---------------------------------------------------------------------- precision and threads
def test_precision_and_update_threads_are_checked_when_the_config_loads() -> None:
    with pytest.raises(ValueError, match="precision must be one of float32, bfloat16, auto"):
        load_config(SMOKE, ["precision=fp16"])
    with pytest.raises(ValueError, match="update_threads must be >= 1 or null"):
        load_config(SMOKE, ["update_threads=0"])
    cpu = torch.device("cpu")
    assert resolve_precision("float32", cpu) == torch.float32
    assert resolve_precision("bfloat16", cpu) == torch.bfloat16
    assert resolve_precision("auto", cpu) == (torch.bfloat16 if native_bfloat16(cpu) else torch.float32)
    assert not native_bfloat16(torch.device("meta"))


@pytest.mark.parametrize("amx", [True, False])
def test_precision_auto_is_bfloat16_on_cpus_with_amx_only(amx: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """AVX512-BF16 alone does not make ``auto`` bfloat16 (trial 6 learned worse in bf16 there)."""
    monkeypatch.setattr(torch.cpu, "_is_amx_tile_supported", lambda: amx)
    monkeypatch.setattr(torch.cpu, "_is_avx512_bf16_supported", lambda: True)
    cpu = torch.device("cpu")
    assert native_bfloat16(cpu) is amx
    assert resolve_precision("auto", cpu) == (torch.bfloat16 if amx else torch.float32)
    assert resolve_precision("bfloat16", cpu) == torch.bfloat16
    monkeypatch.delattr(torch.cpu, "_is_amx_tile_supported")  # a torch without the probe
    assert native_bfloat16(cpu) is False


def test_bfloat16_legal_head_matches_the_full_head_under_the_same_autocast() -> None:
    """precision=bfloat16: the torso multiplies in bf16 but the heads stay
    float32, so the legal-pair path and the full-width path still agree, and
    both stay close to the float32 distribution."""
    rules = load_rules("burako")
    torch.manual_seed(0)
    net = PolicyNet(NetworkShape.for_env(2, rules, hidden=32, slot_embed=4), rules)
    obs, mask = real_positions(200)
    actions = torch.multinomial(mask.float(), 1).squeeze(1)
    logp32, _, values32 = evaluate_actions_dense(net, obs, mask, actions)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        logp_dense, ent_dense, values_dense = evaluate_actions_dense(net, obs, mask, actions)
        logp_legal, ent_legal, values_legal = evaluate_actions(
            net, obs.to(torch.bfloat16), None, actions, mask.nonzero(as_tuple=True)
        )
    for tensor in (logp_dense, logp_legal, values_legal, ent_legal):
        assert tensor.dtype == torch.float32  # the heads ran outside autocast
    assert torch.allclose(logp_legal, logp_dense, atol=1e-4)
    assert torch.allclose(ent_legal, ent_dense, atol=1e-4)
    assert torch.allclose(values_legal, values_dense, atol=1e-5)
    assert float((logp_dense - logp32).detach().abs().max()) < 0.05  # bf16 torso: close, not equal
    assert float((values_dense - values32).detach().abs().max()) < 0.05
    with pytest.raises(ValueError, match="needs the masks or their"):
        evaluate_actions(net, obs, None, actions)
    with pytest.raises(ValueError, match="full-width path needs the masks"):
        evaluate_actions_dense(net, obs, None, actions)


def thread_counts_on(owner: object, method: str) -> list[int]:
    """The torch thread count each call of ``owner.method`` starts with, from now on (e.g. a trainer's
    ``_ppo_epochs``: one a PPO update; its optimizer's ``step``: one a minibatch)."""
    seen: list[int] = []
    original = getattr(owner, method)

    def spy(*args: object, **kwargs: object) -> object:
        seen.append(torch.get_num_threads())
        return original(*args, **kwargs)

    setattr(owner, method, spy)
    return seen


def test_update_runs_on_update_threads_and_gives_the_rollout_its_threads_back(tmp_path: Path) -> None:
    """torch's thread count is per process: the update may take every core,
    the games then get their own count back; the fused optimizer survives resume."""
    cfg = vector_config(tmp_path, torch_threads=1, update_threads=2, precision="bfloat16")
    trainer = Trainer(cfg, progress=False)
    assert trainer.compute_dtype == torch.bfloat16
    seen = thread_counts_on(trainer, "_ppo_epochs")
    before = [p.detach().clone() for p in trainer.net.parameters()]
    stats, _, _ = trainer.collect_and_update()
    assert seen == [2] and torch.get_num_threads() == 1
    assert all(math.isfinite(v) for v in stats.values())
    assert any(not torch.equal(a, b) for a, b in zip(before, trainer.net.parameters(), strict=True))
    fused = trainer.optimizer.param_groups[0].get("fused")
    trainer.optimizer.load_state_dict(trainer.optimizer.state_dict())
    assert trainer.optimizer.param_groups[0].get("fused") == fused
