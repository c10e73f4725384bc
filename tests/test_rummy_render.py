"""The Rummy table as people see it: ``render.arrange`` splits the table's
multiset into melds that are each one valid meld (R3), jokers included."""

from __future__ import annotations

import numpy as np

import burako_env
from burako_env.rummy.render import arrange
from burako_env.tiles import JOKER, NUM_NUMBERS


def _one_meld(group: list[int]) -> bool:
    """R3, checked independently of the engine: a set is one number in 3-4
    distinct colours, a run one colour on consecutive numbers; jokers stand
    for any missing tile, and a group is never jokers alone."""
    naturals = [k for k in group if k != JOKER]
    if len(group) < 3 or not naturals:
        return False
    colours = {k // NUM_NUMBERS for k in naturals}
    numbers = [k % NUM_NUMBERS + 1 for k in naturals]
    if len(set(numbers)) == 1:
        return len(colours) == len(naturals) and len(group) <= 4
    span = max(numbers) - min(numbers) + 1
    return len(colours) == 1 and len(set(numbers)) == len(numbers) and span <= len(group) <= NUM_NUMBERS


def test_arrange_shows_every_table_as_single_valid_melds_r3() -> None:
    """Before, a table whose split needed a joker or one of two equal tiles
    in another set was shown with a leftover group (77 of 183 sampled
    tables); now every group is one meld and together they are the table."""
    tables = []
    for seed in range(8):
        env = burako_env.rummy_env(num_players=4)
        env.reset(seed=seed)
        rng = np.random.default_rng(seed)
        for _agent in env.agent_iter():
            obs, _, termination, truncation, _ = env.last()
            if termination or truncation:
                env.step(None)
                continue
            table = env.unwrapped.game.table
            if table.sum() and rng.random() < 0.04:
                tables.append(table.copy())
            env.step(int(rng.choice(np.flatnonzero(obs["action_mask"]))))
    assert len(tables) > 20 and sum(t[JOKER] > 0 for t in tables) > 5
    for table in tables:
        groups = arrange(table)
        assert all(_one_meld(group) for group in groups), groups
        assert np.array_equal(np.bincount(np.concatenate(groups), minlength=table.size), table)
