"""Independent Rummy oracles for the tests: brute-force meld partition and play legality.

Written without the DP of ``burako_env.rummy.partition``: every meld of R3 is
listed explicitly (runs 1..13 of every length with jokers anywhere, sets of
distinct colours) and a multiset is split by depth-first search, always
covering the lowest remaining natural tile first. Exponential, so only for
small multisets.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from functools import cache

from burako_env.tiles import JOKER, NUM_COLOURS, NUM_KINDS, NUM_NUMBERS, kind_of


def _all_melds() -> list[tuple[tuple[int, ...], int, int]]:
    """Every meld as (natural kinds, jokers, value with each joker at its number)."""
    melds = []
    for colour in range(NUM_COLOURS):
        for start in range(1, NUM_NUMBERS + 1):
            for end in range(start + 2, NUM_NUMBERS + 1):
                numbers = list(range(start, end + 1))
                for joker_spots in range(0, 3):
                    for spots in itertools.combinations(range(len(numbers)), joker_spots):
                        naturals = tuple(kind_of(colour, n) for i, n in enumerate(numbers) if i not in spots)
                        if naturals:
                            melds.append((naturals, joker_spots, sum(numbers)))
    for number in range(1, NUM_NUMBERS + 1):
        for size in (1, 2, 3, 4):
            for colours in itertools.combinations(range(NUM_COLOURS), size):
                for jokers in range(0, 3):
                    if 3 <= size + jokers <= 4:
                        naturals = tuple(kind_of(c, number) for c in colours)
                        melds.append((naturals, jokers, number * (size + jokers)))
    return melds


MELDS = _all_melds()
MELDS_WITH = {kind: [m for m in MELDS if kind in m[0]] for kind in range(JOKER)}


@cache
def _best(counts: tuple[int, ...]) -> int | None:
    """Highest total meld value over the partitions of ``counts`` (None: no partition)."""
    first = next((k for k in range(JOKER) if counts[k]), None)
    if first is None:
        return 0 if counts[JOKER] == 0 else None
    best = None
    for naturals, jokers, value in MELDS_WITH[first]:
        if jokers > counts[JOKER]:
            continue
        rest = list(counts)
        ok = True
        for kind in naturals:
            rest[kind] -= 1
            if rest[kind] < 0:
                ok = False
                break
        if not ok:
            continue
        rest[JOKER] -= jokers
        sub = _best(tuple(rest))
        if sub is not None and (best is None or sub + value > best):
            best = sub + value
    return best


def brute_partition(counts: Sequence[int]) -> bool:
    return _best(tuple(int(x) for x in counts)) is not None


def brute_value(counts: Sequence[int]) -> int | None:
    """Best value of the melds with each joker at the number it stands for (R5, R11a)."""
    return _best(tuple(int(x) for x in counts))


def sub_multisets(counts: Sequence[int]):
    """Every sub-multiset of ``counts`` (as a list of 53 counts)."""
    kinds = [k for k in range(NUM_KINDS) if counts[k]]
    for choice in itertools.product(*(range(counts[k] + 1) for k in kinds)):
        out = [0] * NUM_KINDS
        for k, n in zip(kinds, choice, strict=True):
            out[k] = n
        yield out
