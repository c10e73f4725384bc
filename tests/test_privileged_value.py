"""A training critic that reads what the seat cannot see (``privileged_value``,
burako_env/privileged.py): the features are the game's hidden tiles, exactly; they reach the
value and never the policy; the batched rollout records them for the seat that decides; and
what must not take them refuses them by name."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from test_training_vector import vector_config

from agents import checkpoint as ckpt
from agents.network import NetworkShape, PolicyNet
from agents.neural_search import _load_network, _load_network_version
from burako_env.engine import GameState
from burako_env.observation import observation_layout
from burako_env.privileged import NEXT_DRAWS, privileged_of_state, privileged_size
from burako_env.rules import load_rules
from burako_env.rummy.rules import load_rummy_rules
from burako_env.tiles import NUM_KINDS
from burako_env.vector import BurakoVectorEnv, sample_legal_actions
from training.ppo import Trainer
from training.rollout import episode_batch


def expected_row(state: GameState, seat: int) -> np.ndarray:
    """The layout's row written out from the readable state, without burako_env/privileged.py's code."""
    n = state.num_players
    parts = [state.hands[(seat + i) % n].astype(np.float32) / 2 for i in range(1, n)]
    parts.append(np.bincount(np.asarray(state.stock, dtype=np.int64), minlength=NUM_KINDS) / 2)
    muertos = [tile for muerto in state.muertos for tile in muerto]
    parts.append(np.bincount(np.asarray(muertos, dtype=np.int64), minlength=NUM_KINDS) / 2)
    for depth in range(NEXT_DRAWS):
        draw = np.zeros(NUM_KINDS)
        if len(state.stock) > depth:
            draw[state.stock[-1 - depth]] = 1.0  # the stock's top is its last tile (engine.draw: pop)
        parts.append(draw)
    return np.concatenate(parts).astype(np.float32)


@pytest.mark.parametrize("num_players", [2, 4])
def test_privileged_rows_are_the_hidden_tiles_of_the_compiled_games_e2(num_players: int) -> None:
    """E2's hidden information, for a critic: over random play (hands re-dealt, muertos taken, the
    stock drawn down), every seat's row from the compiled core equals the other hands, the stock, the
    untaken muertos and the next two draws of the same game read back as a ``GameState``."""
    env = BurakoVectorEnv(6, num_players, num_threads=1)
    env.reset(seed=11)
    rng = np.random.default_rng(0)
    rows = 0
    taken = False
    for _ in range(400):
        games = np.repeat(np.arange(6), num_players)
        seats = np.tile(np.arange(num_players), 6)
        got = env.privileged(games, seats)
        assert got.shape == (6 * num_players, privileged_size(num_players))
        for r, (i, seat) in enumerate(zip(games.tolist(), seats.tolist(), strict=True)):
            state = env.game_state(i)
            want = expected_row(state, seat)
            assert np.array_equal(got[r], want), (i, seat, np.flatnonzero(got[r] != want)[:5])
            assert np.array_equal(privileged_of_state(state, seat), want)
            taken |= any(state.muerto_taken)
            rows += 1
        env.step(sample_legal_actions(env.masks, rng))
    assert rows == 400 * 6 * num_players and taken


def small_net(**fields: bool) -> PolicyNet:
    rules = load_rules("burako")
    torch.manual_seed(0)
    return PolicyNet(NetworkShape.for_env(2, rules, hidden=32, slot_embed=4, **fields), rules)


def test_the_privileged_tiles_reach_the_value_and_never_the_policy() -> None:
    """The value starts blind to the hidden tiles (their weights start at zero, so cloning's value,
    fitted without them, is where PPO starts), learns to read them, and the policy's features and
    logits never change with them; a network without the option has no such layer."""
    net = small_net(privileged_value=True)
    env = BurakoVectorEnv(32, 2, num_threads=1)
    obs_np, _, _ = env.reset(seed=5)
    obs = torch.from_numpy(obs_np.copy())
    hidden = torch.from_numpy(env.privileged(np.arange(32), env.current_player))
    h_blind, v_blind = net.features(obs)
    h_seen, v_seen = net.features(obs, hidden)
    torch.testing.assert_close(v_seen, v_blind)
    assert torch.equal(h_seen, h_blind)
    with torch.no_grad():
        net.privileged_value[0].weight.normal_()
    logits_blind, v_blind = net(obs)
    logits_seen, v_seen = net(obs, hidden)
    assert torch.equal(logits_seen, logits_blind) and torch.equal(net.features(obs, hidden)[0], h_blind)
    assert (v_seen - v_blind).abs().min() > 0
    v_seen.sum().backward()
    assert net.privileged_value[0].weight.grad[:, 32:].abs().sum() > 0
    assert net.policy_head.weight.grad is None
    plain = small_net()
    assert plain.privileged_value is None and plain.privileged_size == 0
    shape = {k: v for k, v in net.shape.to_dict().items() if k != "privileged_value"}
    assert not NetworkShape(**shape).privileged_value  # a shape stored before the field


def test_the_batched_rollout_records_each_deciders_hidden_tiles_and_values_them(tmp_path: Path) -> None:
    """Each stored decision's row is the deciding seat's (its other-hand block adds up to the
    opponent's hand size in the seat's own observation, its stock block to the stock's size), the
    stored value is the network's value of that observation with that row, and the update's batch
    carries the rows."""
    cfg = vector_config(
        tmp_path,
        privileged_value=True,
        self_play_fraction=1.0,
        league_baselines=[],
        snapshot_every=0,
        precision="float32",  # values compared to 1e-4: no bfloat16 autocast on a CUDA device
    )
    trainer = Trainer(cfg, progress=False)
    with torch.no_grad():  # hidden tiles that move the value, so a row left out would show
        trainer.net.privileged_value[0].weight.normal_(0, 0.3)
    episodes = trainer.collect()
    batch = episode_batch(episodes)
    store = trainer.vector.store
    rows = np.concatenate([ep.rows for ep in episodes])
    assert np.array_equal(batch["privileged"], store.privileged[rows]) and len(rows) >= cfg.batch_size
    seg = {s.name: s for s in observation_layout(2, trainer.rules)}
    other_hand = batch["privileged"][:, :NUM_KINDS].sum(1) * 2
    opponent_size = batch["obs"][:, seg["hand_sizes"].offset + 1] * 30
    np.testing.assert_allclose(other_hand, opponent_size, atol=1e-3)
    stock = batch["privileged"][:, NUM_KINDS : 2 * NUM_KINDS].sum(1) * 2
    np.testing.assert_allclose(stock, batch["obs"][:, seg["stock_size"].offset] * 106, atol=1e-3)
    obs, privileged = (torch.from_numpy(batch[k]).to(trainer.device) for k in ("obs", "privileged"))
    with torch.no_grad():
        values = trainer.net.features(obs, privileged)[1].cpu().numpy()
        blind = trainer.net.features(obs)[1].cpu().numpy()
    np.testing.assert_allclose(batch["values"], values, atol=1e-4)
    assert np.abs(batch["values"] - blind).max() > 1e-2
    stats = trainer._ppo_update(episodes)
    assert np.isfinite(stats["value_loss"])


def test_what_cannot_take_a_privileged_value_refuses_it_by_name(tmp_path: Path) -> None:
    """The readable engine's rollout records no hidden tiles; Rummy has none in this layout; a search
    reads its checkpoint's value in play, where the hidden tiles are not known."""
    with pytest.raises(ValueError, match="privileged_value needs rollout: vector"):
        vector_config(tmp_path, rollout="engine", privileged_value=True)
    rummy = load_rummy_rules("rummy")
    with pytest.raises(ValueError, match="privileged_value reads Burako's hidden tiles"):
        PolicyNet(NetworkShape.for_env(2, rummy, hidden=16, privileged_value=True), rummy)
    net = small_net(privileged_value=True)
    path = tmp_path / "privileged.pt"
    ckpt.save(ckpt.policy_payload(net, load_rules("burako"), {"seed": 0}), path)
    _load_network_version.cache_clear()
    with pytest.raises(ckpt.CheckpointError, match="privileged_value"):
        _load_network(str(path))
