"""The game as the RL libraries expect it: PettingZoo's parallel API and a
single-agent Gymnasium env, each passing that library's own checker."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest
from pettingzoo.test import api_test, parallel_api_test, parallel_seed_test

import burako_env
from burako_env import actions as A
from burako_env.engine import GameState
from burako_env.gym import BurakoGymEnv


# ---------------------------------------------------------------------- PettingZoo
def test_parallel_env_passes_pettingzoo_checks() -> None:
    parallel_api_test(burako_env.parallel_env(), num_cycles=200)
    parallel_seed_test(burako_env.parallel_env, num_cycles=200)


def test_parallel_env_infos_stay_as_returned_and_a_step_after_the_game_raises() -> None:
    """PettingZoo's turn-based conversion handed out the AEC env's own info dicts: the next step rewrote
    the ``active_agent`` of infos already returned. A step after the game returned four empty dicts."""
    env = burako_env.parallel_env(max_cycles=40)  # both seats act within 40 decisions (2 to 5 a turn)
    _, first = env.reset(seed=0)
    kept = [(first, {a: dict(i) for a, i in first.items()})]
    while env.agents:
        actions = {agent: env.action_space(agent).sample() for agent in env.agents}
        *_, infos = env.step(actions)
        kept.append((infos, {a: dict(i) for a, i in infos.items()}))
    assert all(returned == copy for returned, copy in kept)  # none changed after it was returned
    assert len({info["active_agent"] for infos, _ in kept[1:-1] for info in infos.values()}) == 2
    with pytest.raises(RuntimeError, match=r"step\(\): the game is over"):
        env.step({})


def test_aec_env_still_passes_api_test() -> None:
    api_test(burako_env.env(num_players=4), num_cycles=200)


def test_parallel_env_max_cycles_truncates_after_that_many_steps() -> None:
    """The parallel half of pettingzoo.test.max_cycles_test: with actions
    sampled from the action spaces, the episode ends after exactly
    ``max_cycles`` parallel steps (truncated, no score)."""
    max_cycles = 4
    env = burako_env.parallel_env(max_cycles=max_cycles)
    env.reset(seed=0)
    for step in range(max_cycles + 10):  # noqa: B007 (read after the loop)
        actions = {agent: env.action_space(agent).sample() for agent in env.agents}
        _, rewards, terminations, truncations, infos = env.step(actions)
        if all(terminations[a] or truncations[a] for a in terminations):
            break
    assert step + 1 == max_cycles
    assert all(truncations.values()) and not any(terminations.values())
    assert all(r == 0.0 for r in rewards.values())
    assert {info["end_reason"] for info in infos.values()} == {"max_cycles"}


def test_aec_env_max_cycles_truncates_after_that_many_decisions() -> None:
    """The AEC half of max_cycles_test, as it can hold in Burako: after
    exactly ``max_cycles`` decisions (of whichever agents: a turn is several
    decisions of one agent) every agent is truncated, gets no score and is
    stepped once more with ``None``; that agent counts are per decision is
    why PettingZoo's "each agent acted N times" cannot hold (README)."""
    for max_cycles in (1, 4, 9):
        env = burako_env.env(num_players=4, max_cycles=max_cycles)
        env.reset(seed=max_cycles)
        alive, dead = 0, {a: 0 for a in env.possible_agents}
        for agent in env.agent_iter():
            _, reward, termination, truncation, info = env.last()
            if termination or truncation:
                assert truncation and not termination and reward == 0.0
                assert info["end_reason"] == "max_cycles"
                dead[agent] += 1
                env.step(None)
                continue
            alive += 1
            env.step(int(env.action_space(agent).sample()))
        assert alive == max_cycles and set(dead.values()) == {1}


def test_action_space_sample_is_legal_for_the_agent_to_act() -> None:
    env = burako_env.env(num_players=2)
    env.reset(seed=1)
    space = env.action_space(env.agent_selection)
    space.seed(0)
    for _ in range(60):
        agent = env.agent_selection
        mask = env.observe(agent)["action_mask"]
        action = int(env.action_space(agent).sample())
        assert mask[action] == 1
        env.step(action)
    # an explicit mask still wins, and contains() still accepts every action id
    other = next(a for a in env.agents if a != env.agent_selection)
    assert env.action_space(other).contains(A.NUM_ACTIONS - 1)
    only = np.zeros(A.NUM_ACTIONS, dtype=np.int8)
    only[3] = 1
    assert int(env.action_space(env.agent_selection).sample(mask=only)) == 3


def test_max_cycles_is_checked() -> None:
    with pytest.raises(ValueError, match="max_cycles must be a positive integer"):
        burako_env.env(max_cycles=0)


# ---------------------------------------------------------------------- Gymnasium single agent
def test_gym_env_passes_gymnasium_and_sb3_checkers() -> None:
    from gymnasium.utils.env_checker import check_env

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # unbounded Box warnings (observation_bounds has inf for scores)
        check_env(BurakoGymEnv(opponents="random"), skip_render_check=True)
    sb3 = pytest.importorskip("stable_baselines3.common.env_checker")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sb3.check_env(BurakoGymEnv(opponents="planner", learner_seat=1))


def _play_out(env: BurakoGymEnv, seed: int, policy_seed: int = 0) -> tuple[float, dict, list[int]]:
    rng = np.random.default_rng(policy_seed)
    obs, info = env.reset(seed=seed)
    total, actions = 0.0, []
    while True:
        mask = env.action_masks()
        assert np.array_equal(mask, obs["action_mask"].astype(bool))
        assert mask.any() and env.game.current == env.learner_seat
        action = int(rng.choice(np.flatnonzero(mask)))
        actions.append(action)
        obs, reward, terminated, truncated, info = env.step(action)
        total += reward
        if terminated or truncated:
            return total, info, actions


def test_gym_env_credits_the_learners_own_hand_result() -> None:
    """The episode return is the learner's side's hand score minus the
    other's (/ reward_scale), read from the final hand's breakdown."""
    seen_nonzero = False
    for seat in (0, 1):
        env = BurakoGymEnv(opponents="random", learner_seat=seat)
        for seed in range(6):
            total, info, _ = _play_out(env, seed)
            assert info["learner_seat"] == seat and info["side"] == seat
            breakdown = info["score_breakdown"]
            if breakdown is None:
                assert total == 0.0
                continue
            mine, theirs = breakdown[seat]["total"], breakdown[1 - seat]["total"]
            assert total == pytest.approx((mine - theirs) / 1000.0)
            assert info["hand_score"] == mine
            seen_nonzero |= mine != theirs
    assert seen_nonzero


def test_gym_env_is_reproducible_from_the_seed_with_reseeded_opponents() -> None:
    a = BurakoGymEnv(opponents="random")
    b = BurakoGymEnv(opponents="random")
    first = _play_out(a, seed=7)
    _play_out(a, seed=8)  # the opponent's generator moves on
    again = _play_out(a, seed=7)  # ... and reset(seed) reseeds it
    other = _play_out(b, seed=7)
    assert first[0] == again[0] == other[0]
    assert first[2] == again[2] == other[2]
    assert first[1]["score_breakdown"] == other[1]["score_breakdown"]


def test_gym_env_opponents_can_be_callables_and_agents() -> None:
    from agents.random_agent import RandomAgent

    calls = []

    def first_legal(observation: dict[str, np.ndarray]) -> int:
        calls.append(observation["observation"].shape)
        return int(np.flatnonzero(observation["action_mask"])[0])

    env = BurakoGymEnv(opponents=[first_legal, RandomAgent(seed=1), "greedy"], num_players=4, learner_seat=2)
    _, info, _ = _play_out(env, seed=3)
    assert info["hand_over"] and calls
    with pytest.raises(ValueError, match="3 opponent seats"):
        BurakoGymEnv(opponents=["random"], num_players=4)
    with pytest.raises(ValueError, match="learner_seat"):
        BurakoGymEnv(learner_seat=2)


def test_gym_env_illegal_action_ends_the_episode_or_raises() -> None:
    env = BurakoGymEnv()
    obs, _ = env.reset(seed=0)
    illegal = int(np.flatnonzero(obs["action_mask"] == 0)[0])
    _, reward, terminated, truncated, info = env.step(illegal)
    assert (reward, terminated, truncated, info["illegal_action"]) == (-1.0, True, False, True)
    with pytest.raises(RuntimeError, match="reset"):
        env.step(0)
    strict = BurakoGymEnv(illegal="raise")
    strict.reset(seed=0)
    before = strict.game.st.copy()
    with pytest.raises(ValueError, match="illegal action"):
        strict.step(illegal)
    assert np.array_equal(strict.game.st, before)


# ---------------------------------------------------------------------- Gymnasium vector env
def _random_rows(masks: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    return np.array([rng.choice(np.flatnonzero(row)) for row in masks], dtype=np.int64)


def test_vector_env_spaces_and_fresh_arrays() -> None:
    from gymnasium.vector import AutoresetMode, VectorEnv

    from burako_env.gym_vector import BurakoGymVectorEnv

    envs = BurakoGymVectorEnv(3)
    assert isinstance(envs, VectorEnv)
    assert envs.metadata["autoreset_mode"] is AutoresetMode.SAME_STEP
    obs, _ = envs.reset(seed=0)
    assert obs["observation"].shape == (3, envs.obs_size) and obs["action_mask"].dtype == np.int8
    assert envs.observation_space.contains(obs)
    assert envs.single_observation_space["observation"].shape == (envs.obs_size,)
    assert envs.action_space.shape == (3,) and envs.single_action_space.n == A.NUM_ACTIONS
    kept = {k: v.copy() for k, v in obs.items()}
    obs2, *_ = envs.step(_random_rows(obs["action_mask"], np.random.default_rng(0)))
    assert all(np.array_equal(kept[k], obs[k]) for k in obs)  # stepping did not write into what we hold
    assert obs2["observation"] is not obs["observation"]
    assert np.array_equal(obs2["action_mask"].astype(bool), envs.action_masks())


def test_vector_env_same_step_autoreset_credits_the_learner() -> None:
    """A finished game reports its final observation and info in the step
    that ended it and is already dealt again; the reward is the learner
    side's hand result (score minus the other's, / 1000)."""
    from burako_env.gym_vector import BurakoGymVectorEnv

    envs = BurakoGymVectorEnv(4, learner_seat="alternate")
    obs, _ = envs.reset(seed=1)
    rng = np.random.default_rng(2)
    finished = 0
    for _ in range(600):
        obs, rewards, terminated, truncated, infos = envs.step(_random_rows(obs["action_mask"], rng))
        done = terminated | truncated
        for i in np.flatnonzero(done):
            finished += 1
            assert infos["_final_obs"][i] and infos["_final_info"][i]
            final = infos["final_info"]
            assert final["learner_seat"][i] == i % 2
            assert not infos["final_obs"][i]["action_mask"].any()
            breakdown = final["score_breakdown"][i]
            if breakdown is None:
                assert rewards[i] == 0.0 and not final["has_score"][i]
            else:
                side = final["side"][i]
                expected = (breakdown[side]["total"] - breakdown[1 - side]["total"]) / 1000.0
                assert rewards[i] == pytest.approx(expected, abs=1e-6)
                assert final["hand_score"][i] == breakdown[side]["total"]
            assert obs["action_mask"][i].any()  # the new hand, learner to act
        for i in np.flatnonzero(~done):
            assert rewards[i] == 0.0
        if finished >= 6:
            break
    assert finished >= 6


def test_vector_env_is_reproducible_and_accepts_a_batched_opponent() -> None:
    from burako_env.gym_vector import BurakoGymVectorEnv

    seen: list[int] = []

    def first_legal(observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
        assert observations.shape[0] == masks.shape[0]
        seen.append(masks.shape[0])
        return masks.argmax(axis=1)

    runs = []
    for _ in range(2):
        envs = BurakoGymVectorEnv(3, opponent=first_legal, learner_seat=1)
        obs, _ = envs.reset(seed=5)
        rng = np.random.default_rng(0)
        for _ in range(30):
            obs, *_ = envs.step(_random_rows(obs["action_mask"], rng))
        runs.append(obs["observation"])
    assert np.array_equal(runs[0], runs[1]) and seen
    envs = BurakoGymVectorEnv(2)
    obs, _ = envs.reset(seed=0)
    illegal = np.array([np.flatnonzero(obs["action_mask"][0] == 0)[0], 0])
    before = envs._states.copy()
    with pytest.raises(ValueError, match="illegal learner actions"):
        envs.step(illegal)
    assert np.array_equal(envs._states, before)


def test_vector_env_under_gymnasium_vector_wrappers() -> None:
    from gymnasium.wrappers.vector import NormalizeReward, RecordEpisodeStatistics

    from burako_env.gym_vector import BurakoGymVectorEnv

    envs = RecordEpisodeStatistics(NormalizeReward(BurakoGymVectorEnv(4)))
    obs, _ = envs.reset(seed=0)
    rng = np.random.default_rng(0)
    episodes = 0
    for _ in range(800):
        obs, _, _, _, infos = envs.step(_random_rows(obs["action_mask"], rng))
        if "episode" in infos:
            episodes += int(infos["_episode"].sum())
        if episodes >= 3:
            break
    assert episodes >= 3 and len(envs.return_queue) == episodes


# ---------------------------------------------------------------------- OpenSpiel
def test_openspiel_adapter_states_clone_resample_and_score() -> None:
    pyspiel = pytest.importorskip("pyspiel")
    from burako_env.engine import GameState
    from burako_env.openspiel import resample_from_infostate

    game = pyspiel.load_game("python_burako", {"players": 2, "num_deals": 50})
    state = game.new_initial_state()
    assert state.is_chance_node() and len(state.chance_outcomes()) == 50
    with pytest.raises(ValueError, match=r"chance outcome 1000000000 is not a deal 0\.\.49"):
        state.apply_action(10**9)  # a deal outside the game's chance outcomes
    assert state.is_chance_node()
    state.apply_action(7)
    assert state.engine.to_dict() == GameState.new_game(np.random.default_rng(7), "burako", 2).to_dict()
    rng = np.random.default_rng(0)
    for _ in range(40):
        state.apply_action(int(rng.choice(state.legal_actions())))
    player = state.current_player()
    sample = resample_from_infostate(state, player, np.random.default_rng(1))
    assert sample.information_state_string(player) == state.information_state_string(player)
    assert np.array_equal(sample.observation_tensor(player), state.observation_tensor(player))
    assert sample.legal_actions() == state.legal_actions()
    other = 1 - player
    assert sample.engine.hands[other].tolist() != state.engine.hands[other].tolist()  # hidden tiles resampled
    clone = state.clone()
    clone.apply_action(clone.legal_actions()[0])
    assert clone.history() != state.history() and clone.engine.to_dict() != state.engine.to_dict()
    while not state.is_terminal():
        state.apply_action(int(rng.choice(state.legal_actions())))
    returns = state.returns()
    assert sum(returns) == pytest.approx(0.0)
    scores = state.engine.hand_scores
    if scores is not None:
        assert returns[0] == pytest.approx((scores[0].total - scores[1].total) / 1000.0)


def test_openspiel_information_states_have_perfect_recall() -> None:
    """Melding R3-4-5 then adding R6, or R4-5-6 then adding R3, leaves the same table and hand: the
    observation is the same, but the seat played different moves, so OpenSpiel's information state
    (perfect recall) must differ; it was a digest of the observation alone. Clones, pickles, serialized
    states and the seat's determinizations keep it."""
    pyspiel = pytest.importorskip("pyspiel")
    import pickle

    from burako_env.openspiel import BurakoState, resample_from_infostate
    from burako_env.scenario import build_state

    game = pyspiel.load_game("python_burako", {"players": 2})

    def by_text(state: Any, text: str) -> int:
        return next(a for a in state.legal_actions() if state.engine.describe(a).startswith(text))

    ends = []
    for first, then in (("meld red 3-4-5", "add red 6"), ("meld red 4-5-6", "add red 3")):
        state = BurakoState(game, build_state(hands={0: "R3 R4 R5 R6 B9 B10", 1: "K3 K4"}, stock="B1 B2 B3"))
        state.apply_action(by_text(state, first))
        state.apply_action(by_text(state, then))
        ends.append(state)
    a, b = ends
    assert a.observation_string(0) == b.observation_string(0)
    assert a.information_state_string(0) != b.information_state_string(0)
    assert a.information_state_string(1) != b.information_state_string(1)  # the other seat saw the moves too
    again = pickle.loads(pickle.dumps(a))
    assert again.information_state_string(0) == a.information_state_string(0) == a.clone().information_state_string(0)
    dealt = game.new_initial_state()
    dealt.apply_action(3)
    dealt.apply_action(dealt.legal_actions()[0])
    _, restored = pyspiel.deserialize_game_and_state(pyspiel.serialize_game_and_state(game, dealt))
    assert restored.information_state_string(1) == dealt.information_state_string(1)
    player = dealt.current_player()
    sample = resample_from_infostate(dealt, player, np.random.default_rng(2))
    assert sample.information_state_string(player) == dealt.information_state_string(player)
    # nothing of the truth: the real history starts with the deal's seed (replayed, it rebuilds every
    # hidden tile), and the other seat's string was a digest of its true hand
    assert sample.history() == [] and dealt.history()[0] == 3
    other = 1 - player
    again = resample_from_infostate(dealt, player, np.random.default_rng(2))
    assert again.information_state_string(other) == sample.information_state_string(other)
    assert sample.information_state_string(other) != dealt.information_state_string(other)
    seeded = [
        dealt.resample_from_infostate(player, pyspiel.UniformProbabilitySampler(7, 0.0, 1.0)).engine.to_dict()
        for _ in range(2)
    ]
    assert seeded[0] == seeded[1]  # a seeded sampler gives the same sample (it drew from the OS every time)


def test_openspiel_information_states_tell_apart_only_what_the_seat_saw() -> None:
    """Perfect recall both ways: seat 0 drawing B1 or B2 from the stock, then discarding B9, are two
    histories seat 0 tells apart (the drawn tile) and seat 1 does not (the stock is face down), so
    seat 0's information states differ and seat 1's are equal. A privilege tile rejected face up
    (B17) is seen by both seats, so both tell apart which tile it was."""
    pyspiel = pytest.importorskip("pyspiel")
    from burako_env.engine import Phase
    from burako_env.openspiel import BurakoState
    from burako_env.scenario import build_state, tile

    game = pyspiel.load_game("python_burako", {"players": 2})
    ends = []
    for top in ("B1", "B2"):
        engine = build_state(hands={0: "R3 R4 B9", 1: "K3 K4"}, stock=f"{top} B5 B6", phase=Phase.DRAW, turn=1)
        state = BurakoState(game, engine)
        assert state.information_state_string(1) == BurakoState(game, engine.clone()).information_state_string(1)
        state.apply_action(A.DRAW_STOCK)
        state.apply_action(A.discard_action(tile("B9")))
        ends.append(state)
    drew_b1, drew_b2 = ends
    assert drew_b1.information_state_string(0) != drew_b2.information_state_string(0)
    assert drew_b1.information_state_string(1) == drew_b2.information_state_string(1)
    rejected = []
    for privilege in ("B1", "B2"):
        engine = build_state(
            hands={0: f"R3 R4 B9 {privilege}", 1: "K3 K4"},
            stock="B5 B6",
            phase=Phase.PRIVILEGE,
            privilege_tile=privilege,
            overrides={"mano_privilege": True},
        )
        state = BurakoState(game, engine)
        state.apply_action(A.REJECT)
        rejected.append(state)
    assert rejected[0].information_state_string(1) != rejected[1].information_state_string(1)


def _unseen_counts(state: GameState, other: int) -> np.ndarray:
    """Tile counts of what ``other``'s opponent cannot see: his hand, the
    stock and the untaken muertos."""
    kinds = state.hands.shape[1]
    counts = np.bincount(state.stock, minlength=kinds) + state.hands[other]
    for side, muerto in enumerate(state.muertos):
        if not state.muerto_taken[side]:
            counts = counts + np.bincount(muerto, minlength=kinds)
    return counts


def test_gym_opponent_view_shows_what_the_seat_sees_and_resamples_the_rest() -> None:
    """E2: the view an opponent gets on the compiled engine (resampled on the
    flat state by ``FastGame.determinize``) equals the real state in all the
    seat can see, and keeps the multiset of the tiles it cannot see."""
    from burako_env.gym import _FastSeatView

    env = burako_env.env(num_players=2)
    env.reset(seed=7)
    rng = np.random.default_rng(0)
    resampled = 0
    for step in range(120):  # noqa: B007 (read after the loop)
        agent = env.agent_selection
        seat = env.unwrapped.agent_name_mapping[agent]
        game = env.unwrapped.state_
        real = game.to_game_state()
        view = _FastSeatView(game, seat, rng)
        assert np.array_equal(view.hand, real.hands[seat])
        assert view.pile == real.pile and view.hand_sizes == real.hand_size
        assert view.stock_size == len(real.stock) and view.muerto_taken == real.muerto_taken
        assert view.melds == real.melds
        sampled = view._state
        other = 1 - seat
        assert np.array_equal(_unseen_counts(sampled, other), _unseen_counts(real, other))
        resampled += int(not np.array_equal(sampled.hands[other], real.hands[other]))
        mask = env.observe(agent)["action_mask"]
        env.step(int(rng.choice(np.flatnonzero(mask))))
        if env.terminations[env.agent_selection] or env.truncations[env.agent_selection]:
            break
    assert step > 50 and resampled > step // 2  # the hidden hand really is resampled


def test_an_opponent_that_fails_mid_step_ends_the_episode_instead_of_shifting_seats() -> None:
    """An opponent's illegal answer came after the learner's move was applied: the game then waited
    on the opponent's seat, and the next step() played the learner's action there. Now the episode
    (Gym) or the games (Gym vector) end with the error, and step() asks for reset()."""
    from burako_env.gym_vector import BurakoGymVectorEnv

    answers = iter([3518])

    def once_illegal(observation: dict[str, np.ndarray]) -> int:
        return next(answers, int(np.flatnonzero(observation["action_mask"])[0]))

    env = BurakoGymEnv(opponents=once_illegal, learner_seat=0)
    env.reset(seed=1)
    with pytest.raises(ValueError, match=r"opponent in seat 1 answered an illegal action 3518; the episode ends"):
        while True:  # the learner acts until the opponent is asked
            env.step(int(np.flatnonzero(env.action_masks())[-1]))
    assert not env.action_masks().any()  # nothing is the learner's to play
    with pytest.raises(RuntimeError, match="call reset"):
        env.step(0)
    env.reset(seed=1)  # and reset starts a good episode
    env.step(int(np.flatnonzero(env.action_masks())[-1]))

    envs = BurakoGymVectorEnv(1, opponent=lambda observations, masks: np.full(len(masks), 3518))
    with pytest.raises(ValueError, match=r"illegal opponent actions .*the games stopped mid-step: call reset"):
        envs.reset(seed=1)
        while True:
            envs.step(np.flatnonzero(envs.action_masks()[0])[-1:])
    assert not envs.action_masks().any()  # it offered the opponent seat's actions as the learner's
    with pytest.raises(RuntimeError, match="call reset"):
        envs.step(np.zeros(1, dtype=np.int64))


@pytest.mark.parametrize("seed", [1.5, -1, "ab", [True, False], [1, 2, 3], object()])
def test_vector_env_reset_refuses_seeds_that_are_not_non_negative_integers(seed: object) -> None:
    """seed=1.5 said "'float' object is not iterable", [True, False] was taken as [1, 0]."""
    from burako_env.gym_vector import BurakoGymVectorEnv

    envs = BurakoGymVectorEnv(2)
    with pytest.raises(ValueError, match=r"seed must be|seeds for 2 games"):
        envs.reset(seed=seed)  # type: ignore[arg-type]
    obs, _ = envs.reset(seed=np.int64(5))
    again, _ = BurakoGymVectorEnv(2).reset(seed=5)
    assert np.array_equal(obs["observation"], again["observation"])  # numpy integers are integers


def test_gym_vector_env_partial_reset_deals_only_the_masked_games() -> None:
    """Gymnasium 1.x's reset(options={"reset_mask": mask}) (SyncVectorEnv's partial reset): options
    were ignored, so every game was dealt again from fresh entropy, and bad options passed."""
    from burako_env.gym_vector import BurakoGymVectorEnv

    def first_legal(observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
        return masks.argmax(axis=1)

    envs = BurakoGymVectorEnv(3, opponent=first_legal, learner_seat=1)
    obs, _ = envs.reset(seed=1)
    rng = np.random.default_rng(0)
    for _ in range(5):
        obs, *_ = envs.step(np.array([rng.choice(np.flatnonzero(m)) for m in obs["action_mask"]]))
    before = [envs.game_state(i).to_dict() for i in range(3)]
    obs, infos = envs.reset(seed=[None, 8, 9], options={"reset_mask": np.array([False, True, False])})
    assert infos == {}
    assert envs.game_state(0).to_dict() == before[0] and envs.game_state(2).to_dict() == before[2]
    # game 1 of seed 7 is default_rng(8)'s deal
    fresh, _ = BurakoGymVectorEnv(3, opponent=first_legal, learner_seat=1).reset(seed=7)
    assert np.array_equal(obs["observation"][1], fresh["observation"][1])
    for options, error, message in (
        ({"reset_mask": [False, True, False]}, TypeError, "must be a numpy array"),
        ({"reset_mask": np.ones(2, bool)}, ValueError, r"must have shape \(3,\)"),
        ({"reset_mask": np.ones(3, np.int8)}, TypeError, "must have dtype bool"),
        ({"reset_mask": np.zeros(3, bool)}, ValueError, "resets no game"),
        ({"seed_all": True}, ValueError, r"unknown option\(s\) \['seed_all'\]"),
    ):
        with pytest.raises(error, match=message):
            envs.reset(options=options)
        assert envs.game_state(0).to_dict() == before[0]
    with pytest.raises(RuntimeError, match="call reset\\(\\) without it first"):
        BurakoGymVectorEnv(2).reset(options={"reset_mask": np.ones(2, bool)})


def test_vector_envs_take_none_in_a_list_of_seeds_and_close() -> None:
    """Gymnasium's seed type is int | list[int | None] | None: a None entry was refused with
    "must be a non-negative integer or None". BurakoVectorEnv had no close() for generic teardown."""
    from burako_env.gym_vector import BurakoGymVectorEnv
    from burako_env.vector import BurakoVectorEnv

    raw = BurakoVectorEnv(2, num_threads=1)
    obs, _masks, _info = raw.reset(seed=[None, 7])
    same, _masks, _info = BurakoVectorEnv(2, num_threads=1).reset(seed=[3, 7])
    assert np.array_equal(obs[1], same[1])
    raw.close()
    with pytest.raises(RuntimeError, match="call reset"):
        raw.step(np.zeros(2, dtype=np.int64))

    def first_legal(observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
        return masks.argmax(axis=1)

    gym_obs, _ = BurakoGymVectorEnv(2, opponent=first_legal, learner_seat=1).reset(seed=[None, 7])
    gym_same, _ = BurakoGymVectorEnv(2, opponent=first_legal, learner_seat=1).reset(seed=[3, 7])
    assert np.array_equal(gym_obs["observation"][1], gym_same["observation"][1])
    with pytest.raises(ValueError, match="each listed seed must be a non-negative integer"):
        BurakoGymVectorEnv(2).reset(seed=[-1, 7])


# ---------------------------------------------------------------------- faults found in review (2026-12-05)
def test_gym_env_takes_a_0d_array_action_as_sb3s_predict_returns_one() -> None:
    """MaskablePPO.predict(obs) returns a 0-d int64 array; the env counted it illegal and ended the
    episode. A 0-d integer array is its integer. What is no action id at all (a float, a bool, a batch
    of one, an id outside the space) ended the episode with illegal_reward as if it were a move, so a
    policy answering a batch of one learned from -1 every episode: now a ValueError, whatever `illegal`
    says, and nothing changes."""
    env = BurakoGymEnv()  # illegal="terminate"
    obs, _ = env.reset(seed=0)
    legal = int(np.flatnonzero(obs["action_mask"])[0])
    before = env.game.st.copy()
    for bad in (np.array(float(legal)), np.array(True), np.array([legal]), float(legal), str(legal), None, 3519):
        with pytest.raises(ValueError, match=r"step\(\) of the learner \(seat \d\) gave no action id"):
            env.step(bad)
        assert np.array_equal(env.game.st, before)
    _, _, terminated, truncated, info = env.step(np.array(legal))
    assert "illegal_action" not in info and not (terminated or truncated)
    # an opponent callable answering a 0-d array (lambda obs: model.predict(obs)[0]) plays it
    mirror = BurakoGymEnv(opponents=lambda o: np.array(np.flatnonzero(o["action_mask"])[0]), learner_seat=1)
    mirror.reset(seed=0)
    assert mirror.game.current == 1


def test_gym_vector_envs_opponent_stream_is_not_a_games_deal_stream(monkeypatch: pytest.MonkeyPatch) -> None:
    """reset(seed=[5]) (or [5, 0]) gave the random opponent SeedSequence([5]), which is default_rng(5):
    game 0's deck shuffle, replayed as the opponent's draws."""
    from burako_env.gym_vector import BurakoGymVectorEnv

    real = np.random.default_rng
    given: list[Any] = []
    monkeypatch.setattr(np.random, "default_rng", lambda seed=None: given.append(seed) or real(seed))
    for seeds in ([5], [5, 0]):
        envs = BurakoGymVectorEnv(len(seeds))
        given.clear()
        envs.reset(seed=seeds)
        opponent = real(given[len(seeds)]).bit_generator.state  # reset builds the games', then the opponent's
        assert all(opponent != real(s).bit_generator.state for s in seeds), seeds


def test_gym_env_an_opponent_that_cannot_take_its_seat_leaves_nothing_to_step() -> None:
    """An opponent whose reset() raised (a policy of another layout, a flaky plug-in) left the env live
    with the opponent to act: the next step() played the learner's action in the opponent's seat."""

    class FailsToSit:
        calls = 0

        def reset(self, seat: int, rules: Any = None, num_players: int = 2) -> None:
            FailsToSit.calls += 1
            if FailsToSit.calls >= 2:
                raise RuntimeError("agent failed to reset")

        def act(self, observation: dict[str, np.ndarray], view: Any) -> int:
            return int(np.flatnonzero(observation["action_mask"])[0])

    env = BurakoGymEnv(opponents=FailsToSit(), learner_seat=0)
    env.reset(seed=3)  # the first reset seats it
    with pytest.raises(RuntimeError, match="agent failed to reset"):
        env.reset(seed=3)
    with pytest.raises(RuntimeError, match="call reset"):
        env.step(0)
    # with match=True the next hand's seating happens inside step(): the same
    FailsToSit.calls = 0
    match = BurakoGymEnv(opponents=FailsToSit(), learner_seat=0, match=True, rule_overrides={"target": 20000})
    match.reset(seed=3)
    with pytest.raises(RuntimeError, match="agent failed to reset"):
        while True:
            match.step(int(np.flatnonzero(match.action_masks())[0]))
    with pytest.raises(RuntimeError, match="call reset"):
        match.step(0)


def test_gym_env_seeds_are_checked_as_every_envs_are() -> None:
    """BurakoGymEnv passed its seed to Gymnasium unchecked: np.int64(3) was refused ("Seed must be a
    python integer") and True was taken as 1, where the AEC and vector envs do the opposite."""
    env = BurakoGymEnv()
    obs, _ = env.reset(seed=np.int64(3))
    again, _ = BurakoGymEnv().reset(seed=3)
    assert np.array_equal(obs["observation"], again["observation"])
    for bad in (True, -1, 1.5, "3"):
        with pytest.raises(ValueError, match="seed must be a non-negative integer"):
            env.reset(seed=bad)  # type: ignore[arg-type]


def test_gym_env_with_match_keeps_the_summary_of_a_hand_the_learners_move_ended() -> None:
    """match=True: when the learner's move ended a hand the opponents then played on into the next one,
    whose (empty) info replaced the ended hand's summary."""
    env = BurakoGymEnv(opponents="random", match=True, rule_overrides={"target": 20000})
    obs, _ = env.reset(seed=1)
    rng = np.random.default_rng(0)
    ended = 0
    for _ in range(3000):
        hand = env.game.hand_number
        obs, _, terminated, truncated, info = env.step(int(rng.choice(np.flatnonzero(obs["action_mask"]))))
        if terminated or truncated:
            obs, _ = env.reset()
        elif env.game.hand_number != hand:
            ended += 1
            assert info.get("hand_over") and "end_reason" in info, info
    assert ended >= 5


def test_gym_env_deals_again_when_the_opponents_end_the_hand_before_the_learners_first_decision() -> None:
    """With max_turns 1 the opponent's first turn can end the hand: reset returned a finished episode
    (an empty mask) whose step() raised; it deals again, as the vector env does."""
    env = BurakoGymEnv(opponents="random", learner_seat=1, max_turns=1)
    for seed in range(6):
        obs, _ = env.reset(seed=seed)
        assert obs["action_mask"].any(), seed
        env.step(int(np.flatnonzero(obs["action_mask"])[0]))


def test_aec_env_gives_an_agent_truncated_by_max_cycles_no_legal_action() -> None:
    env = burako_env.env(max_cycles=5)
    env.reset(seed=0)
    for _ in range(5):
        obs, *_ = env.last()
        env.step(int(np.flatnonzero(obs["action_mask"])[0]))
    obs, _, terminated, truncated, _ = env.last()
    assert truncated and not terminated and not obs["action_mask"].any()


def test_aec_env_keeps_the_last_hands_summary_when_it_refuses_an_action() -> None:
    """match=True: an illegal action is refused and changes nothing; it erased the last hand's summary."""
    env = burako_env.raw_env(match=True, rule_overrides={"target": 50000})
    env.reset(seed=3)
    rng = np.random.default_rng(0)
    while not env.infos[env.agent_selection].get("hand_over"):
        obs = env.observe(env.agent_selection)
        env.step(int(rng.choice(np.flatnonzero(obs["action_mask"]))))
    agent = env.agent_selection
    summary = dict(env.infos[agent])
    illegal = int(np.flatnonzero(env.observe(agent)["action_mask"] == 0)[0])
    with pytest.raises(ValueError, match="not legal"):
        env.step(illegal)
    assert env.infos[agent] == summary


def test_vector_env_index_arguments_are_checked_before_the_kernels_read_them() -> None:
    """table_margins read game indices unchecked: past the end it crashed the process, -1 wrapped."""
    from burako_env.vector import BurakoVectorEnv

    env = BurakoVectorEnv(3, num_threads=1)
    env.reset(seed=0)
    for games, seats, said in (
        ([3], [0], r"games must lie in \[0, 3\)"),
        ([-1], [0], r"games must lie in \[0, 3\)"),
        ([0], [2], r"seats must lie in \[0, 2\)"),
        ([0, 1], [0], "2 games but 1 seats"),
        ([0.0], [0], "1-d array of integers"),
    ):
        for method in (env.table_margins, env.privileged):
            with pytest.raises(ValueError, match=said):
                method(np.array(games), np.array(seats))
    assert env.table_margins(np.array([0, 2]), np.array([0, 1])).shape == (2,)
    # a 0-d seed array is its number (it raised a bare TypeError); a 0-d float array is refused by name
    first = env.reset(seed=np.array(5))[0].copy()
    assert np.array_equal(first, env.reset(seed=5)[0])
    with pytest.raises(ValueError, match="seed"):
        env.reset(seed=np.array(5.0))


def test_vector_gym_env_refuses_an_opponent_policys_float_answers() -> None:
    """The learner's actions must be integers; the opponent policy's were cast, 2.7 played as 2."""
    from burako_env.gym_vector import BurakoGymVectorEnv

    def floats(obs: np.ndarray, masks: np.ndarray) -> np.ndarray:
        return np.array([np.flatnonzero(m)[0] for m in masks], dtype=np.float64) + 0.7

    env = BurakoGymVectorEnv(2, opponent=floats, learner_seat=1)
    with pytest.raises(ValueError, match="the opponent policy: actions must be an integer array"):
        env.reset(seed=0)


def test_each_vector_env_steps_on_its_own_thread_count(monkeypatch: pytest.MonkeyPatch) -> None:
    """num_threads set numba's count for the whole calling thread when an env was built: a second env
    with another count moved the first one's steps onto it. Each env now sets its own around its kernels
    and gives the caller's back."""
    import numba

    import burako_env.vector as vector

    most = numba.config.NUMBA_NUM_THREADS
    if most < 2:
        pytest.skip("needs numba with 2 threads or more")
    seen: list[tuple[str, int]] = []

    def spied(name: str) -> Any:
        real = getattr(vector, name)

        def spy(*args: object) -> None:
            seen.append((name, numba.get_num_threads()))
            real(*args)

        return spy

    for name in ("_step_all", "_step_all_serial"):
        monkeypatch.setattr(vector, name, spied(name))
    outer = numba.get_num_threads()
    one, two = vector.BurakoVectorEnv(4, num_threads=1), vector.BurakoVectorEnv(4, num_threads=2)
    for env in (one, two, one):
        _, masks, _ = env.reset(seed=0)
        env.step(vector.sample_legal_actions(masks, np.random.default_rng(0)))
    # one thread: the serial kernel (no parallel launch, one scratch block); more: the parallel one
    assert seen == [("_step_all_serial", 1), ("_step_all", 2), ("_step_all_serial", 1)]
    assert numba.get_num_threads() == outer
    with pytest.raises(ValueError, match=rf"num_threads {most + 1}: numba has {most} threads"):
        vector.BurakoVectorEnv(2, num_threads=most + 1)


def test_gym_env_opponents_are_counted_from_the_learners_left() -> None:
    """With 4 players and learner_seat="random", opponents[1] played the partner only from seats 0 and 2
    (the others were matched in absolute seat order): opponents[k] now sits k + 1 seats after the learner."""
    names = ["left", "partner", "right"]
    agents = [_named(name) for name in names]
    env = BurakoGymEnv(opponents=agents, num_players=4, learner_seat="random")
    seen = set()
    for seed in range(12):
        env.reset(seed=seed)
        learner = env.learner_seat
        seen.add(learner)
        sitting = {seat: agent.label for seat, agent in env._seat_agents.items()}
        assert sitting == {(learner + k + 1) % 4: names[k] for k in range(3)}
    assert seen == {0, 1, 2, 3}


def _named(label: str) -> Any:
    class Named:
        def reset(self, seat: int, rules: Any = None, num_players: int = 2) -> None:
            pass

        def act(self, observation: dict[str, np.ndarray], view: Any = None) -> int:
            return int(np.flatnonzero(observation["action_mask"])[0])

    agent = Named()
    agent.label = label  # type: ignore[attr-defined]
    return agent


# ---------------------------------------------------------------------- faults found in review (2026-12-06)
def _first_hand_decisions(seed: int) -> int:
    """The decision at which the first hand of a seeded random match ends (the same games as below)."""
    env = burako_env.env(num_players=2, match=True, rule_overrides={"target": 5000})
    env.reset(seed=seed)
    rng = np.random.default_rng(seed)
    for decisions, _agent in enumerate(env.agent_iter(), start=1):
        obs, *_ = env.last()
        env.step(int(rng.choice(np.flatnonzero(obs["action_mask"]))))
        if env.unwrapped.game.hand_number:
            return decisions
    raise AssertionError("the first hand did not end")


def test_max_cycles_holds_when_a_match_hand_ends_on_the_last_decision_and_summaries_reach_everyone() -> None:
    """The max_cycles check was skipped on the decision that ended a hand of a match: the episode played
    one decision more, and the cut then replaced the hand's summary before the other agent saw it. The
    parallel env handed a hand's summary out again at every step until its agent acted, and its reset
    infos did not name the agent to act."""
    n = _first_hand_decisions(seed=1)
    env = burako_env.env(num_players=2, match=True, rule_overrides={"target": 5000}, max_cycles=n)
    env.reset(seed=1)
    rng = np.random.default_rng(1)
    decisions, end_infos = 0, {}
    for agent in env.agent_iter():
        obs, _reward, termination, truncation, info = env.last()
        if termination or truncation:
            end_infos[agent] = info
            env.step(None)
            continue
        env.step(int(rng.choice(np.flatnonzero(obs["action_mask"]))))
        decisions += 1
    assert decisions == n
    assert all(info["hand_over"] and info["hand_number"] == 0 and info["max_cycles"] for info in end_infos.values())
    assert len(end_infos) == 2

    parallel = burako_env.parallel_env(num_players=2, match=True, rule_overrides={"target": 5000})
    obs, infos = parallel.reset(seed=1)
    assert {info["active_agent"] for info in infos.values()} == {
        a for a in parallel.agents if obs[a]["action_mask"].any()
    }
    rng = np.random.default_rng(1)
    summaries: list[tuple[str, int]] = []
    for _ in range(n + 40):
        actor = infos[parallel.agents[0]]["active_agent"]
        actions = dict.fromkeys(parallel.agents, 0)
        actions[actor] = int(rng.choice(np.flatnonzero(obs[actor]["action_mask"])))
        obs, _rewards, _terminations, _truncations, infos = parallel.step(actions)
        summaries += [(agent, info["hand_number"]) for agent, info in infos.items() if info.get("hand_over")]
    assert sorted(summaries) == [("player_0", 0), ("player_1", 0)]  # once each, not once per step


def test_wrapped_envs_refuse_a_step_after_the_game_and_take_0d_integer_actions() -> None:
    """PettingZoo's OrderEnforcingWrapper only printed a warning for a step after the game (the raw
    env raises); a parallel step before reset was an AttributeError; a 0-d integer array, which the
    action space contains, was refused; rummy_env.step(True) ended in numpy's "truth value ... ambiguous"."""
    for make in (burako_env.env, burako_env.rummy_env):
        env = make(num_players=2)
        env.reset(seed=3)
        with pytest.raises(ValueError, match="action must be an integer, got bool True"):
            env.step(True)
        for _agent in env.agent_iter():
            obs, _reward, termination, truncation, _info = env.last()
            env.step(None if termination or truncation else np.array(np.flatnonzero(obs["action_mask"])[0]))
        with pytest.raises(RuntimeError, match=r"step\(0\): the game is over"):
            env.step(0)
    with pytest.raises(RuntimeError, match=r"call reset\(\) before step\(\)"):
        burako_env.parallel_env().step({"player_0": 0})


def test_rummy_match_infos_say_a_hand_ended_once_per_agent() -> None:
    """rummy_env(match=True) kept a hand's summary in every agent's info for the whole next hand, and the
    summary did not say it was one (Burako's env clears it when the agent acts)."""
    env = burako_env.rummy_raw_env(num_players=2, match=True)
    env.reset(seed=2)
    rng = np.random.default_rng(0)
    seen: list[tuple[str, int]] = []
    for agent in env.agent_iter():
        obs, _reward, termination, truncation, info = env.last()
        if info:
            assert info["hand_over"] and set(info) >= {"hand_number", "match_over", "hand_scores"}
            seen.append((agent, info["hand_number"]))
        env.step(None if termination or truncation else int(rng.choice(np.flatnonzero(obs["action_mask"]))))
    hands = env.unwrapped.game.rules.hands_per_match
    assert sorted(seen) == sorted((a, h) for a in ("player_0", "player_1") for h in range(hands))
