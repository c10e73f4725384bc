"""The Rummy partition DP against brute force and against ``rummikub-solver`` (R3, R6, R7)."""

from __future__ import annotations

import numpy as np
import pytest

from burako_env.rummy.partition import (
    PlayGraph,
    bounded_paths,
    can_partition,
    fits,
    mask_query,
    max_tiles_placed,
    turn_graph,
)
from burako_env.tiles import JOKER, KIND_NUMBER_LIST, NUM_KINDS, kind_of
from tests.rummy_oracle import MELDS, brute_partition, brute_value, sub_multisets

NUMBERS = [KIND_NUMBER_LIST[k] for k in range(NUM_KINDS)]


def counts_of(*kinds: int) -> np.ndarray:
    out = np.zeros(NUM_KINDS, dtype=np.int64)
    for kind in kinds:
        out[kind] += 1
    return out


def random_multiset(rng: np.random.Generator, melds: int, noise: int, jokers: bool = True) -> np.ndarray:
    """A union of random melds plus random tiles, within the 2-copies / 2-jokers limits."""
    counts = np.zeros(NUM_KINDS, dtype=np.int64)
    for _ in range(melds):
        naturals, meld_jokers, _value = MELDS[rng.integers(len(MELDS))]
        if not jokers and meld_jokers:
            continue
        trial = counts.copy()
        for kind in naturals:
            trial[kind] += 1
        trial[JOKER] += meld_jokers
        if trial[:JOKER].max() <= 2 and trial[JOKER] <= 2:
            counts = trial
    for _ in range(noise):
        kind = int(rng.integers(NUM_KINDS if jokers else JOKER))
        if counts[kind] < 2:
            counts[kind] += 1
    return counts


def test_r3_small_cases() -> None:
    """R3: runs of 3+ one colour (1 low only), sets of 3-4 distinct colours, several jokers allowed."""
    k = kind_of
    assert can_partition(counts_of(k(0, 1), k(0, 2), k(0, 3)))
    assert not can_partition(counts_of(k(0, 12), k(0, 13), k(0, 1)))  # 12-13-1 is not a run
    assert not can_partition(counts_of(k(0, 5), k(0, 5), k(1, 5)))  # a set's colours differ
    assert can_partition(counts_of(k(0, 5), JOKER, JOKER))  # several jokers in one meld
    assert can_partition(counts_of(k(0, 5), k(1, 5), JOKER))
    assert not can_partition(counts_of(k(0, 5), k(1, 5), k(2, 5), k(3, 5), JOKER))  # a set has at most 4 tiles
    assert can_partition(counts_of(k(0, 5), k(1, 5), k(2, 5), k(3, 5), k(0, 6), JOKER))  # ... the joker runs 5-6-7
    assert can_partition(counts_of(*[k(2, n) for n in range(1, 14)]))  # 1..13 in one run
    assert not can_partition(counts_of(JOKER, JOKER))
    assert can_partition(counts_of())


def test_partition_matches_brute_force() -> None:
    """R3: the DP and the brute-force search agree on 1,500 small multisets, with and without jokers."""
    rng = np.random.default_rng(17)
    agree = positives = 0
    for _ in range(1500):
        counts = random_multiset(rng, melds=int(rng.integers(0, 3)), noise=int(rng.integers(0, 3)))
        expected = brute_partition(counts)
        assert can_partition(counts) == expected, counts.nonzero()
        value = PlayGraph(counts, weights=NUMBERS, joker_at_number=True).best_value
        assert value == brute_value(counts), counts.nonzero()
        agree += 1
        positives += expected
    assert agree == 1500 and 300 < positives < 1400  # both answers are well represented


def test_max_tiles_placed_matches_brute_force() -> None:
    """R6: most rack tiles that can join a valid table, DP vs every sub-multiset of the rack (brute force)."""
    rng = np.random.default_rng(3)
    for _ in range(80):
        table = random_multiset(rng, melds=2, noise=0)
        rack = random_multiset(rng, melds=int(rng.integers(0, 2)), noise=4)
        rack = np.minimum(rack, 2 - np.minimum(table, 2))
        rack[JOKER] = min(rack[JOKER], 2 - table[JOKER])
        if rack.sum() > 7:
            continue
        expected = max(
            (sum(sub) for sub in sub_multisets(rack) if brute_partition(table + np.array(sub))), default=None
        )
        assert max_tiles_placed(table, rack) == expected


def test_addable_matches_one_query_per_kind() -> None:
    """The one-pass ``addable`` equals a separate feasibility query per tile kind."""
    rng = np.random.default_rng(5)
    for _ in range(25):
        table = random_multiset(rng, melds=3, noise=0)
        hand = np.minimum(random_multiset(rng, melds=1, noise=6), 2 - table)
        graph = PlayGraph(table, hand)
        for kind in range(NUM_KINDS):
            if hand[kind]:
                one = table.copy()
                one[kind] += 1
                rest = hand.copy()
                rest[kind] -= 1
                assert graph.addable()[kind] == PlayGraph(one, rest).feasible


def test_engine_fast_paths_match_the_unpruned_graph() -> None:
    """R6, R7: the engine's fast paths (isolated tiles pruned first, one turn graph read with bounds)
    answer exactly what a fresh unpruned graph per question answers: which kinds can join the
    pending play, whether the pending play alone splits, and whether table + hand + closing tile do
    (R8); before the first play, the same with the R5 objective."""
    rng = np.random.default_rng(23)
    checked = 0
    for _ in range(60):
        table = random_multiset(rng, melds=int(rng.integers(1, 5)), noise=0)
        hand = np.minimum(random_multiset(rng, melds=int(rng.integers(0, 2)), noise=8), 2 - table)
        hand[JOKER] = min(hand[JOKER], 2 - table[JOKER])
        spare = [k for k in range(NUM_KINDS) if table[k] + hand[k] < 2]
        closing = int(rng.choice(spare))
        graph = turn_graph(table, hand, closing)
        assert graph is not None
        whole = table + hand
        whole[closing] += 1
        assert bounded_paths(graph, whole, whole)[1] == PlayGraph(whole).feasible
        pending = np.zeros(NUM_KINDS, dtype=np.int64)
        for _step in range(4):
            low = table + pending
            addable, _ = bounded_paths(graph, low, table + hand)
            expected = PlayGraph(low, hand - pending)
            assert (addable == expected.addable()).all()
            assert bounded_paths(graph, low, low)[1] == fits(low) == PlayGraph(low).feasible
            first, alone = mask_query(pending.copy(), hand - pending, np.array(NUMBERS), True, 0, 30)
            fresh = PlayGraph(pending, hand - pending, NUMBERS, joker_at_number=True)
            assert (first == fresh.addable(30)).all()
            assert alone == PlayGraph(pending, weights=NUMBERS, joker_at_number=True).best_value
            checked += 1
            choices = np.flatnonzero(addable & (hand - pending > 0))
            if not len(choices):
                break
            pending[int(rng.choice(choices))] += 1
    assert checked > 100


def test_depth_first_searches_in_threads_answer_as_one_thread() -> None:
    """R6: the depth-first split search runs without the GIL; searches in four threads at once
    answer exactly what the exact graph answers (each thread has its own search buffers: with
    one shared set, a few of these 32,000 answers were wrong in every try)."""
    from concurrent.futures import ThreadPoolExecutor

    rng = np.random.default_rng(31)
    cases = [random_multiset(rng, melds=int(rng.integers(3, 12)), noise=int(rng.integers(0, 3))) for _ in range(200)]
    expected = [PlayGraph(m).feasible for m in cases]
    assert 0 < sum(expected) < len(expected)  # both answers occur

    def wrong_answers(_: int) -> int:
        # graph_budget=0: the depth-first search answers, not the graph
        return sum(fits(m, graph_budget=0) != e for _ in range(40) for m, e in zip(cases, expected, strict=True))

    with ThreadPoolExecutor(4) as pool:
        assert list(pool.map(wrong_answers, range(4))) == [0, 0, 0, 0]


rummikub_solver = pytest.importorskip("rummikub_solver")


def test_against_rummikub_solver_without_jokers() -> None:
    """Most tiles placed, DP vs the ILP of rummikub-solver (den Hertog and Hulshof 2006), no jokers.

    Without jokers the two meld families coincide: rummikub-solver lists runs of
    3 to 5 tiles only, but every longer run splits into runs of 3 to 5, and its
    sets are the same (3 or 4 distinct colours). So the maxima must be equal.
    (With jokers they differ on purpose: its family leaves out melds with a
    redundant joker, e.g. a run of 4 with a joker at an end, legal under R3; and
    its TOTAL_VALUE mode does not maximise value, so it is not compared.)
    """
    ruleset = rummikub_solver.RuleSet(jokers=0)
    tiles = ruleset.tiles  # colour-major, numbers 1..13: the same order as our kinds
    rng = np.random.default_rng(11)
    for _ in range(40):
        table = random_multiset(rng, melds=int(rng.integers(0, 6)), noise=0, jokers=False)
        rack = np.minimum(random_multiset(rng, melds=2, noise=12, jokers=False), 2 - table)
        rack[JOKER] = 0
        state = ruleset.new_game()
        state.add_table(*[tiles[k] for k in np.repeat(np.arange(JOKER), table[:JOKER])])
        state.add_rack(*[tiles[k] for k in np.repeat(np.arange(JOKER), rack[:JOKER])])
        solution = ruleset.solve(state, rummikub_solver.SolverMode.TILE_COUNT)
        theirs = 0 if solution is None else len(solution.tiles)
        assert max_tiles_placed(table, rack) == theirs


def test_against_rummikub_solver_with_jokers_is_a_lower_bound() -> None:
    """With jokers its meld family is a subset of R3's, so its maximum never exceeds ours.

    Where ours is larger, the placement needs a meld outside its family (a joker
    at the end of a run of 4+, or a joker in a set of 4): checked below by
    re-solving with such jokers forbidden would need its family; we check the
    inequality and that the DP's placement is itself a valid partition.
    """
    ruleset = rummikub_solver.RuleSet()
    tiles = ruleset.tiles
    rng = np.random.default_rng(12)
    for _ in range(25):
        table = random_multiset(rng, melds=int(rng.integers(0, 5)), noise=0)
        rack = np.minimum(random_multiset(rng, melds=1, noise=10), 2 - table)
        state = ruleset.new_game()
        state.add_table(*[tiles[k] for k in np.repeat(np.arange(NUM_KINDS), table)])
        state.add_rack(*[tiles[k] for k in np.repeat(np.arange(NUM_KINDS), rack)])
        solution = ruleset.solve(state, rummikub_solver.SolverMode.TILE_COUNT)
        theirs = 0 if solution is None else len(solution.tiles)
        graph = PlayGraph(table, rack, [1] * NUM_KINDS, joker_weight=1)
        assert graph.best_value - table.sum() >= theirs
        placement = graph.best_placement()
        assert can_partition(placement) and (placement >= table).all() and (placement - table <= rack).all()


def test_r1_more_than_two_copies_of_a_tile_are_refused_by_name() -> None:
    """R1: two of each tile. The compiled graph's tables hold 0..2 copies of a kind, so three (mandatory
    and optional together) wrote past them; now a clear error names the tile, and a joker count is capped
    as before."""
    red5 = kind_of(1, 5)
    three = np.zeros(NUM_KINDS, np.int64)
    three[red5] = 3
    with pytest.raises(ValueError, match=r"at most 2 copies of each tile .*got 3 x red 5"):
        can_partition(three)
    two, one = np.zeros(NUM_KINDS, np.int64), np.zeros(NUM_KINDS, np.int64)
    two[red5], one[red5] = 2, 1
    with pytest.raises(ValueError, match=r"got 3 x red 5"):
        PlayGraph(two, one)
    with pytest.raises(ValueError, match=r"got 3 x red 5"):
        max_tiles_placed(two, one)
    jokers = np.zeros(NUM_KINDS, np.int64)
    jokers[JOKER] = 5
    assert PlayGraph(np.zeros(NUM_KINDS, np.int64), jokers).jokers_max == 2


def test_r1_a_scenario_meld_with_three_copies_is_refused() -> None:
    """A table meld given to the Rummy scenario builder with three red 5s (R1) is an error naming them."""
    from burako_env.rummy.scenario import build_rummy_state

    with pytest.raises(ValueError, match=r"got 3 x red 5"):
        build_rummy_state(table=["R5 R5 R5"])
