"""Training's ``score_potential``: potential-based shaping by what the sides have on the table.

The potential of a decision is ``score_weight`` x its seat's side's zero-sum margin (E5) over the
table totals (melded tiles + canasta bonuses - the muerto penalty while the muerto counts as
untaken, B26 and V3a), / ``reward_scale``. The compiled core computes the margins as the readable
engine does; GAE reads values + potentials and the value learns the rest; the rollout records the
deciding seat's potential; cloning's value targets are the results less the potential; what cannot
take it refuses it by name."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from test_training_vector import vector_config

import training.ppo as ppo
from agents import checkpoint as ckpt
from agents.network import NetworkShape, PolicyNet
from agents.neural_search import _load_network, _load_network_version
from burako_env.actions import MELD_BASE
from burako_env.engine import GameState
from burako_env.melds import canasta_bonus, meld_value
from burako_env.outcomes import table_margin
from burako_env.rules import load_rules
from burako_env.vector import BurakoVectorEnv, sample_legal_actions
from training.ppo import Trainer, gae
from training.rollout import episode_batch


def expected_margin(state: GameState, seat: int) -> float:
    """The seat's side's margin over the table totals, written out from the readable state."""
    rules, values = state.rules, state.t.values
    totals = []
    for side in range(state.num_sides):
        total = sum(meld_value(m, values) + canasta_bonus(m, rules) for m in state.melds[side])
        untaken = not state.muerto_taken[side] or any(
            state.muerto_unplayed[p] and rules.unplayed_indirect_muerto_counts_as_untaken
            for p in range(state.num_players)
            if state.side_of[p] == side
        )
        totals.append(total - (rules.muerto_penalty if untaken else 0))
    own = totals[state.side_of[seat]]
    return own - (sum(totals) - own) / (len(totals) - 1)


def melding_first(masks: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """A random legal move per game, a meld or an add whenever one is legal: hands empty, muertos are
    taken and canastas made within a few hundred steps (random play alone rarely gets there)."""
    actions = sample_legal_actions(masks, rng)
    for i, mask in enumerate(masks):
        melds = np.flatnonzero(mask[MELD_BASE:])
        if melds.size:
            actions[i] = MELD_BASE + rng.choice(melds)
    return actions


@pytest.mark.parametrize(("preset", "num_players"), [("burako", 2), ("burako", 4), ("burako_royal", 2)])
def test_table_margins_of_the_compiled_games_are_the_readable_engines_b26(preset: str, num_players: int) -> None:
    """B26 and V3a on the table: over random play (melds, canastas, muertos taken directly and
    indirectly, hands re-dealt), every seat's margin from the compiled core equals the one written out
    from the same game read back as a ``GameState``, and ``outcomes.table_margin``'s."""
    env = BurakoVectorEnv(6, num_players, rules=load_rules(preset), num_threads=1)
    env.reset(seed=5)
    rng = np.random.default_rng(1)
    seen_canasta = seen_muerto = nonzero = 0
    for _ in range(500):
        games = np.repeat(np.arange(6), num_players)
        seats = np.tile(np.arange(num_players), 6)
        got = env.table_margins(games, seats)
        for r, (i, seat) in enumerate(zip(games.tolist(), seats.tolist(), strict=True)):
            state = env.game_state(i)
            want = expected_margin(state, seat)
            assert got[r] == pytest.approx(want, abs=1e-9) and table_margin(state, seat) == pytest.approx(want)
            nonzero += got[r] != 0
            seen_canasta += any(m.is_canasta for side in state.melds for m in side)
            seen_muerto += any(state.muerto_taken)
        env.step(melding_first(env.masks, rng))
    assert seen_canasta and seen_muerto and nonzero > 1000


def test_gae_with_potentials_is_gae_of_the_shaped_rewards() -> None:
    """Values + potentials in GAE are potential-based shaping: the same advantages as rewards
    ``gamma * p' - p`` between decisions (0 after the last) with the values alone; the returns are the
    values' targets; without potentials (or with zeros) the advantages are plain GAE's."""
    rng = np.random.default_rng(0)
    values = rng.normal(size=7).astype(np.float32)
    potentials = rng.normal(size=7).astype(np.float32)
    reward, gamma, lam = 0.8, 0.97, 0.9
    adv, ret = gae(values, reward, gamma, lam, potentials)
    shaped = gamma * np.append(potentials[1:], 0.0) - potentials  # the shaping rewards
    shaped[-1] += reward
    deltas = shaped + gamma * np.append(values[1:], 0.0) - values
    want = np.array([sum((gamma * lam) ** (k - t) * deltas[k] for k in range(t, 7)) for t in range(7)])
    np.testing.assert_allclose(adv, want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(ret, adv + values, rtol=1e-6)
    plain, _ = gae(values, reward, gamma, lam)
    np.testing.assert_array_equal(gae(values, reward, gamma, lam, np.zeros(7, np.float32))[0], plain)
    # lambda 1, gamma 1: each advantage is the result less the decision's value and potential
    mc, _ = gae(values, reward, 1.0, 1.0, potentials)
    np.testing.assert_allclose(mc, reward - values - potentials, rtol=1e-5, atol=1e-6)


def test_the_rollout_records_each_deciders_potential_and_the_update_reads_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each learner decision's stored potential is score_weight x the deciding seat's table margin at
    that decision / reward_scale; the update's GAE reads them."""
    cfg = vector_config(
        tmp_path, score_potential=True, self_play_fraction=1.0, league_baselines=[], snapshot_every=0, score_weight=0.7
    )
    trainer = Trainer(cfg, progress=False)
    assert trainer.net.shape.score_potential
    env, store = trainer.vector.env, trainer.vector.store
    calls: list[np.ndarray] = []
    puts: list[np.ndarray] = []
    margins_of, put = env.table_margins, store.put

    def checked_margins(games: np.ndarray, seats: np.ndarray) -> np.ndarray:
        assert np.array_equal(seats, env.current_player[games])  # the seat that decides
        out = margins_of(games, seats)
        want = [expected_margin(env.game_state(g), s) for g, s in zip(games.tolist(), seats.tolist(), strict=True)]
        np.testing.assert_allclose(out, want)
        calls.append(out.copy())
        return out

    def recorded_put(*args: object, **kwargs: object) -> np.ndarray:
        rows = put(*args, **kwargs)
        puts.append(rows.copy())
        return rows

    monkeypatch.setattr(env, "table_margins", checked_margins)
    monkeypatch.setattr(store, "put", recorded_put)
    episodes = trainer.collect()
    assert len(calls) == len(puts) and any(np.any(c != 0) for c in calls)
    for rows, margins in zip(puts, calls, strict=True):
        np.testing.assert_allclose(store.potentials[rows, 0], margins * 0.7 / cfg.reward_scale, rtol=1e-6)
    batch = episode_batch(episodes)
    rows = np.concatenate([ep.rows for ep in episodes])
    np.testing.assert_array_equal(batch["potentials"], store.potentials[rows, 0])
    read: list[np.ndarray | None] = []

    def recorded_gae(values: np.ndarray, reward: float, gamma: float, lam: float, potentials=None):  # type: ignore[no-untyped-def]
        read.append(potentials)
        return gae(values, reward, gamma, lam, potentials)

    monkeypatch.setattr(ppo, "gae", recorded_gae)
    stats = trainer._ppo_update(episodes)
    assert np.isfinite(stats["loss"]) and len(read) == len(episodes)
    np.testing.assert_array_equal(np.concatenate(read), batch["potentials"])


def test_cloning_targets_are_the_results_less_the_potential() -> None:
    """With score_potential the teacher games are the same, and each value target is the result less
    score_weight x the seat's table margin / reward_scale: nothing on the table at a hand's start
    (both muertos untaken: margin 0), something later."""
    from training.cloning import _teacher_games

    def play(potential: bool) -> dict[str, np.ndarray]:
        return _teacher_games(
            ("burako", "planner", {}, False, "burako", 2, 3, [0, 1], 0.5, 2.0, 1000.0, 0.0, potential)
        )

    plain, shaped = play(False), play(True)
    np.testing.assert_array_equal(plain["actions"], shaped["actions"])  # the same games
    margins = (plain["targets"] - shaped["targets"]) * 1000.0 / 2.0
    assert margins[0] == pytest.approx(0.0, abs=1e-3) and np.abs(margins).max() > 50
    # table totals move in whole points: tiles are worth 5 to 50, bonuses and penalties 100s
    np.testing.assert_allclose(margins, np.round(margins / 5) * 5, atol=0.05)


def test_what_cannot_take_a_score_potential_refuses_it_by_name(tmp_path: Path) -> None:
    """The readable engine's rollout and Rummy record no table margins; a search reads the checkpoint's
    value in play, which is a result less a potential it does not add back."""
    with pytest.raises(ValueError, match="score_potential needs Burako with rollout: vector"):
        vector_config(tmp_path, rollout="engine", score_potential=True)
    rules = load_rules("burako")
    net = PolicyNet(NetworkShape.for_env(2, rules, hidden=16, slot_embed=4, score_potential=True), rules)
    path = tmp_path / "potential.pt"
    ckpt.save(ckpt.policy_payload(net, rules, {"seed": 0}), path)
    _load_network_version.cache_clear()
    with pytest.raises(ckpt.CheckpointError, match="score_potential"):
        _load_network(str(path))
    loaded, _ = ckpt.build_policy(ckpt.load(path), source=str(path))
    assert loaded.shape.score_potential and torch.equal(loaded.value_head.bias, net.value_head.bias)
