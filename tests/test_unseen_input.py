"""The network's derived unseen counts (``agents.network.UnseenCounts``, ``unseen_input``) against
the engine's own count (E1, E2): read off a seat's observation, they must equal
``GameState.unseen_counts`` exactly, in every preset and player count."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from test_properties import PRESET_TABLES, melder_policy, play_hand

from agents.network import NetworkShape, PolicyNet, StackedTorsos, UnseenCounts
from burako_env.engine import GameState, Phase
from burako_env.observation import Observer
from burako_env.rules import load_rules


@pytest.mark.parametrize(("preset", "num_players"), PRESET_TABLES)
def test_unseen_input_equals_the_engines_unseen_counts_e1_e2(preset: str, num_players: int) -> None:
    """E1/E2: at every state of 6 melding hands, for every seat, twice the derived counts equal
    ``unseen_counts`` (the tiles counted where they are), with runs, sets, wilds, the high 1,
    privilege tiles (B17) and pending additions among them."""
    rules = load_rules(preset)
    observer = Observer(num_players, rules)
    unseen = UnseenCounts(num_players, rules)
    observations: list[np.ndarray] = []
    expected: list[np.ndarray] = []
    phases: set[int] = set()

    def visit(state: GameState, mask: np.ndarray) -> None:
        phases.add(int(state.phase))
        for player in range(num_players):
            observations.append(observer.encode(state, player))
            expected.append(state.unseen_counts(player))

    for hand in range(6):
        play_hand(4_400 + hand, num_players, melder_policy, visit, rules)
    got = 2.0 * unseen(torch.from_numpy(np.stack(observations))).numpy()
    want = np.stack(expected).astype(np.float32)
    wrong = np.flatnonzero((got != want).any(1))
    first = got[wrong[0]] - want[wrong[0]] if wrong.size else None
    assert wrong.size == 0, f"{wrong.size} of {len(want)} observations miscounted, the first off by {first}"
    assert Phase.PLAY in phases and len(observations) > 500
    melded = np.stack(observations)[:, observer.off["melds"]]  # some state has a meld in its first slot
    assert melded.any()


def test_unseen_input_feeds_every_torso_path_and_round_trips() -> None:
    """With ``unseen_input`` the torso reads 53 more columns: the dense product, the product that
    skips empty meld slots and the stacked snapshots give the same features; changing only a
    meld's tiles (not the other segments) changes the derived columns. Old shapes load without it."""
    rules = load_rules("burako")
    torch.manual_seed(0)
    shape = NetworkShape.for_env(2, rules, hidden=32, slot_embed=4, unseen_input=True)
    nets = [PolicyNet(shape, rules) for _ in range(2)]
    plain = PolicyNet(NetworkShape.for_env(2, rules, hidden=32, slot_embed=4), rules)
    assert nets[0].torso[0].in_features == plain.torso[0].in_features + 53
    observer = Observer(2, rules)
    observations: list[np.ndarray] = []
    play_hand(77, 2, melder_policy, lambda s, m: observations.append(observer.encode(s, s.current)), rules)
    obs = torch.from_numpy(np.stack(observations[-40:]))
    net = nets[0]
    net.skip_empty_slots_from = None
    dense, _ = net.features(obs)
    net.skip_empty_slots_from = 1
    skipping, _ = net.features(obs)
    torch.testing.assert_close(skipping, dense, atol=1e-5, rtol=1e-5)
    stacked = StackedTorsos(nets).features(obs, [1, 0], [15, 25])
    torch.testing.assert_close(stacked[15:], dense[15:], atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(stacked[:15], nets[1].features(obs[:15])[0], atol=1e-5, rtol=1e-5)
    # the unseen columns matter: zeroing their weights changes the features of some melded position
    with torch.no_grad():
        net.torso[0].weight[:, -53:] = 0.0
    assert not torch.allclose(net.features(obs)[0], dense)
    old = dict(shape.to_dict())
    del old["unseen_input"]
    assert not NetworkShape(**old).unseen_input
    with pytest.raises(ValueError, match="unseen_input"):
        PolicyNet(NetworkShape(2, plain.shape.obs_size, "x", game="rummy", unseen_input=True))
