"""The PettingZoo AEC environment: conformance, spaces, rewards, infos, bad input."""

from __future__ import annotations

import numpy as np
import pytest
from pettingzoo.test import api_test, render_test, seed_test

import burako_env
from burako_env import actions as A
from burako_env.engine import Phase
from burako_env.observation import observation_layout, observation_size, split_observation
from burako_env.rules import RulesError


def play_random(env, seed: int, rng: np.random.Generator) -> tuple[dict, dict]:
    """Play one episode with uniform legal actions; return the final infos and
    the final cumulative rewards of each agent."""
    env.reset(seed=seed)
    final_infos: dict = {}
    final_rewards: dict = {}
    for agent in env.agent_iter():
        obs, reward, term, trunc, info = env.last()
        if term or trunc:
            final_infos[agent] = info
            final_rewards[agent] = reward
            env.step(None)
            continue
        legal = np.flatnonzero(obs["action_mask"])
        assert legal.size > 0, "E3: the player to act has no legal action"
        env.step(int(rng.choice(legal)))
    return final_infos, final_rewards


PRESET_TABLES = [(name, n) for name in burako_env.preset_names() for n in burako_env.load_rules(name).players]


@pytest.mark.parametrize(("rules", "num_players"), PRESET_TABLES)
def test_api_test(rules: str, num_players: int) -> None:
    """PettingZoo api_test for every preset x player count (B3, V4)."""
    api_test(burako_env.env(rules=rules, num_players=num_players), num_cycles=1000)


@pytest.mark.parametrize(("rules", "num_players"), PRESET_TABLES)
def test_seed_test(rules: str, num_players: int) -> None:
    """E4 through the env: same seed, same game, for every preset x player count."""
    seed_test(lambda: burako_env.env(rules=rules, num_players=num_players), num_cycles=500)


@pytest.mark.parametrize(("rules", "num_players"), [("burako", 2), ("burako_casual", 3), ("buraco_cards", 2)])
def test_api_and_seed_test_on_the_python_engine(rules: str, num_players: int) -> None:
    """The readable engine behind the env passes the same conformance tests."""
    api_test(burako_env.env(rules=rules, num_players=num_players, engine="python"), num_cycles=300)
    seed_test(lambda: burako_env.env(rules=rules, num_players=num_players, engine="python"), num_cycles=200)


@pytest.mark.parametrize(
    ("rules", "num_players", "match"),
    [("burako", 2, False), ("burako", 4, True), ("burako_casual", 3, True), ("buraco_cards", 2, False)],
)
def test_fast_and_python_engines_play_identical_episodes(rules: str, num_players: int, match: bool) -> None:
    """E4/E5 through the env, match mode included (B24 re-deals, B28): both
    engines give the same observations, masks, rewards, terminations and infos."""
    kwargs = {"rules": rules, "num_players": num_players, "match": match, "rule_overrides": {"target": 400}}
    for seed in range(3):
        envs = [burako_env.env(engine=engine, **kwargs) for engine in ("fast", "python")]
        for e in envs:
            e.reset(seed=seed)
        rng = np.random.default_rng(seed)
        for agent in envs[0].agent_iter():
            assert envs[1].agent_selection == agent
            (obs, rew, term, trunc, info), other = envs[0].last(), envs[1].last()
            assert np.array_equal(obs["observation"], other[0]["observation"])
            assert np.array_equal(obs["action_mask"], other[0]["action_mask"])
            assert (rew, term, trunc, info) == other[1:]
            action = None if term or trunc else int(rng.choice(np.flatnonzero(obs["action_mask"])))
            for e in envs:
                e.step(action)
        assert envs[0].unwrapped.game.to_dict() == envs[1].unwrapped.game.to_dict()


def test_wrapped_env_pickles_copies_and_infos_are_plain_data() -> None:
    """A pickled or copied env plays on from the same state (the wrappers'
    mirrored attributes follow), and infos are JSON data with either engine."""
    import copy
    import json
    import pickle

    env = burako_env.env(num_players=2)
    env.reset(seed=3)
    for clone in (pickle.loads(pickle.dumps(env)), copy.deepcopy(env)):
        rng = np.random.default_rng(0)
        for _ in range(30):
            obs = clone.last()[0]
            clone.step(int(rng.choice(np.flatnonzero(obs["action_mask"]))))
            assert clone.agent_selection == clone.unwrapped.agent_selection
    shallow = copy.copy(env)
    rng = np.random.default_rng(1)
    for _ in range(10):
        env.step(int(rng.choice(np.flatnonzero(env.last()[0]["action_mask"]))))
        assert shallow.agent_selection == env.unwrapped.agent_selection
    for engine in ("fast", "python"):
        e = burako_env.env(num_players=2, engine=engine)
        infos, _ = play_random(e, 5, np.random.default_rng(5))
        json.dumps(infos)


@pytest.mark.parametrize("num_players", [2, 4])
def test_render_test(num_players: int) -> None:
    render_test(lambda render_mode=None: burako_env.env(num_players=num_players, render_mode=render_mode))


def test_metadata_agents_and_cached_spaces() -> None:
    env = burako_env.env(num_players=4)
    env.reset(seed=1)
    assert env.metadata["name"] == "burako_v0"
    assert env.possible_agents == ["player_0", "player_1", "player_2", "player_3"]
    space = env.observation_space("player_0")
    assert space is env.observation_space("player_0")
    assert env.action_space("player_1") is env.action_space("player_1")
    assert env.action_space("player_1").n == A.NUM_ACTIONS
    assert space["observation"].shape == (observation_size(4),)


def test_non_acting_agents_get_all_zero_mask() -> None:
    env = burako_env.env(num_players=4)
    env.reset(seed=3)
    acting = env.agent_selection
    for agent in env.agents:
        mask = env.observe(agent)["action_mask"]
        assert mask.dtype == np.int8
        if agent == acting:
            assert mask.sum() > 0
        else:
            assert mask.sum() == 0


def test_observation_segments_cover_the_vector_and_read_by_name() -> None:
    layout = observation_layout(2)
    offset = 0
    for seg in layout:
        assert seg.offset == offset
        offset += seg.size
    assert offset == observation_size(2)
    env = burako_env.raw_env(num_players=2)
    env.reset(seed=5)
    agent = env.agent_selection
    obs = env.observe(agent)["observation"]
    parts = split_observation(obs, 2)
    player = env.agent_name_mapping[agent]
    assert np.array_equal(parts["hand"], env.game.hands[player].astype(np.float32))
    assert parts["melds"].shape == (2, A.MAX_MELD_SLOTS, parts["melds"].shape[2])


def test_episode_ends_with_zero_sum_rewards_and_breakdown_infos() -> None:
    """E5 through the env: rewards of the two sides cancel; infos carry the breakdown."""
    rng = np.random.default_rng(0)
    seen_scored = False
    for seed in range(12):
        env = burako_env.env(num_players=2)
        infos, rewards = play_random(env, seed, rng)
        info = infos["player_0"]
        assert info["hand_over"] is True
        assert abs(sum(rewards.values())) < 1e-9
        if info["score_breakdown"] is not None:
            seen_scored = True
            totals = [side["total"] for side in info["score_breakdown"]]
            assert rewards["player_0"] == pytest.approx((totals[0] - totals[1]) / 1000.0)
        else:
            assert info["void"] or info["truncated"]
    assert seen_scored


def test_win_reward_mode_and_four_player_teams_share_rewards() -> None:
    rng = np.random.default_rng(1)
    for seed in range(6):
        env = burako_env.env(num_players=4, reward="win")
        infos, rewards = play_random(env, seed, rng)
        assert rewards["player_0"] == rewards["player_2"]
        assert rewards["player_1"] == rewards["player_3"]
        assert rewards["player_0"] in (-1.0, 0.0, 1.0)
        assert rewards["player_0"] == -rewards["player_1"]
        assert infos["player_0"]["side"] == 0 and infos["player_1"]["side"] == 1


def test_truncation_at_max_turns() -> None:
    env = burako_env.raw_env(num_players=2, max_turns=3)
    env.reset(seed=2)
    rng = np.random.default_rng(2)
    for _agent in env.agent_iter():
        obs, _r, term, trunc, info = env.last()
        if term or trunc:
            assert trunc and not term
            assert info["truncated"] and info["score_breakdown"] is None
            env.step(None)
            continue
        env.step(int(rng.choice(np.flatnonzero(obs["action_mask"]))))
    assert env.game.turn == 3


def test_match_mode_plays_hands_until_target() -> None:
    """B28 through the env: with match=True, hands continue until the target."""
    env = burako_env.raw_env(num_players=2, match=True, rule_overrides={"target": 300})
    env.reset(seed=4)
    rng = np.random.default_rng(4)
    hands_seen = set()
    for _agent in env.agent_iter():
        obs, _r, term, trunc, _info = env.last()
        hands_seen.add(env.game.hand_number)
        if term or trunc:
            env.step(None)
            continue
        env.step(int(rng.choice(np.flatnonzero(obs["action_mask"]))))
    state = env.game
    assert state.match_over or state.end_reason == "truncated"
    if state.match_over:
        assert max(state.match_scores) >= 300
    assert len(hands_seen) >= 1


def test_raw_env_rejects_illegal_action_and_changes_nothing() -> None:
    env = burako_env.raw_env(num_players=2)
    env.reset(seed=7)
    before = env.game.to_json()
    illegal = int(np.flatnonzero(env.observe(env.agent_selection)["action_mask"] == 0)[0])
    with pytest.raises(ValueError, match="not legal"):
        env.step(illegal)
    assert env.game.to_json() == before
    with pytest.raises(ValueError, match="out of range"):
        env.step(A.NUM_ACTIONS + 5)
    with pytest.raises(ValueError, match="out of range"):
        env.step(-1)
    assert env.game.to_json() == before
    with pytest.raises(ValueError, match="engine"):
        burako_env.raw_env(engine="rust")


def test_wrapped_env_terminates_illegal_move_with_penalty() -> None:
    env = burako_env.env(num_players=2)
    env.reset(seed=7)
    agent = env.agent_selection
    obs = env.observe(agent)
    illegal = int(np.flatnonzero(obs["action_mask"] == 0)[0])
    env.step(illegal)
    assert all(env.terminations.values())
    assert env.rewards[agent] == -1
    assert env.rewards["player_1" if agent == "player_0" else "player_0"] == 0


def test_bad_configuration_errors() -> None:
    with pytest.raises(RulesError, match="unknown rules preset 'nope'"):
        burako_env.env(rules="nope")
    with pytest.raises(RulesError, match="num_players=3 is not allowed"):
        burako_env.env(num_players=3)
    with pytest.raises(RulesError, match="num_players=5"):
        burako_env.env(num_players=5)
    with pytest.raises(ValueError, match="reward must be one of"):
        burako_env.env(reward="points")
    with pytest.raises(ValueError, match="render_mode"):
        burako_env.env(render_mode="rgb")
    with pytest.raises(RulesError, match="max_turns"):
        burako_env.env(max_turns=0)


def test_ansi_render_shows_table() -> None:
    env = burako_env.env(num_players=2, render_mode="ansi")
    env.reset(seed=0)
    text = env.render()
    assert "pile:" in text and "stock: 59 tiles" in text and "player_" in text
    assert "PRIVILEGE" in text  # B17: the hand starts with mano's privilege


def test_describe_action_texts() -> None:
    env = burako_env.raw_env(num_players=2)
    env.reset(seed=0)
    assert env.game.phase == Phase.PRIVILEGE
    assert burako_env.describe_action(A.DRAW_STOCK) == "draw from the stock"
    assert burako_env.describe_action(A.discard_action(52)) == "discard joker"
    assert burako_env.describe_action(A.discard_action(1 * 13 + 4)) == "discard red 5"
    assert burako_env.describe_action(A.add_action(2, 52)) == "add joker to meld 2"
