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
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from agents.base import SeatView
from burako_env import actions as A
from burako_env.engine import GameState, Phase
from burako_env.melds import (
    CANASTA_LENGTH,
    PATTERNS,
    Meld,
    canasta_bonus,
    meld_kinds,
    meld_value,
    patterns_available,
)
from burako_env.rules import Rules
from burako_env.tiles import (
    IS_WILD,
    JOKER,
    KIND_COLOUR_LIST,
    KIND_NUMBER_LIST,
    NUM_COLOURS,
    NUM_KINDS,
    NUM_POSITIONS,
    kind_at,
    kind_of,
)

NEG = -1e9
#: rough value of one unseen tile in another player's hand (mean tile value)
MEAN_TILE_VALUE = 9.0


# --------------------------------------------------------------------------- tile geometry


def _positions(kind: int) -> tuple[int, ...]:
    """Run positions a natural tile can stand on (a 1 is low or high, B6)."""
    number = KIND_NUMBER_LIST[kind]
    return (1, NUM_POSITIONS) if number == 1 else (number,)


def _neighbours(kind: int, distance: int) -> tuple[int, ...]:
    """Same-colour kinds ``distance`` run positions away from ``kind``."""
    if kind == JOKER:
        return ()
    colour = KIND_COLOUR_LIST[kind]
    out: list[int] = []
    for pos in _positions(kind):
        for step in (-distance, distance):
            q = pos + step
            if 1 <= q <= NUM_POSITIONS:
                other = kind_at(colour, q)
                if other != kind and other not in out:
                    out.append(other)
    return tuple(out)


NEIGHBOURS_1: tuple[tuple[int, ...], ...] = tuple(_neighbours(k, 1) for k in range(NUM_KINDS))
NEIGHBOURS_2: tuple[tuple[int, ...], ...] = tuple(_neighbours(k, 2) for k in range(NUM_KINDS))
#: the same number in the other colours (set partners); none for 2s and the joker
SAME_NUMBER: tuple[tuple[int, ...], ...] = tuple(
    ()
    if k == JOKER or KIND_NUMBER_LIST[k] == 2
    else tuple(kind_of(c, KIND_NUMBER_LIST[k]) for c in range(NUM_COLOURS) if c != KIND_COLOUR_LIST[k])
    for k in range(NUM_KINDS)
)


class RuleFacts:
    """Per-rules lookups the heuristics need (computed once per rules object)."""

    def __init__(self, rules: Rules) -> None:
        self.rules = rules
        self.values: list[int] = [int(v) for v in rules.tile_value_array()]
        allowed = np.array([_pattern_allowed(m, rules) for m in PATTERNS], dtype=bool)
        natural = np.array([m.wild_kind < 0 for m in PATTERNS], dtype=bool)
        self.allowed = allowed
        self.natural_allowed = allowed & natural
        #: natural allowed patterns that contain a kind: pattern -> its kinds
        self.natural_with: list[list[tuple[int, tuple[int, ...]]]] = [[] for _ in range(NUM_KINDS)]
        for i in np.flatnonzero(self.natural_allowed).tolist():
            kinds = tuple(meld_kinds(PATTERNS[i]))
            for k in set(kinds):
                self.natural_with[k].append((i, kinds))
        #: per kind, the other two tiles of each natural pattern holding it,
        #: and whether that pattern is a run
        self.natural_others: list[list[tuple[int, int, bool]]] = [[] for _ in range(NUM_KINDS)]
        for k in range(NUM_KINDS):
            for i, kinds in self.natural_with[k]:
                rest = list(kinds)
                rest.remove(k)
                self.natural_others[k].append((rest[0], rest[1], PATTERNS[i].is_run))
        self.pattern_kinds: list[tuple[int, ...]] = [tuple(meld_kinds(m)) for m in PATTERNS]
        self.pattern_value: list[int] = [sum(self.values[k] for k in ks) for ks in self.pattern_kinds]
        self._natural_adds: dict[Meld, tuple[int, ...]] = {}
        self._meld_kinds: dict[Meld, tuple[int, ...]] = {}
        self.full_counts = rules.full_counts().astype(np.int64)
        bonus = rules.canasta_bonus
        self.clean_bonus = bonus["clean"]
        self.dirty_bonus = bonus["dirty"]

    def meld_kinds(self, meld: Meld) -> tuple[int, ...]:
        """The tiles of a meld (cached per meld)."""
        found = self._meld_kinds.get(meld)
        if found is None:
            found = tuple(meld_kinds(meld))
            self._meld_kinds[meld] = found
        return found

    def natural_adds(self, meld: Meld, tables: Any) -> tuple[int, ...]:
        """Kinds that extend ``meld`` as natural tiles (cached per meld)."""
        found = self._natural_adds.get(meld)
        if found is None:
            found = tuple(
                k
                for k in np.flatnonzero(tables.addable(meld)).tolist()
                if any(o.wild_kind == meld.wild_kind for o in tables.outcomes(meld, k))
            )
            self._natural_adds[meld] = found
        return found


def _pattern_allowed(meld: Meld, rules: Rules) -> bool:
    from burako_env.melds import is_valid_meld

    return is_valid_meld(meld, rules)


_FACTS: dict[int, tuple[Rules, RuleFacts]] = {}


def rule_facts(rules: Rules) -> RuleFacts:
    """The :class:`RuleFacts` of a rules object, cached by identity first
    (hashing a Rules serialises it, too slow for every decision)."""
    entry = _FACTS.get(id(rules))
    if entry is not None and entry[0] is rules:
        return entry[1]
    found = _rule_facts_by_value(rules)
    if len(_FACTS) > 256:
        _FACTS.clear()
    _FACTS[id(rules)] = (rules, found)  # holding the rules keeps its id unique
    return found


@functools.lru_cache(maxsize=32)
def _rule_facts_by_value(rules: Rules) -> RuleFacts:
    return RuleFacts(rules)


# --------------------------------------------------------------------------- public estimates


def meld_progress(meld: Meld, facts: RuleFacts) -> float:
    """What a meld is worth now: its tiles, plus its canasta bonus, or a share
    of the bonus it may still reach (a short meld rarely becomes a canasta)."""
    length = meld.length
    if length >= CANASTA_LENGTH:
        return canasta_bonus(meld, facts.rules)
    share = (0.0, 0.0, 0.0, 0.12, 0.2, 0.32, 0.5)[length]
    if not meld.is_run and facts.rules.set_colours_distinct:
        return 0.0  # a set of distinct colours holds at most 5 tiles: never a canasta
    bonus = facts.clean_bonus if meld.clean else facts.dirty_bonus
    return share * bonus


def side_estimates(state: GameState, viewer: int) -> list[float]:
    """Each side's hand score as ``viewer`` can estimate it from public facts
    (B26): melds and canastas exactly, other hands as size x mean tile value,
    the viewer's own hand exactly, -penalty for a muerto not taken."""
    rules = state.rules
    facts = rule_facts(rules)
    out: list[float] = []
    for s in range(state.num_sides):
        total = 0.0
        for meld in state.melds[s]:
            total += meld_value(meld, state.t.values) + canasta_bonus(meld, rules)
        for q in range(state.num_players):
            if state.side_of[q] != s:
                continue
            if q == viewer:
                total -= float(sum(facts.values[k] * c for k, c in enumerate(state.hands[q].tolist()) if c))
            else:
                total -= MEAN_TILE_VALUE * state.hand_size[q]
        if not state.muerto_taken[s]:
            total -= rules.muerto_penalty
        out.append(total)
    return out


# --------------------------------------------------------------------------- the policies


class HeuristicPolicy:
    """The shared machinery of both heuristics; subclasses set the style.

    ``choose(state, legal)`` works on any engine state, for the player to
    act, and reads only that player's own hand and public facts, so the
    same code serves the agents (on ``view.public_state()``) and the search's
    rollouts (on a determinization).
    """

    name = "heuristic"
    #: how much a wild in hand is worth keeping (discard and privilege stage)
    wild_keep = 80.0
    #: base and per-pile-tile penalty for discarding a tile an opponent can add
    feed_base = 25.0
    feed_per_pile_tile = 2.0

    # ------------------------------------------------------------ entry point
    def choose(self, state: GameState, legal: list[int]) -> int:
        if len(legal) == 1:
            return legal[0]
        phase = state.phase
        if phase == Phase.DRAW:
            action = self._draw(_Ctx(state))
        elif phase == Phase.PRIVILEGE:
            action = self._privilege(_Ctx(state))
        elif phase == Phase.CHOOSE_END:
            action = self._choose_end(_Ctx(state), legal)
        else:
            action = self._play(_Ctx(state), legal)
        if action not in legal:  # defensive: the mask always has the final word
            action = legal[0]
        return action

    def ranked(self, state: GameState, legal: list[int]) -> list[int]:
        """The legal actions, best first by this policy's scores (for search
        root reduction). The policy's own choice always comes first."""
        if len(legal) <= 1:
            return list(legal)
        if state.phase == Phase.PLAY:
            return self._play_ranking(_Ctx(state), legal)
        first = self.choose(state, legal)
        return [first] + [a for a in legal if a != first]

    # ------------------------------------------------------------ draw
    def _draw(self, ctx: _Ctx) -> int:
        if not ctx.state.pile:
            return A.DRAW_STOCK
        if ctx.state.legal_mask()[A.TAKE_PILE] and self._take_pile(ctx):
            return A.TAKE_PILE
        return A.DRAW_STOCK

    def _take_pile(self, ctx: _Ctx) -> bool:
        """Greedy: take when the top tile melds at once with naturals, or is a wild."""
        top = ctx.state.pile[-1]
        return IS_WILD[top] or ctx.top_melds_naturally(top)

    # ------------------------------------------------------------ privilege (B17)
    def _privilege(self, ctx: _Ctx) -> int:
        tile = ctx.state.privilege_tile
        if tile < 0:
            return A.KEEP
        worth = self._keep(ctx, tile) + self._feed(ctx, tile)
        return A.KEEP if worth >= 14.0 else A.REJECT

    # ------------------------------------------------------------ choose the end (B10)
    def _choose_end(self, ctx: _Ctx, legal: list[int]) -> int:
        pending = ctx.state.pending
        if pending is None:
            return legal[0]
        _slot, kind, outcomes = pending
        hand = ctx.hand[:]
        hand[kind] -= 1
        best, best_score = legal[0], NEG
        for a in legal:
            meld = outcomes[a - A.CHOOSE_BASE]
            score = 100.0 * meld.clean + ctx.extension(meld, hand) * 10.0
            if meld.is_run:
                score += 0.1 * min(meld.lo - 1, NUM_POSITIONS - meld.hi)  # room at the tighter end
            if score > best_score:
                best, best_score = a, score
        return best

    # ------------------------------------------------------------ play
    def _play(self, ctx: _Ctx, legal: list[int]) -> int:
        return self._play_ranking(ctx, legal)[0]

    def _play_ranking(self, ctx: _Ctx, legal: list[int]) -> list[int]:
        """PLAY actions best first: melds and additions worth doing now (score
        above 0) by score, then discards from the least useful tile, then the
        melds not worth doing. The first is the policy's choice."""
        melds: list[tuple[float, int]] = []
        discards: list[tuple[float, int]] = []
        for a in legal:
            if a < A.MELD_BASE:
                discards.append((self._discard_cost(ctx, a - A.DISCARD_BASE), a))
            else:
                melds.append((-self._play_score(ctx, a), a))
        melds.sort()
        discards.sort()
        good = [a for neg, a in melds if -neg > 0.0]
        rest = [a for neg, a in melds if -neg <= 0.0]
        return good + [a for _, a in discards] + rest

    def _play_score(self, ctx: _Ctx, action: int) -> float:
        """Score of a meld or addition (positive: do it now)."""
        what, a, b = A.decode(action)
        if what == A.MELD:
            kinds = ctx.facts.pattern_kinds[a]
            used = len(kinds)
            score = self._meld_score(ctx, a, kinds)
        else:
            kinds = (b,)
            used = 1
            score = self._add_score(ctx, a, b)
        required = ctx.state.pile_top_required
        if required >= 0 and required in kinds:
            score += 500.0  # V3: the taken pile's top tile first
        return score + self._emptying_adjustment(ctx, ctx.size - used)

    def _emptying_adjustment(self, ctx: _Ctx, left: int) -> float:
        return 0.0

    def _add_score(self, ctx: _Ctx, slot: int, kind: int) -> float:
        meld = ctx.own[slot]
        outcomes = ctx.state.t.outcomes(meld, kind)
        if not outcomes:
            return NEG
        outcome = outcomes[0]
        new_length = meld.length + 1
        if outcome.wild_kind == meld.wild_kind:  # a natural addition (incl. a 2 on its own place)
            return 100.0 + 8.0 * min(new_length, 7) + (50.0 if new_length == CANASTA_LENGTH else 0.0)
        if meld.is_canasta:
            # a wild on a clean canasta turns a clean bonus into a dirty one
            # (B14) and may lose the clean canasta the side needs to close
            return -200.0
        return self._wild_add_score(ctx, meld, new_length)

    def _wild_add_score(self, ctx: _Ctx, meld: Meld, new_length: int) -> float:
        return 30.0 + (60.0 if new_length >= CANASTA_LENGTH else 0.0) + 4.0 * new_length

    def _meld_score(self, ctx: _Ctx, pattern: int, kinds: tuple[int, ...]) -> float:
        meld = PATTERNS[pattern]
        hand = ctx.hand[:]
        for k in kinds:
            hand[k] -= 1
        ext = ctx.extension(meld, hand)
        value = ctx.facts.pattern_value[pattern]
        if meld.wild_kind < 0:
            return 80.0 + value + 12.0 * ext + (5.0 if meld.is_run else 0.0)
        return self._wild_meld_score(ctx, meld, value, ext)

    def _wild_meld_score(self, ctx: _Ctx, meld: Meld, value: int, ext: int) -> float:
        return 30.0 + value + 12.0 * ext - (10.0 if meld.wild_kind == JOKER else 0.0)

    # ------------------------------------------------------------ discard
    def _discard_cost(self, ctx: _Ctx, kind: int) -> float:
        """Lower is a better discard: how much the tile helps us, how much it
        helps the next opponent, less what holding it may cost."""
        return self._keep(ctx, kind) + self._feed(ctx, kind) - self._dump(ctx, kind)

    def _keep(self, ctx: _Ctx, kind: int) -> float:
        """How useful a tile in hand is to us: wilds, tiles that fit our melds,
        pairs for sets, neighbours for runs."""
        if IS_WILD[kind]:
            return self.wild_keep
        hand = ctx.hand
        score = 45.0 if ctx.own_addable[kind] else 0.0
        near = sum(1 for k in NEIGHBOURS_1[kind] if hand[k] > 0)
        far = sum(1 for k in NEIGHBOURS_2[kind] if hand[k] > 0)
        run = 12.0 * near + 5.0 * far + (6.0 if near >= 2 or (near and far) else 0.0)
        if hand[kind] >= 2:
            run *= 0.35  # the other copy keeps these connections
        score += run
        if ctx.rules.sets_allowed and SAME_NUMBER[kind]:
            if ctx.rules.set_colours_distinct:
                partners = sum(1 for k in SAME_NUMBER[kind] if hand[k] > 0)
                score += 7.0 * min(partners, 2)
            else:
                partners = sum(hand[k] for k in SAME_NUMBER[kind]) + hand[kind] - 1
                score += 10.0 * min(partners, 2)
        return score

    def _feed(self, ctx: _Ctx, kind: int) -> float:
        """How much discarding the tile helps the next opponent: it fits one of
        their melds (they take the whole pile), or melds with tiles they are
        known to hold; a wild always helps them."""
        weights = ctx.opponent_weights
        pile = len(ctx.state.pile) + 1
        penalty = 0.0
        for s, w in weights.items():
            if ctx.side_addable(s)[kind]:
                penalty += w * (self.feed_base + self.feed_per_pile_tile * pile)
        known = ctx.next_known
        if any(known):
            for _i, kinds in ctx.facts.natural_with[kind]:
                need = [k for k in kinds if k != kind]
                if all(known[k] > 0 for k in need):
                    penalty += 0.5 * (self.feed_base + self.feed_per_pile_tile * pile)
                    break
        if IS_WILD[kind]:
            penalty += 30.0
        return penalty

    def _dump(self, ctx: _Ctx, kind: int) -> float:
        """What holding a tile may cost at the end of the hand (B26)."""
        return ctx.facts.values[kind] * (0.25 + (1.0 if ctx.danger else 0.0))


class GreedyPolicy(HeuristicPolicy):
    """GreedyMelder's policy (see the module docstring)."""

    name = "greedy"


class PlannerPolicy(HeuristicPolicy):
    """Planner's policy (see the module docstring)."""

    name = "planner"
    wild_keep = 100.0
    feed_base = 40.0
    feed_per_pile_tile = 4.0
    #: hand size under which a bigger hand (a taken pile) delays the muerto
    going_out_size = 6
    #: what the pile must be worth (beyond a stock draw) to take it, when its
    #: top tile melds at once, and when it does not
    take_threshold = 18.0
    take_threshold_blind = 60.0

    # ------------------------------------------------------------ draw
    def _take_pile(self, ctx: _Ctx) -> bool:
        """Take when what it melds from the pile (plus the wilds in it) beats
        a stock draw, net of the risk of being caught with the extra tiles."""
        state = ctx.state
        pile = state.pile
        top = pile[-1]
        top_useful = IS_WILD[top] or ctx.top_melds_naturally(top)
        before = meld_gain(ctx.hand, ctx.own, ctx)
        after_hand = ctx.hand[:]
        for k in pile:
            after_hand[k] += 1
        after = meld_gain(after_hand, ctx.own, ctx)
        gain = after - before
        gain += sum(25.0 for k in pile if IS_WILD[k])
        gain += 2.0 * len(pile)  # material for later melds
        if ctx.danger:
            gain -= sum(ctx.facts.values[k] for k in pile) * 0.6
        elif not ctx.muerto_taken and ctx.size <= self.going_out_size:
            gain -= 3.0 * len(pile)  # a bigger hand delays the muerto
        threshold = self.take_threshold if top_useful else self.take_threshold_blind
        return gain > threshold

    # ------------------------------------------------------------ meld choices
    def _wild_add_score(self, ctx: _Ctx, meld: Meld, new_length: int) -> float:
        if new_length >= CANASTA_LENGTH:
            if ctx.rules.close_requires_clean_canasta and not ctx.clean_canasta and not ctx.danger:
                # a clean 6 may still become the clean canasta the side needs to close
                return 20.0 if ctx.going_out else -20.0
            return 110.0
        if ctx.going_out or ctx.danger:
            return 25.0 + 4.0 * new_length
        return -30.0  # hold the wild for a canasta

    def _wild_meld_score(self, ctx: _Ctx, meld: Meld, value: int, ext: int) -> float:
        if ctx.going_out or ctx.danger:
            return 25.0 + value + 12.0 * ext - (10.0 if meld.wild_kind == JOKER else 0.0)
        if ext >= 3:
            return 5.0 + 12.0 * ext  # heading for a canasta anyway
        return -40.0

    def _add_score(self, ctx: _Ctx, slot: int, kind: int) -> float:
        score = super()._add_score(ctx, slot, kind)
        if score > 0:
            meld = ctx.own[slot]
            score += 6.0 * min(meld.length, 6)  # the meld closest to a canasta first
        return score

    def _emptying_adjustment(self, ctx: _Ctx, left: int) -> float:
        """Closing is a decision: when the side may close and should not yet,
        never leave fewer than two tiles (the discard would close)."""
        if ctx.muerto_taken and ctx.close_ready and left < 2 and not ctx.want_close:
            return NEG / 2
        return 0.0

    # ------------------------------------------------------------ discard
    def _keep(self, ctx: _Ctx, kind: int) -> float:
        """Usefulness with card counting: each 3-tile natural meld the tile
        could join counts by what of it is in hand and whether the missing
        tile is still live (not all its copies visible in melds or the pile)."""
        if IS_WILD[kind]:
            return self.wild_keep
        hand = ctx.hand
        unseen = ctx.unseen
        score = 45.0 if ctx.own_addable[kind] else 0.0
        duplicate = hand[kind] >= 2
        partial = 0.0
        hand[kind] -= 1  # the other tiles of a pattern, without this copy
        try:
            for a, b, is_run in ctx.facts.natural_others[kind]:
                if a == b:
                    have_a = min(hand[a], 2)
                    have = have_a
                    missing_live = unseen[a] if have_a < 2 else 0
                    if have_a == 0:
                        continue
                else:
                    have = (hand[a] > 0) + (hand[b] > 0)
                    if have == 0:
                        continue
                    missing_live = 0 if have == 2 else (unseen[b] if hand[a] > 0 else unseen[a])
                # a complete meld in hand, or a pair waiting for a live tile
                worth = 22.0 if have == 2 else 5.0 * min(missing_live, 2)
                if is_run and duplicate:
                    worth *= 0.3  # the other copy keeps this run
                partial += worth
        finally:
            hand[kind] += 1
        return score + min(partial, 45.0)

    def _feed(self, ctx: _Ctx, kind: int) -> float:
        """Besides the opponents' melds, the chance that the next player holds
        two tiles that meld with this one (from how many copies are unseen
        and how big his hidden hand is, exactly for tiles he is known to
        hold): taking the pile is then open to him."""
        penalty = super()._feed(ctx, kind)
        nxt = ctx.next_player
        known = ctx.next_known
        unseen = ctx.unseen
        f = ctx.hidden_share(nxt)
        p_none = 1.0
        for a, b, _is_run in ctx.facts.natural_others[kind]:
            if a == b:
                if known[a] >= 2:
                    p = 1.0
                elif known[a] == 1:
                    p = min(1.0, f * max(unseen[a], 0))
                else:
                    p = 0.5 * min(1.0, f * max(unseen[a], 0)) ** 2
            else:
                pa = 1.0 if known[a] else min(1.0, f * max(unseen[a], 0))
                pb = 1.0 if known[b] else min(1.0, f * max(unseen[b], 0))
                p = pa * pb
            p_none *= 1.0 - p
        weight = ctx.opponent_weights.get(ctx.state.side_of[nxt], 0.0)
        pile = len(ctx.state.pile) + 1
        return penalty + weight * (1.0 - p_none) * (self.feed_base + self.feed_per_pile_tile * pile)

    def _dump(self, ctx: _Ctx, kind: int) -> float:
        base = super()._dump(ctx, kind)
        if ctx.stock <= 20:
            base += 0.25 * ctx.facts.values[kind]
        return base


# --------------------------------------------------------------------------- decision context


class _Ctx:
    """Facts about the player to act, computed lazily once per decision."""

    def __init__(self, state: GameState) -> None:
        self.state = state
        self.rules = state.rules
        self.facts = rule_facts(state.rules)
        self.player = state.current
        self.side = state.side_of[self.player]
        self.hand: list[int] = state.hands[self.player].tolist()
        self.size = state.hand_size[self.player]
        self.own: list[Meld] = state.melds[self.side]
        self.stock = len(state.stock)
        self.muerto_taken = state.muerto_taken[self.side]
        self.close_ready = state.close_ready[self.side]
        self.next_player = (self.player + 1) % state.num_players
        self._own_addable: list[bool] | None = None
        self._side_addable: dict[int, list[bool]] = {}
        self._danger: bool | None = None
        self._want_close: bool | None = None
        self._leftover: int | None = None
        self._unseen: list[int] | None = None
        self._next_known: list[int] | None = None
        self._going_out: bool | None = None

    # -- melds
    @property
    def own_addable(self) -> list[bool]:
        """Per kind: it can be added to one of our melds as a natural tile."""
        if self._own_addable is None:
            self._own_addable = self._natural_addable(self.own)
        return self._own_addable

    def side_addable(self, side: int) -> list[bool]:
        """Per kind: it can be added to one of ``side``'s melds (any way)."""
        found = self._side_addable.get(side)
        if found is None:
            used = len(self.state.melds[side])
            if used:
                rows = self.state.addable[side, : used * NUM_KINDS].reshape(used, NUM_KINDS)
                found = rows.any(axis=0).tolist()
            else:
                found = [False] * NUM_KINDS
            self._side_addable[side] = found
        return found

    def _natural_addable(self, melds: list[Meld]) -> list[bool]:
        out = [False] * NUM_KINDS
        for meld in melds:
            for k in self.facts.natural_adds(meld, self.state.t):
                out[k] = True
        return out

    @property
    def unseen(self) -> list[int]:
        """Copies of each kind this player cannot locate (other hands beyond
        their known tiles, stock, muertos): the live ones."""
        if self._unseen is None:
            state = self.state
            located = state.pile_counts.astype(np.int64) + state.hands[self.player]
            for q in range(state.num_players):
                if q != self.player:
                    located += state.known[q]
            unseen = (self.facts.full_counts - located).tolist()
            kinds_of = self.facts.meld_kinds
            for side_melds in state.melds:
                for meld in side_melds:
                    for k in kinds_of(meld):
                        unseen[k] -= 1
            self._unseen = unseen
        return self._unseen

    @property
    def next_known(self) -> list[int]:
        """Tiles the next player took with the pile and still holds."""
        if self._next_known is None:
            self._next_known = self.state.known[self.next_player].tolist()
        return self._next_known

    def hidden_share(self, player: int) -> float:
        """The chance that one unseen tile is in ``player``'s hidden hand."""
        total = sum(self.unseen)
        if total <= 0:
            return 0.0
        hidden = self.state.hand_size[player] - int(self.state.known[player].sum())
        return max(0.0, hidden / total)

    @property
    def opponent_weights(self) -> dict[int, float]:
        """Opponent sides and how much feeding each matters: the next seat
        takes the pile first."""
        state = self.state
        nxt_side = state.side_of[self.next_player]
        return {s: (1.0 if s == nxt_side else 0.4) for s in range(state.num_sides) if s != self.side}

    @property
    def clean_canasta(self) -> bool:
        return any(m.is_canasta and m.clean for m in self.own)

    def extension(self, meld: Meld, hand: list[int]) -> int:
        """How many tiles of ``hand`` would extend ``meld`` naturally, in a chain."""
        if meld.is_run:
            colour, count = meld.colour, 0
            pos = meld.lo - 1
            while pos >= 1 and hand[kind_at(colour, pos)] > 0 and pos != meld.wild_pos:
                count += 1
                pos -= 1
            pos = meld.hi + 1
            while pos <= NUM_POSITIONS and hand[kind_at(colour, pos)] > 0:
                count += 1
                pos += 1
            if meld.wild_kind >= 0 and hand[kind_at(colour, meld.wild_pos)] > 0:
                count += 1
            return count
        number = meld.number
        if self.rules.set_colours_distinct:
            return sum(1 for c in range(NUM_COLOURS) if not meld.set_colours[c] and hand[kind_of(c, number)] > 0)
        return sum(min(hand[kind_of(c, number)], 2 - meld.set_colours[c]) for c in range(NUM_COLOURS))

    def top_melds_naturally(self, top: int) -> bool:
        """The pile's top tile can be melded at once without a wild: added to
        one of our melds or melded with two tiles of the hand."""
        if self.own_addable[top]:
            return True
        hand = self.hand
        for _i, kinds in self.facts.natural_with[top]:
            need: dict[int, int] = {}
            for k in kinds:
                need[k] = need.get(k, 0) + 1
            need[top] -= 1
            if all(hand[k] >= n for k, n in need.items()):
                return True
        return False

    # -- the situation
    @property
    def leftover(self) -> int:
        """Tiles left in hand after melding everything possible, wilds included."""
        if self._leftover is None:
            self._leftover = sum(simulate_melding(self.hand, self.own, self, use_wilds=True)[1])
        return self._leftover

    @property
    def going_out(self) -> bool:
        """Emptying the hand now (or leaving one tile to discard) takes the
        muerto (B19-B21) or closes (B22) this turn: worth spending wilds."""
        if self._going_out is None:
            if self.muerto_taken and not (self.close_ready and self.want_close):
                self._going_out = False
            else:
                self._going_out = self.leftover <= 1
        return self._going_out

    @property
    def danger(self) -> bool:
        """The hand may end soon: the stock is nearly out or an opponent side
        can close and holds few tiles."""
        if self._danger is None:
            state = self.state
            danger = self.stock <= 10
            if not danger:
                for q in range(state.num_players):
                    s = state.side_of[q]
                    if s == self.side or not state.muerto_taken[s]:
                        continue
                    if state.hand_size[q] <= (5 if state.close_ready[s] else 3):
                        danger = True
                        break
            self._danger = danger
        return self._danger

    @property
    def want_close(self) -> bool:
        """Close when our estimate beats every other side's, or when little
        is left to gain (late, or an opponent is about to close)."""
        if self._want_close is None:
            est = side_estimates(self.state, self.player)
            own = est[self.side] + self.rules.closing_bonus
            # our hand leaves the count when we close
            own += float(sum(self.facts.values[k] * c for k, c in enumerate(self.hand) if c))
            best_other = max(v for s, v in enumerate(est) if s != self.side)
            self._want_close = own >= best_other or self.danger or self.stock <= 15
        return self._want_close


def meld_gain(hand: list[int], melds: list[Meld], ctx: _Ctx) -> float:
    """What a hand could meld at once with natural tiles (additions, then new
    melds), as points: tile values plus canasta progress. Used to value the
    discard pile (tiles that meld) against the stock."""
    return simulate_melding(hand, melds, ctx, use_wilds=False)[0]


def simulate_melding(hand: list[int], melds: list[Meld], ctx: _Ctx, use_wilds: bool) -> tuple[float, list[int]]:
    """Meld greedily on plain lists (no engine state): natural additions,
    then natural melds that start the longest meld, then (``use_wilds``)
    wild melds and wild additions. Returns the points gained (values and
    canasta progress) and the hand left over."""
    facts = ctx.facts
    t = ctx.state.t
    hand = hand[:]
    melds = list(melds)
    gain = 0.0
    for _ in range(60):
        progressed = False
        for j, meld in enumerate(melds):
            addable = t.addable(meld)
            for k in range(NUM_KINDS):
                if hand[k] <= 0 or not addable[k]:
                    continue
                natural = [o for o in t.outcomes(meld, k) if o.wild_kind == meld.wild_kind]
                if natural:
                    new = natural[0]
                    gain += facts.values[k] + meld_progress(new, facts) - meld_progress(meld, facts)
                    hand[k] -= 1
                    melds[j] = meld = new
                    addable = t.addable(meld)
                    progressed = True
        if progressed:
            continue
        available = patterns_available(np.asarray(hand, dtype=np.int8))
        choices = np.flatnonzero(available & facts.natural_allowed)
        if choices.size == 0 and use_wilds:
            choices = np.flatnonzero(available & facts.allowed)
        if choices.size == 0:
            if use_wilds:
                placed = _place_wild(hand, melds, ctx)
                if placed is not None:
                    gain += placed
                    continue
            break
        best, best_ext = -1, -1
        for i in choices.tolist():
            h2 = hand[:]
            for k in facts.pattern_kinds[i]:
                h2[k] -= 1
            ext = ctx.extension(PATTERNS[i], h2)
            if ext > best_ext:
                best, best_ext = i, ext
        for k in facts.pattern_kinds[best]:
            hand[k] -= 1
        meld = PATTERNS[best]
        melds.append(meld)
        gain += facts.pattern_value[best] + meld_progress(meld, facts) + 10.0
    return gain, hand


def _place_wild(hand: list[int], melds: list[Meld], ctx: _Ctx) -> float | None:
    """Add one wild of the hand to a clean meld (the longest); the gain, or
    None when no wild can go anywhere."""
    facts = ctx.facts
    t = ctx.state.t
    for k in (JOKER, *[kind_of(c, 2) for c in range(NUM_COLOURS)]):
        if hand[k] <= 0:
            continue
        best_j, best_len = -1, -1
        for j, meld in enumerate(melds):
            if meld.clean and t.outcomes(meld, k) and meld.length > best_len:
                best_j, best_len = j, meld.length
        if best_j >= 0:
            meld = melds[best_j]
            new = t.outcomes(meld, k)[0]
            hand[k] -= 1
            melds[best_j] = new
            return facts.values[k] + meld_progress(new, facts) - meld_progress(meld, facts)
    return None


# --------------------------------------------------------------------------- evaluation (search)


def evaluate_sides(state: GameState) -> list[float]:
    """A static value of each side's position, for the search's depth cutoff.

    Melds count with their canasta progress; a tile in hand costs a share of
    its value that grows as the stock runs out (early on most tiles still get
    melded), a tile that fits one of the side's melds costs little, and a
    wild is an asset while the stock is big; an untaken muerto costs its
    penalty (less, the closer the side is to emptying a hand), and a side
    that may close gets part of the closing bonus. On a finished hand it is
    the real score (B26).
    """
    if state.phase == Phase.HAND_OVER:
        if state.hand_scores is None:
            return [0.0] * state.num_sides
        return [float(s.total) for s in state.hand_scores]
    rules = state.rules
    facts = rule_facts(rules)
    values = facts.values
    initial = max(1, rules.stock_size(state.num_players))
    left = min(1.0, len(state.stock) / initial)
    hand_cost = 0.35 + 0.65 * (1.0 - left)
    wild_asset = 25.0 * left
    out: list[float] = []
    for s in range(state.num_sides):
        total = 0.0
        fits = [False] * NUM_KINDS
        for meld in state.melds[s]:
            total += meld_value(meld, state.t.values) + meld_progress(meld, facts)
            for k in facts.natural_adds(meld, state.t):
                fits[k] = True
        smallest = 99
        for q in range(state.num_players):
            if state.side_of[q] != s:
                continue
            hand = state.hands[q].tolist()
            for k, c in enumerate(hand):
                if not c:
                    continue
                if IS_WILD[k]:
                    total += c * (wild_asset - hand_cost * values[k])
                elif fits[k]:
                    total += c * 0.3 * values[k]
                else:
                    total -= c * hand_cost * values[k]
            smallest = min(smallest, state.hand_size[q])
        if not state.muerto_taken[s]:
            total -= rules.muerto_penalty * min(1.0, 0.4 + smallest / 15.0)
        elif state.close_ready[s]:
            total += rules.closing_bonus * max(0.0, 0.6 - smallest / 15.0)
        out.append(total)
    return out


# --------------------------------------------------------------------------- the agents


class _HeuristicAgent:
    """An agent that asks a :class:`HeuristicPolicy` about its seat's view."""

    name = "heuristic"
    policy_class: type[HeuristicPolicy] = HeuristicPolicy

    def __init__(self, seed: int | None = None) -> None:
        self.seed = seed  # decisions are deterministic; kept for the registry's uniform signature
        self.policy = self.policy_class()
        self.seat = -1
        self.rules: Rules | None = None
        self.num_players = 2

    def reset(self, seat: int, rules: Any = None, num_players: int = 2) -> None:
        """Called at the start of each hand."""
        self.seat = seat
        self.rules = rules
        self.num_players = num_players

    def act(self, observation: dict[str, np.ndarray], view: SeatView) -> int:
        mask = observation.get("action_mask") if observation is not None else None
        legal = np.flatnonzero(mask).tolist() if mask is not None else view.legal_actions()
        if not legal:
            raise ValueError(f"{type(self).__name__}.act: no legal action in the mask")
        if len(legal) == 1:
            return legal[0]
        return self.policy.choose(view.public_state(), legal)


class GreedyMelder(_HeuristicAgent):
    """Melds everything at once, takes the pile only for an immediate meld
    (module docstring)."""

    name = "greedy"
    policy_class = GreedyPolicy


class Planner(_HeuristicAgent):
    """Builds canastas, races for the muerto, values the pile, avoids feeding
    opponents, closes when ahead (module docstring)."""

    name = "planner"
    policy_class = PlannerPolicy


__all__ = [
    "GreedyMelder",
    "GreedyPolicy",
    "HeuristicPolicy",
    "Planner",
    "PlannerPolicy",
    "evaluate_sides",
    "meld_gain",
    "rule_facts",
    "side_estimates",
]
