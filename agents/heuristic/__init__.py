"""Hand-written Burako agents: :class:`GreedyMelder` and :class:`Planner`.

Both read only what their seat may know: their own hand, every side's melds
(bajadas), the discard pile (pozo), hand and stock sizes, the tiles each
player took with the pile, and which sides took their muerto. They get it
from ``view.public_state()``, a determinization whose hidden parts are
random, and never look at those hidden parts (other hands, stock order,
muertos). Every decision is picked among the legal actions, so an agent can
never play an illegal move, whatever the table rules.

A turn is a sequence of decisions (draw → melds and additions → discard);
each decision is scored with cheap hand-written features on plain lists,
with no state cloning, so a decision costs a fraction of a millisecond.

GreedyMelder — "meld everything now"
    Melds as soon as it can: additions to its melds first, then the new meld
    that starts the longest meld its hand allows, then melds that spend a
    wild (comodín). Takes the discard pile only when its top tile melds at
    once without a wild (or is a wild). Discards the tile least useful to
    itself (no pairs, no neighbours in its colour) that does not extend an
    opponent's melds (the next seat's most); keeps wilds. Closes whenever it
    can.

Planner — "build canastas, race for the muerto, don't feed the pile"
    Natural additions first, to the meld closest to a canasta (7); spends a
    wild only to finish a canasta (never on a clean one), to empty the hand
    this turn for the muerto or the close, or when the hand may end soon
    (stock nearly out, an opponent about to close). Keeps pairs and run
    connectors, counting cards: a pair whose missing tile is all in sight
    (melds, pile) is dead. Takes the discard pile when what it can meld
    from it (plus its wilds and the extra material) pays, net of the risk
    of being caught with the tiles; under V3 a pile whose top needs a wild
    must pay more. Avoids feeding: a discard that fits an opponent's meld,
    or that the next player probably melds (from the unseen copies, his
    hidden hand size and the tiles he is known to hold), costs in proportion
    to the pile it hands over. Once its side may close it estimates every
    side's score from public facts and closes when ahead (or when little is
    left to gain); otherwise it keeps two tiles and plays on. With partners
    the side's melds and muerto are shared, the partner's hand counts in the
    score estimate, and the next seat (always an opponent) matters most.

The package, by seam:

========================  ===================================================
``weights.py``            :class:`HeuristicWeights`: every tunable number, one
                          frozen dataclass; the Greedy and Planner presets
``facts.py``              tile geometry, per-rules lookups (:func:`rule_facts`),
                          public estimates (:func:`meld_progress`,
                          :func:`side_estimates`)
``simulation.py``         the look-ahead: what a hand melds (:func:`meld_gain`)
``position.py``           :class:`Position`, the facts of one decision
``policies.py``           the decision rules (:class:`HeuristicPolicy`,
                          :class:`GreedyPolicy`, :class:`PlannerPolicy`)
``evaluation.py``         :func:`evaluate_sides`, the search's leaf value
``agents.py``             the registry's agents (``greedy``, ``planner``)
========================  ===================================================
"""

from __future__ import annotations

from agents.heuristic.agents import GreedyMelder, Planner
from agents.heuristic.evaluation import evaluate_sides
from agents.heuristic.facts import (
    MEAN_TILE_VALUE,
    NEG,
    NEIGHBOURS_1,
    NEIGHBOURS_2,
    SAME_NUMBER,
    RuleFacts,
    extension,
    meld_progress,
    rule_facts,
    side_estimates,
)
from agents.heuristic.policies import GreedyPolicy, HeuristicPolicy, PlannerPolicy
from agents.heuristic.position import Position
from agents.heuristic.simulation import meld_gain, simulate_melding
from agents.heuristic.weights import GREEDY_WEIGHTS, PLANNER_WEIGHTS, HeuristicWeights, resolve_weights

__all__ = [
    "GREEDY_WEIGHTS",
    "MEAN_TILE_VALUE",
    "NEG",
    "NEIGHBOURS_1",
    "NEIGHBOURS_2",
    "PLANNER_WEIGHTS",
    "SAME_NUMBER",
    "GreedyMelder",
    "GreedyPolicy",
    "HeuristicPolicy",
    "HeuristicWeights",
    "Planner",
    "PlannerPolicy",
    "Position",
    "RuleFacts",
    "evaluate_sides",
    "extension",
    "meld_gain",
    "meld_progress",
    "resolve_weights",
    "rule_facts",
    "side_estimates",
    "simulate_melding",
]
