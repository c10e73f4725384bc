"""E3 under extreme but valid rules (issue 14, item 2): every rules object that
validates keeps the player to act with at least one legal action, on both
engines, through ``env()`` and the batched API, with 2, 3 and 4 players.

The extremes: the smallest hand (1 tile) and muerto (2 tiles: a one-tile muerto
is refused, E2, since taking it by melding would leave a tile that may not be
discarded, B20/B23, and its legality would depend on the face-down tile), the
largest hand and the largest muerto the tile set can deal (V5), and the
smallest and largest match targets (B28), each on ``burako`` and on the V3
table (``burako_casual``), and on the cards table (V2, clean canasta to close).
"""

from __future__ import annotations

import random
from collections import Counter
from typing import Any

import numpy as np
import pytest
from conftest import Engine, legal, meld_of, play

import burako_env
from burako_env import actions as A
from burako_env.engine import GameState
from burako_env.fast import MAX_HAND_SCORE, FastGame
from burako_env.rules import Rules, load_rules
from burako_env.scenario import hand_of, run
from burako_env.vector import BurakoVectorEnv, sample_legal_actions


def largest(rules: Rules, num_players: int, what: str) -> int:
    """The largest hand (muertos of 2) or muerto (hands of 1) that can be dealt (V5)."""
    total = int(rules.full_counts().sum())
    sides = rules.num_sides(num_players)
    stock = 2 if rules.mano_privilege else 1
    if what == "hand":
        return (total - 2 * sides - stock) // num_players
    return (total - num_players - stock) // sides


def extreme_tables() -> list[tuple[str, int, dict[str, Any]]]:
    """(preset, players, overrides) for every extreme."""
    out = []
    for preset in ("burako", "burako_casual", "buraco_cards"):
        base = load_rules(preset)
        for n in base.players:
            one = {"players": [n], "hand_size": {n: 1}}
            out += [
                (preset, n, {"muerto_size": 2}),
                (preset, n, {**one, "muerto_size": 2}),
                (preset, n, {"players": [n], "hand_size": {n: largest(base, n, "hand")}, "muerto_size": 2}),
                (preset, n, {**one, "muerto_size": largest(base, n, "muerto")}),
                (preset, n, {"muerto_size": 2, "target": 1}),
                (preset, n, {**one, "muerto_size": 2, "target": 1000 * MAX_HAND_SCORE}),
            ]
    return out


EXTREMES = extreme_tables()


def play_extremes(steps_per_table: int, seed0: int) -> Counter:
    """Both engines in lockstep on every extreme table until each has made
    ``steps_per_table`` steps (whole matches, hand after hand): the masks are
    never empty (E3) and always equal; every other match is played by an eager
    policy (melds and additions first, so muertos get taken and hands close)."""
    stats: Counter = Counter()
    for t, (preset, n, overrides) in enumerate(EXTREMES):
        rules = load_rules(preset, overrides)
        steps = 0
        game = 0
        while steps < steps_per_table:
            seed = seed0 + 1000 * t + game
            slow = GameState.new_game(np.random.default_rng(seed), rules, n)
            fast = FastGame.new_game(np.random.default_rng(seed), rules, n)
            pick = random.Random(seed)
            eager = game % 2 == 1
            while steps < steps_per_table and not slow.match_over:
                if slow.hand_over:
                    stats[slow.end_reason] += 1
                    slow.next_hand(np.random.default_rng([seed, slow.hand_number]))
                    fast.next_hand(np.random.default_rng([seed, fast.hand_number]))
                    continue
                mask = slow.legal_mask()
                where = f"{preset} {n}p {overrides}, seed {seed}, step {steps}"
                assert mask.any(), f"E3: the player to act has no legal action ({where})"
                assert np.array_equal(mask, fast.legal_mask()), f"the engines' masks differ ({where})"
                legal = np.flatnonzero(mask).tolist()
                plays = [a for a in legal if a >= A.MELD_BASE or A.CHOOSE_BASE <= a < A.DISCARD_BASE]
                action = pick.choice(plays if eager and plays and pick.random() < 0.9 else legal)
                slow.apply(action)
                fast.apply(action)
                steps += 1
            stats["matches_over"] += slow.match_over
            game += 1
        stats["steps"] += steps
    return stats


def test_e3_extreme_rules_never_stuck_on_both_engines() -> None:
    """E3 (B20-B23, V5, B28): on every extreme table the player to act always
    has a legal action, and both engines give the same masks (300 steps per
    table, 36 tables; the slow twin makes 3,000 per table, 108,000 in all)."""
    stats = play_extremes(300, seed0=7_000)
    assert stats["steps"] == 300 * len(EXTREMES), stats
    assert stats["closed"] > 0 and stats["matches_over"] > 0, stats


@pytest.mark.slow
def test_e3_extreme_rules_never_stuck_on_both_engines_slow() -> None:
    """E3 on the extreme tables: 3,000 steps per table (108,000 steps)."""
    stats = play_extremes(3000, seed0=70_000)
    assert stats["steps"] >= 100_000, stats


def test_e2_b20_b23_a_one_tile_muerto_is_refused() -> None:
    """E2/B20/B23: with a one-tile muerto, melding the whole hand takes it and leaves that one tile,
    which may not be discarded without a canasta; so whether the meld was legal depended on the
    face-down tile (it could complete a canasta or not), and the action mask showed it."""
    from burako_env.rules import RulesError

    with pytest.raises(RulesError, match=r"muerto_size.*at least 2.*cannot see \(E2\)"):
        load_rules("burako", {"muerto_size": 1})
    with pytest.raises(RulesError, match="muerto_size"):
        burako_env.env(rule_overrides={"muerto_size": 1})
    from burako_env.scenario import build_state

    with pytest.raises(ValueError, match=r"muertos: side 0's muerto holds 1 tile\(s\); an untaken muerto holds"):
        build_state(hands={0: "R3 R4 R5"}, muertos={0: "K1"})  # a scenario could still deal one


def test_e2_e3_b20_a_two_tile_muerto_taken_by_melding_depends_on_no_hidden_tile(engine: Engine) -> None:
    """E2/E3/B20 with muerto_size 2: melding a whole 3-tile hand takes the muerto whatever its tiles
    and whether or not the side has a canasta (public facts only): a tile can always be discarded
    after it, keeping the other (B23). The mask is the same for every muerto."""
    rules = load_rules("burako", {"muerto_size": 2})
    meld = meld_of(run("red", 3, 5))
    masks = []
    for muerto in ("K9 K10", "Y13 B1", "K1 ★"):
        for canasta in (False, True):
            table = {0: [run("black", 3, 8), *([run("blue", 5, 11)] if canasta else [])]}
            game = engine.build(2, rules, hands={0: "R3 R4 R5"}, melds=table, muertos={0: muerto})
            assert meld in legal(game)
            masks.append((canasta, tuple(legal(game))))
            play(game, meld)
            assert len(hand_of(game, 0).split()) == 2  # the muerto's two tiles
            assert game.legal_actions(), "E3"
    assert len({m for c, m in masks if c}) == 1 and len({m for c, m in masks if not c}) == 1


@pytest.mark.parametrize("num_players", [2, 4])
def test_e3_vector_env_one_tile_muerto_never_an_empty_mask_row(num_players: int) -> None:
    """E3 through the batched API (the issue: an all-zero mask row within 64
    steps): 64 games with muerto_size 1 (and 64 with hands of 1 too), 1,500
    random steps each, never an empty row."""
    for overrides in ({"muerto_size": 2}, {"muerto_size": 2, "hand_size": {2: 1, 4: 1}}):
        env = BurakoVectorEnv(64, num_players=num_players, rule_overrides=overrides, num_threads=1)
        _, masks, _ = env.reset(seed=5)
        rng = np.random.default_rng(5)
        ends = 0
        for _ in range(1500):
            assert masks.any(axis=1).all(), f"E3: an empty mask row ({overrides}, {num_players}p)"
            _, masks, _, terminated, truncated, _ = env.step(sample_legal_actions(masks, rng))
            ends += int(terminated.sum() + truncated.sum())
        assert ends > 0


@pytest.mark.parametrize("num_players", [2, 4])
@pytest.mark.parametrize("engine", ["python", "fast"])
def test_e3_aec_env_one_tile_muerto_never_an_empty_mask(engine: str, num_players: int) -> None:
    """E3 through ``env()``: hands and muertos of 1, whole matches of random
    play on each engine, the acting agent always has an action."""
    env = burako_env.env(
        num_players=num_players,
        rule_overrides={"hand_size": {2: 1, 4: 1}, "muerto_size": 2},
        engine=engine,
        match=True,
    )
    rng = np.random.default_rng(2)
    steps = 0
    for seed in range(3):
        env.reset(seed=seed)
        for _agent in env.agent_iter(max_iter=2000):
            obs, _, term, trunc, _ = env.last()
            if term or trunc:
                env.step(None)
                continue
            mask = obs["action_mask"]
            assert mask.any(), "E3: the acting agent has no legal action"
            env.step(int(rng.choice(np.flatnonzero(mask))))
            steps += 1
    assert steps > 1000
