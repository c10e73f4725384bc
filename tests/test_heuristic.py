"""The heuristic package: its decisions pinned on fixed-seed games (a
refactor must not change a single action), and its weights: one frozen
dataclass that reaches every agent and policy, with clear errors."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from typing import Any

import numpy as np
import pytest

from agents.heuristic import (
    GREEDY_WEIGHTS,
    PLANNER_WEIGHTS,
    GreedyMelder,
    GreedyPolicy,
    HeuristicWeights,
    Planner,
    PlannerPolicy,
    evaluate_sides,
)
from agents.registry import make_agent
from agents.runner import play_game
from burako_env.engine import GameState


def game_digest(agents: list[Any], rules: str, num_players: int, seed: int) -> tuple[str, int]:
    """Play one hand through the runner (seat ``p`` gets ``agents[p]``) and
    return a digest of its actions and their count."""
    actions = play_game(agents, rules, num_players, seed).record["actions"]  # type: ignore[index]
    return hashlib.sha256(json.dumps(actions).encode()).hexdigest()[:16], len(actions)


def seats(names: list[str], num_players: int, seed: int, **options: Any) -> list[Any]:
    return [
        make_agent(names[p % len(names)], seed=seed + p, **options.get(names[p % len(names)], {}))
        for p in range(num_players)
    ]


# Recorded on the single-module agents/heuristic.py before the package split
# (issue 13). Change them only with a deliberate change of the heuristics.
PINNED = [
    ("burako", 2, 0, ("planner", "greedy"), ("fb89e35641452aea", 125)),
    ("burako", 4, 0, ("greedy", "planner"), ("6491a92761011223", 136)),
    ("burako_br", 2, 1, ("planner", "greedy"), ("7d3c52d29555ab6f", 66)),
    ("burako_casual", 3, 0, ("planner", "greedy"), ("f2920a60d52de14c", 94)),
    ("burako_royal", 4, 1, ("greedy", "planner"), ("8e57edde6bb26c14", 67)),
    ("buraco_cards", 2, 0, ("greedy", "planner"), ("e7602bd8eed26565", 181)),
]


@pytest.mark.parametrize(("rules", "num_players", "seed", "names", "expected"), PINNED)
def test_heuristic_games_are_pinned(
    rules: str, num_players: int, seed: int, names: tuple[str, ...], expected: tuple[str, int]
) -> None:
    """The same seed gives the same hand, action for action, as the heuristics
    played before they were split into a package."""
    assert game_digest(seats(list(names), num_players, seed), rules, num_players, seed) == expected


def test_search_games_are_pinned() -> None:
    """ISMCTS (readable engine) with a fixed seed and simulation budget plays
    the same actions as before its settings were shared (issue 13)."""
    small = {"simulations": 6, "root_actions": 3}
    agents = seats(["ismcts", "planner"], 2, 3, ismcts=small)
    assert game_digest(agents, "burako", 2, 3) == ("f533e14df0927325", 118)


def test_fast_search_games_are_pinned() -> None:
    """The compiled ISMCTS with a fixed seed plays the same actions as before."""
    small = {"simulations": 6, "root_actions": 3}
    agents = seats(["fast_ismcts", "planner"], 2, 3, fast_ismcts=small)
    assert game_digest(agents, "burako", 2, 3) == ("58b2b60b020466ef", 100)
    agents = seats(["fast_ismcts", "greedy"], 4, 5, fast_ismcts=small)
    assert game_digest(agents, "burako", 4, 5) == ("d71f721d5d3c7263", 158)


# ----------------------------------------------------------------------------- weights


def test_presets_are_the_agents_weights() -> None:
    """Each agent and policy starts from its preset; the two presets differ
    only in the three numbers the GreedyMelder plays differently."""
    assert Planner().weights is PLANNER_WEIGHTS and PlannerPolicy().weights is PLANNER_WEIGHTS
    assert GreedyMelder().weights is GREEDY_WEIGHTS and GreedyPolicy().weights is GREEDY_WEIGHTS
    differ = {
        f.name
        for f in dataclasses.fields(HeuristicWeights)
        if getattr(GREEDY_WEIGHTS, f.name) != getattr(PLANNER_WEIGHTS, f.name)
    }
    assert differ == {"wild_keep", "feed_base", "feed_per_pile_tile"}
    with pytest.raises(dataclasses.FrozenInstanceError):
        PLANNER_WEIGHTS.feed_base = 1.0  # type: ignore[misc]


def test_weights_reach_the_decisions() -> None:
    """Weights given to the registry change the play; the preset's own values
    given as a mapping do not."""
    baseline = game_digest(seats(["planner", "greedy"], 2, 0), "burako", 2, 0)
    same = {"planner": {"weights": {"feed_base": PLANNER_WEIGHTS.feed_base}}}
    assert game_digest(seats(["planner", "greedy"], 2, 0, **same), "burako", 2, 0) == baseline
    reckless = {"planner": {"weights": {"take_threshold": -1e6, "take_threshold_blind": -1e6}}}
    assert game_digest(seats(["planner", "greedy"], 2, 0, **reckless), "burako", 2, 0) != baseline
    agent = make_agent("planner", seed=0, weights=HeuristicWeights(feed_base=7.0))
    assert agent.weights.feed_base == 7.0 and agent.weights.wild_keep == PLANNER_WEIGHTS.wild_keep


def test_evaluation_reads_its_weights() -> None:
    """evaluate_sides's numbers are the weights' eval_* fields."""
    state = GameState.new_game(np.random.default_rng(4), "burako", 2)
    base = evaluate_sides(state)
    assert evaluate_sides(state, PLANNER_WEIGHTS) == base
    assert evaluate_sides(state, PLANNER_WEIGHTS.replace(eval_hand_cost=0.0, eval_hand_cost_late=0.0)) != base


@pytest.mark.parametrize(
    ("weights", "message"),
    [
        ({"feed_bas": 1.0}, "unknown heuristic weight(s) feed_bas"),
        ({"feed_base": float("nan")}, "feed_base must be a finite number"),
        ({"feed_base": "high"}, "feed_base must be a finite number"),
        ({"danger_stock": 2.5}, "danger_stock must be a whole number"),
        ({"canasta_share": [0.1, 0.2]}, "canasta_share must be 7 numbers"),
    ],
)
def test_bad_weights_are_clear_errors(weights: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        make_agent("planner", weights=weights)


def test_weights_must_be_a_dataclass_or_a_mapping() -> None:
    with pytest.raises(TypeError, match="weights must be a HeuristicWeights or a mapping"):
        Planner(weights=3)  # type: ignore[arg-type]


# ----------------------------------------------------------------------------- the meld facts it reads


def test_b6_a_one_stands_low_or_high() -> None:
    """tiles.run_positions: a 1 stands on position 1 or 14 (B6), any other
    number on its own, the joker on none."""
    from burako_env.tiles import JOKER, kind_of, run_positions

    assert run_positions(kind_of(1, 1)) == (1, 14)
    assert run_positions(kind_of(2, 5)) == (5,)
    assert run_positions(kind_of(0, 13)) == (13,)
    assert run_positions(JOKER) == ()


def test_b9_b10_natural_additions() -> None:
    """melds.is_natural_addition: a natural keeps the meld's wild, even when it
    displaces it to an end (B10) or is a 2 on its own place (B9/B11); a wild
    added to a clean meld is not natural."""
    from burako_env.melds import add_outcomes, is_natural_addition, make_run
    from burako_env.rules import load_rules
    from burako_env.tiles import JOKER, kind_of

    rules = load_rules("burako")
    red = 1
    clean = make_run(red, 3, 5)
    (six,) = add_outcomes(clean, kind_of(red, 6), rules)
    assert is_natural_addition(clean, six)
    assert not any(is_natural_addition(clean, o) for o in add_outcomes(clean, JOKER, rules))
    two = add_outcomes(clean, kind_of(red, 2), rules)  # natural on 2, or wild on 6
    assert sorted(is_natural_addition(clean, o) for o in two) == [False, True]
    dirty = make_run(red, 3, 5, JOKER, 4)
    displaced = add_outcomes(dirty, kind_of(red, 4), rules)  # the joker moves to an end (B10)
    assert len(displaced) == 2 and all(is_natural_addition(dirty, o) for o in displaced)


def test_planner_feed_reads_what_the_next_player_may_hold() -> None:
    """The planner's discard risk (``Position.next_holds``, computed once per
    decision): a tile the next player is known to hold (taken with the pile)
    is held for sure, twice when known twice; any other is held with chance
    ``hidden_share * live copies`` (at most 1), a pair with half its square,
    or with that single chance when one copy is known; and ``unseen`` is the
    full set less everything the player sees (E1, E2), on the true state as on
    a determinization of it."""
    from oracle import visible_counts

    from agents.heuristic.position import Position
    from agents.heuristic.weights import PLANNER_WEIGHTS

    rng = np.random.default_rng(4)
    checked = with_known = 0
    for seed in range(6):
        state = GameState.new_game(np.random.default_rng(seed), "burako", 2)
        planner = PlannerPolicy()
        while state.hand_scores is None and state.turn < 120:
            legal = state.legal_actions()
            if checked % 7 == 0:
                for view in (state, state.determinize(state.current, rng)):
                    ctx = Position(view, PLANNER_WEIGHTS)
                    me, nxt = ctx.player, ctx.next_player
                    assert ctx.unseen == (state.rules.full_counts() - visible_counts(state, me)).tolist()
                    known = state.known[nxt].tolist()
                    f = ctx.hidden_share(nxt)
                    one, two = ctx.next_holds
                    for k in range(53):
                        p = min(1.0, f * max(ctx.unseen[k], 0))
                        assert one[k] == (1.0 if known[k] else p)
                        assert two[k] == (1.0 if known[k] >= 2 else p if known[k] == 1 else 0.5 * p * p)
                    with_known += any(known)
            checked += 1
            state.apply(planner.choose(state.clone(), legal) if len(legal) > 1 else legal[0])
    assert with_known >= 5, with_known


@pytest.mark.parametrize("settings_class", ["heuristic", "search"])
def test_every_weight_and_setting_is_documented_and_read(settings_class: str) -> None:
    """Each field of HeuristicWeights and SearchSettings has its own ``#:``
    comment, and some code reads it (a number nobody reads is dead)."""
    import inspect
    from pathlib import Path

    import agents.heuristic as package
    from agents.search_settings import SearchSettings

    cls = HeuristicWeights if settings_class == "heuristic" else SearchSettings
    lines = inspect.getsource(cls).splitlines()
    for field in dataclasses.fields(cls):
        at = next(i for i, line in enumerate(lines) if line.strip().startswith(f"{field.name}:"))
        assert lines[at - 1].strip().startswith("#:"), f"{cls.__name__}.{field.name} has no #: comment"
    root = Path(package.__file__).parent.parent
    sources = [p for p in root.rglob("*.py") if p.name not in ("weights.py", "search_settings.py")]
    text = "\n".join(p.read_text() for p in sources)
    for field in dataclasses.fields(cls):
        assert f".{field.name}" in text, f"{cls.__name__}.{field.name} is read nowhere under agents/"
