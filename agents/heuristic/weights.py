"""Every tunable number of the hand-written heuristics, in one frozen dataclass.

:class:`HeuristicWeights` holds the numbers the policies score with (points
of the same scale as tile values: a red 5 is worth 5, a canasta 200-300),
the thresholds they decide by, and the numbers of the public estimates and
of the search's static evaluation. The defaults are the Planner's;
:data:`GREEDY_WEIGHTS` changes the three the GreedyMelder plays differently.

Where a number is read only by one policy its comment says so (Planner:
the rule is one of :class:`~agents.heuristic.policies.PlannerPolicy`'s
overrides; Greedy: the base rule that the Planner replaces).

An agent takes its weights as ``weights=``: a :class:`HeuristicWeights`, or
a mapping of field names to numbers that changes the agent's preset
(``make_agent("planner", weights={"feed_base": 30})``, or ``options:
{weights: {feed_base: 30}}`` in a tournament config). An unknown name or a
value that is not a finite number is a clear error.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class HeuristicWeights:
    """The heuristics' numbers (module docstring). Units: points unless said."""

    # ---------------------------------------------------------------- estimates (facts, simulation)
    #: rough value of one unseen tile in another player's hand (mean tile value)
    mean_tile_value: float = 9.0
    #: share of the canasta bonus a meld of 0..6 tiles counts for (a short meld rarely becomes a canasta)
    canasta_share: tuple[float, ...] = (0.0, 0.0, 0.0, 0.12, 0.2, 0.32, 0.5)
    #: extra worth of starting a new meld when simulating what a hand melds
    new_meld_bonus: float = 10.0

    # ---------------------------------------------------------------- the situation
    #: the hand may end soon when the stock holds this many tiles or fewer
    danger_stock: int = 10
    #: ... or an opponent who took his muerto holds this many tiles or fewer (his side may close)
    danger_hand_close_ready: int = 5
    #: ... or this many (his side may not close yet)
    danger_hand: int = 3
    #: close whenever possible once the stock holds this many tiles or fewer
    close_late_stock: int = 15
    #: how much feeding the next seat's side matters (it may take the pile first)
    feed_next_side: float = 1.0
    #: how much feeding any other opponent side matters
    feed_other_side: float = 0.4

    # ---------------------------------------------------------------- draw: the pile (Planner)
    #: what the pile must be worth beyond a stock draw to take it, when its top melds at once
    take_threshold: float = 18.0
    #: ... and when its top does not meld at once
    take_threshold_blind: float = 60.0
    #: worth of each wild in the pile
    pile_wild_value: float = 25.0
    #: worth of each pile tile as material for later melds
    pile_material_per_tile: float = 2.0
    #: share of the pile's tile values it costs when the hand may end soon
    pile_danger_share: float = 0.6
    #: cost per pile tile when a bigger hand delays the muerto
    pile_delay_per_tile: float = 3.0
    #: hand size (tiles) at or under which a bigger hand delays the muerto
    going_out_size: int = 6

    # ---------------------------------------------------------------- privilege (B17), choose the end (B10)
    #: keep the privilege tile when its keep value plus its feed cost reaches this
    privilege_keep_threshold: float = 14.0
    #: choosing where a tile goes (B10): an outcome that stays clean
    choose_clean: float = 100.0
    #: ... per hand tile that would extend the outcome
    choose_extension: float = 10.0
    #: ... per position of room at the outcome's tighter end (runs)
    choose_room: float = 0.1

    # ---------------------------------------------------------------- play: melds and additions
    #: V3: a meld or addition that uses the taken pile's top tile
    pile_top_first: float = 500.0
    #: a natural addition: base
    natural_add_base: float = 100.0
    #: ... per tile of the meld's new length (up to 7)
    natural_add_per_length: float = 8.0
    #: ... when it makes the meld a canasta (7 tiles)
    canasta_completion: float = 50.0
    #: a wild on a clean canasta (a clean bonus turned dirty, B14)
    wild_on_clean_canasta: float = -200.0
    #: a natural new meld: base (plus its tile values)
    natural_meld_base: float = 80.0
    #: any new meld: per hand tile that would extend it afterwards
    meld_extension: float = 12.0
    #: a natural new meld that is a run
    run_meld_bonus: float = 5.0
    #: a new meld that spends the joker rather than a 2
    joker_meld_cost: float = 10.0
    #: per tile of the new length of a wild addition
    wild_add_per_length: float = 4.0
    #: (Greedy) a wild addition: base
    greedy_wild_add_base: float = 30.0
    #: (Greedy) ... when it makes a canasta
    greedy_wild_add_canasta: float = 60.0
    #: (Greedy) a new meld with a wild: base (plus its tile values)
    greedy_wild_meld_base: float = 30.0
    #: (Planner) a wild that finishes a canasta
    wild_finish_canasta: float = 110.0
    #: (Planner) ... a dirty one while the side still needs its clean canasta, when going out
    wild_finish_dirty_going_out: float = 20.0
    #: (Planner) ... the same, otherwise (a clean 6 may still become that canasta)
    wild_finish_dirty_hold: float = -20.0
    #: (Planner) a wild addition or new meld when going out or in danger (base)
    wild_going_out_base: float = 25.0
    #: (Planner) a wild addition otherwise: hold the wild for a canasta
    wild_add_hold: float = -30.0
    #: (Planner) a wild new meld with this many extending hand tiles or more heads for a canasta anyway
    wild_meld_long_extension: int = 3
    #: (Planner) ... its base score then
    wild_meld_long_base: float = 5.0
    #: (Planner) a wild new meld otherwise
    wild_meld_hold: float = -40.0
    #: (Planner) per tile (up to 6) of the meld a natural addition goes to: the one closest to a canasta first
    add_per_meld_length: float = 6.0

    # ---------------------------------------------------------------- discard: keep
    #: how much a wild in hand is worth keeping (Greedy 80)
    wild_keep: float = 100.0
    #: a tile that fits one of our melds naturally
    keep_fits_own: float = 45.0
    #: (Greedy) per run neighbour in hand one position away
    keep_neighbour: float = 12.0
    #: (Greedy) per run neighbour in hand two positions away
    keep_far_neighbour: float = 5.0
    #: (Greedy) when the neighbours connect (two near ones, or a near and a far one)
    keep_connected: float = 6.0
    #: (Greedy) share of the run worth kept when the hand holds two copies
    keep_run_duplicate_share: float = 0.35
    #: (Greedy) per set partner in hand (up to 2) when sets need distinct colours
    keep_set_partner_distinct: float = 7.0
    #: (Greedy) per set partner in hand (up to 2, copies included) otherwise
    keep_set_partner: float = 10.0
    #: (Planner) per 3-tile natural meld the tile completes with the hand
    keep_pattern_complete: float = 22.0
    #: (Planner) per live copy (up to 2) of the tile a pair with it waits for
    keep_pattern_live: float = 5.0
    #: (Planner) share of a run pattern kept when the hand holds two copies
    keep_pattern_duplicate_share: float = 0.3
    #: (Planner) cap of the patterns' sum
    keep_pattern_cap: float = 45.0

    # ---------------------------------------------------------------- discard: feed (Greedy 25 and 2)
    #: cost of discarding a tile an opponent can use: base
    feed_base: float = 40.0
    #: ... per tile of the pile it hands over (the discard included)
    feed_per_pile_tile: float = 4.0
    #: share of that cost when the next player is known to hold two tiles it melds with
    feed_known_share: float = 0.5
    #: cost of discarding a wild
    feed_wild: float = 30.0

    # ---------------------------------------------------------------- discard: dump (B26)
    #: share of a tile's value that holding it may cost
    dump_share: float = 0.25
    #: ... added when the hand may end soon
    dump_danger_share: float = 1.0
    #: (Planner) the stock size at or under which holding costs more
    dump_late_stock: int = 20
    #: (Planner) ... the share added then
    dump_late_share: float = 0.25

    # ---------------------------------------------------------------- the search's static evaluation
    #: share of a hand tile's value it costs at the start of the hand
    eval_hand_cost: float = 0.35
    #: ... plus this times the share of the stock drawn
    eval_hand_cost_late: float = 0.65
    #: a wild in hand is worth this times the share of the stock left
    eval_wild_asset: float = 25.0
    #: share of its value a hand tile that fits one of the side's melds counts for
    eval_fit_share: float = 0.3
    #: an untaken muerto costs its penalty times min(1, this + smallest hand / eval_hand_scale)
    eval_muerto_floor: float = 0.4
    #: hand size that scales the muerto's cost and the closing bonus's share
    eval_hand_scale: float = 15.0
    #: a side that may close gets the closing bonus times max(0, share - smallest hand / hand scale)
    eval_close_share: float = 0.6

    def __post_init__(self) -> None:
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            if field.name == "canasta_share":
                if not isinstance(value, tuple) or len(value) != 7:
                    raise ValueError(f"weights: canasta_share must be 7 numbers (meld lengths 0..6), got {value!r}")
                numbers: tuple[Any, ...] = value
            else:
                numbers = (value,)
            for x in numbers:
                if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x):
                    raise ValueError(f"weights: {field.name} must be a finite number, got {value!r}")
            if field.type == "int" and not isinstance(value, int):
                raise ValueError(f"weights: {field.name} must be a whole number, got {value!r}")

    def replace(self, **changes: Any) -> HeuristicWeights:
        """A copy with some fields changed (unknown names are a clear error)."""
        known = {f.name for f in dataclasses.fields(self)}
        unknown = sorted(set(changes) - known)
        if unknown:
            raise ValueError(f"unknown heuristic weight(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}")
        if "canasta_share" in changes and isinstance(changes["canasta_share"], list):
            changes["canasta_share"] = tuple(changes["canasta_share"])
        return dataclasses.replace(self, **changes)


#: the Planner's weights (the defaults)
PLANNER_WEIGHTS = HeuristicWeights()
#: the GreedyMelder's: it keeps wilds less and fears feeding less
GREEDY_WEIGHTS = PLANNER_WEIGHTS.replace(wild_keep=80.0, feed_base=25.0, feed_per_pile_tile=2.0)


def resolve_weights(weights: HeuristicWeights | Mapping[str, Any] | None, preset: HeuristicWeights) -> HeuristicWeights:
    """An agent's or policy's weights: ``preset`` itself, a full
    :class:`HeuristicWeights`, or ``preset`` with a mapping's changes."""
    if weights is None:
        return preset
    if isinstance(weights, HeuristicWeights):
        return weights
    if isinstance(weights, Mapping):
        return preset.replace(**dict(weights))
    raise TypeError(
        f"weights must be a HeuristicWeights or a mapping of names to numbers, got {type(weights).__name__}"
    )


__all__ = ["GREEDY_WEIGHTS", "PLANNER_WEIGHTS", "HeuristicWeights", "resolve_weights"]
