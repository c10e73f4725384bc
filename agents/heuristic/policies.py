"""The heuristics' decision rules: :class:`HeuristicPolicy` (the shared
machinery, GreedyMelder's style) and :class:`PlannerPolicy` (its overrides).

``choose(state, legal)`` works on any engine state, for the player to act,
and reads only that player's own hand and public facts (through
:class:`~agents.heuristic.position.Position`). Each decision is scored with
cheap features; every number comes from the policy's
:class:`~agents.heuristic.weights.HeuristicWeights`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agents.heuristic.facts import NEG, NEIGHBOURS_1, NEIGHBOURS_2, SAME_NUMBER
from agents.heuristic.position import Position
from agents.heuristic.simulation import meld_gain
from agents.heuristic.weights import GREEDY_WEIGHTS, PLANNER_WEIGHTS, HeuristicWeights, resolve_weights
from burako_env import actions as A
from burako_env.engine import GameState, Phase
from burako_env.melds import CANASTA_LENGTH, PATTERNS, Meld, is_natural_addition
from burako_env.tiles import IS_WILD, JOKER, NUM_POSITIONS


class HeuristicPolicy:
    """The shared machinery of both heuristics; subclasses set the style.

    ``weights``: a :class:`HeuristicWeights`, or a mapping of changes to the
    class's preset (``default_weights``).
    """

    name = "heuristic"
    default_weights: HeuristicWeights = GREEDY_WEIGHTS

    def __init__(self, weights: HeuristicWeights | Mapping[str, Any] | None = None) -> None:
        self.weights = resolve_weights(weights, self.default_weights)

    # ------------------------------------------------------------ entry point
    def choose(self, state: GameState, legal: list[int]) -> int:
        if len(legal) == 1:
            return legal[0]
        phase = state.phase
        ctx = Position(state, self.weights)
        if phase == Phase.DRAW:
            action = self._draw(ctx)
        elif phase == Phase.PRIVILEGE:
            action = self._privilege(ctx)
        elif phase == Phase.CHOOSE_END:
            action = self._choose_end(ctx, legal)
        else:
            action = self._play(ctx, legal)
        if action not in legal:  # defensive: the mask always has the final word
            action = legal[0]
        return action

    def ranked(self, state: GameState, legal: list[int]) -> list[int]:
        """The legal actions, best first by this policy's scores (for search
        root reduction). The policy's own choice always comes first."""
        if len(legal) <= 1:
            return list(legal)
        if state.phase == Phase.PLAY:
            return self._play_ranking(Position(state, self.weights), legal)
        first = self.choose(state, legal)
        return [first] + [a for a in legal if a != first]

    # ------------------------------------------------------------ draw
    def _draw(self, ctx: Position) -> int:
        if not ctx.state.pile:
            return A.DRAW_STOCK
        if ctx.state.legal_mask()[A.TAKE_PILE] and self._take_pile(ctx):
            return A.TAKE_PILE
        return A.DRAW_STOCK

    def _take_pile(self, ctx: Position) -> bool:
        """Greedy: take when the top tile melds at once with naturals, or is a wild."""
        top = ctx.state.pile[-1]
        return IS_WILD[top] or ctx.top_melds_naturally(top)

    # ------------------------------------------------------------ privilege (B17)
    def _privilege(self, ctx: Position) -> int:
        tile = ctx.state.privilege_tile
        if tile < 0:
            return A.KEEP
        worth = self._keep(ctx, tile) + self._feed(ctx, tile)
        return A.KEEP if worth >= self.weights.privilege_keep_threshold else A.REJECT

    # ------------------------------------------------------------ choose the end (B10)
    def _choose_end(self, ctx: Position, legal: list[int]) -> int:
        pending = ctx.state.pending
        if pending is None:
            return legal[0]
        w = self.weights
        _slot, kind, outcomes = pending
        hand = ctx.hand[:]
        hand[kind] -= 1
        best, best_score = legal[0], NEG
        for a in legal:
            meld = outcomes[a - A.CHOOSE_BASE]
            score = w.choose_clean * meld.clean + ctx.extension(meld, hand) * w.choose_extension
            if meld.is_run:
                score += w.choose_room * min(meld.lo - 1, NUM_POSITIONS - meld.hi)  # room at the tighter end
            if score > best_score:
                best, best_score = a, score
        return best

    # ------------------------------------------------------------ play
    def _play(self, ctx: Position, legal: list[int]) -> int:
        return self._play_ranking(ctx, legal)[0]

    def _play_ranking(self, ctx: Position, legal: list[int]) -> list[int]:
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

    def _play_score(self, ctx: Position, action: int) -> float:
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
            score += self.weights.pile_top_first  # V3: the taken pile's top tile first
        return score + self._emptying_adjustment(ctx, ctx.size - used)

    def _emptying_adjustment(self, ctx: Position, left: int) -> float:
        return 0.0

    def _add_score(self, ctx: Position, slot: int, kind: int) -> float:
        w = self.weights
        meld = ctx.own[slot]
        outcomes = ctx.state.t.outcomes(meld, kind)
        if not outcomes:
            return NEG
        outcome = outcomes[0]
        new_length = meld.length + 1
        if is_natural_addition(meld, outcome):
            return (
                w.natural_add_base
                + w.natural_add_per_length * min(new_length, CANASTA_LENGTH)
                + (w.canasta_completion if new_length == CANASTA_LENGTH else 0.0)
            )
        if meld.is_canasta:
            # a wild on a clean canasta turns a clean bonus into a dirty one
            # (B14) and may lose the clean canasta the side needs to close
            return w.wild_on_clean_canasta
        return self._wild_add_score(ctx, meld, new_length)

    def _wild_add_score(self, ctx: Position, meld: Meld, new_length: int) -> float:
        w = self.weights
        return (
            w.greedy_wild_add_base
            + (w.greedy_wild_add_canasta if new_length >= CANASTA_LENGTH else 0.0)
            + w.wild_add_per_length * new_length
        )

    def _meld_score(self, ctx: Position, pattern: int, kinds: tuple[int, ...]) -> float:
        w = self.weights
        meld = PATTERNS[pattern]
        hand = ctx.hand[:]
        for k in kinds:
            hand[k] -= 1
        ext = ctx.extension(meld, hand)
        value = ctx.facts.pattern_value[pattern]
        if meld.wild_kind < 0:
            return w.natural_meld_base + value + w.meld_extension * ext + (w.run_meld_bonus if meld.is_run else 0.0)
        return self._wild_meld_score(ctx, meld, value, ext)

    def _wild_meld_score(self, ctx: Position, meld: Meld, value: int, ext: int) -> float:
        w = self.weights
        return (
            w.greedy_wild_meld_base
            + value
            + w.meld_extension * ext
            - (w.joker_meld_cost if meld.wild_kind == JOKER else 0.0)
        )

    # ------------------------------------------------------------ discard
    def _discard_cost(self, ctx: Position, kind: int) -> float:
        """Lower is a better discard: how much the tile helps us, how much it
        helps the next opponent, less what holding it may cost."""
        return self._keep(ctx, kind) + self._feed(ctx, kind) - self._dump(ctx, kind)

    def _keep(self, ctx: Position, kind: int) -> float:
        """How useful a tile in hand is to us: wilds, tiles that fit our melds,
        pairs for sets, neighbours for runs."""
        w = self.weights
        if IS_WILD[kind]:
            return w.wild_keep
        hand = ctx.hand
        score = w.keep_fits_own if ctx.own_addable[kind] else 0.0
        near = sum(1 for k in NEIGHBOURS_1[kind] if hand[k] > 0)
        far = sum(1 for k in NEIGHBOURS_2[kind] if hand[k] > 0)
        run = (
            w.keep_neighbour * near
            + w.keep_far_neighbour * far
            + (w.keep_connected if near >= 2 or (near and far) else 0.0)
        )
        if hand[kind] >= 2:
            run *= w.keep_run_duplicate_share  # the other copy keeps these connections
        score += run
        if ctx.rules.sets_allowed and SAME_NUMBER[kind]:
            if ctx.rules.set_colours_distinct:
                partners = sum(1 for k in SAME_NUMBER[kind] if hand[k] > 0)
                score += w.keep_set_partner_distinct * min(partners, 2)
            else:
                partners = sum(hand[k] for k in SAME_NUMBER[kind]) + hand[kind] - 1
                score += w.keep_set_partner * min(partners, 2)
        return score

    def _feed_cost(self, ctx: Position) -> float:
        """What handing over the pile (with the discard on it) costs."""
        w = self.weights
        return w.feed_base + w.feed_per_pile_tile * (len(ctx.state.pile) + 1)

    def _feed(self, ctx: Position, kind: int) -> float:
        """How much discarding the tile helps the next opponent: it fits one of
        their melds (they take the whole pile), or melds with tiles they are
        known to hold; a wild always helps them."""
        w = self.weights
        cost = self._feed_cost(ctx)
        penalty = 0.0
        for s, side_weight in ctx.opponent_weights.items():
            if ctx.side_addable(s)[kind]:
                penalty += side_weight * cost
        if ctx.next_known_any:
            known = ctx.next_known
            for need in ctx.facts.natural_partners[kind]:
                if all(known[k] > 0 for k in need):
                    penalty += w.feed_known_share * cost
                    break
        if IS_WILD[kind]:
            penalty += w.feed_wild
        return penalty

    def _dump(self, ctx: Position, kind: int) -> float:
        """What holding a tile may cost at the end of the hand (B26)."""
        w = self.weights
        return ctx.facts.values[kind] * (w.dump_share + (w.dump_danger_share if ctx.danger else 0.0))


class GreedyPolicy(HeuristicPolicy):
    """GreedyMelder's policy: "meld everything now" (package docstring)."""

    name = "greedy"


class PlannerPolicy(HeuristicPolicy):
    """Planner's policy: "build canastas, race for the muerto, don't feed
    the pile" (package docstring)."""

    name = "planner"
    default_weights = PLANNER_WEIGHTS

    # ------------------------------------------------------------ draw
    def _take_pile(self, ctx: Position) -> bool:
        """Take when what it melds from the pile (plus the wilds in it) beats
        a stock draw, net of the risk of being caught with the extra tiles."""
        w = self.weights
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
        gain += sum(w.pile_wild_value for k in pile if IS_WILD[k])
        gain += w.pile_material_per_tile * len(pile)  # material for later melds
        if ctx.danger:
            gain -= sum(ctx.facts.values[k] for k in pile) * w.pile_danger_share
        elif not ctx.muerto_taken and ctx.size <= w.going_out_size:
            gain -= w.pile_delay_per_tile * len(pile)  # a bigger hand delays the muerto
        threshold = w.take_threshold if top_useful else w.take_threshold_blind
        return gain > threshold

    # ------------------------------------------------------------ meld choices
    def _wild_add_score(self, ctx: Position, meld: Meld, new_length: int) -> float:
        w = self.weights
        if new_length >= CANASTA_LENGTH:
            if ctx.rules.close_requires_clean_canasta and not ctx.clean_canasta and not ctx.danger:
                # a clean 6 may still become the clean canasta the side needs to close
                return w.wild_finish_dirty_going_out if ctx.going_out else w.wild_finish_dirty_hold
            return w.wild_finish_canasta
        if ctx.going_out or ctx.danger:
            return w.wild_going_out_base + w.wild_add_per_length * new_length
        return w.wild_add_hold  # hold the wild for a canasta

    def _wild_meld_score(self, ctx: Position, meld: Meld, value: int, ext: int) -> float:
        w = self.weights
        if ctx.going_out or ctx.danger:
            return (
                w.wild_going_out_base
                + value
                + w.meld_extension * ext
                - (w.joker_meld_cost if meld.wild_kind == JOKER else 0.0)
            )
        if ext >= w.wild_meld_long_extension:
            return w.wild_meld_long_base + w.meld_extension * ext  # heading for a canasta anyway
        return w.wild_meld_hold

    def _add_score(self, ctx: Position, slot: int, kind: int) -> float:
        score = super()._add_score(ctx, slot, kind)
        if score > 0:
            meld = ctx.own[slot]
            score += self.weights.add_per_meld_length * min(meld.length, CANASTA_LENGTH - 1)  # the closest first
        return score

    def _emptying_adjustment(self, ctx: Position, left: int) -> float:
        """Closing is a decision: when the side may close and should not yet,
        never leave fewer than two tiles (the discard would close)."""
        if ctx.muerto_taken and ctx.close_ready and left < 2 and not ctx.want_close:
            return NEG / 2
        return 0.0

    # ------------------------------------------------------------ discard
    def _keep(self, ctx: Position, kind: int) -> float:
        """Usefulness with card counting: each 3-tile natural meld the tile
        could join counts by what of it is in hand and whether the missing
        tile is still live (not all its copies visible in melds or the pile)."""
        w = self.weights
        if IS_WILD[kind]:
            return w.wild_keep
        hand = ctx.hand
        unseen = ctx.unseen
        score = w.keep_fits_own if ctx.own_addable[kind] else 0.0
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
                worth = w.keep_pattern_complete if have == 2 else w.keep_pattern_live * min(missing_live, 2)
                if is_run and duplicate:
                    worth *= w.keep_pattern_duplicate_share  # the other copy keeps this run
                partial += worth
        finally:
            hand[kind] += 1
        return score + min(partial, w.keep_pattern_cap)

    def _feed(self, ctx: Position, kind: int) -> float:
        """Besides the opponents' melds, the chance that the next player holds
        two tiles that meld with this one (from how many copies are unseen
        and how big his hidden hand is, exactly for tiles he is known to
        hold): taking the pile is then open to him."""
        penalty = super()._feed(ctx, kind)
        nxt = ctx.next_player
        holds_one, holds_two = ctx.next_holds
        p_none = 1.0
        for a, b, _is_run in ctx.facts.natural_others[kind]:
            p_none *= 1.0 - (holds_two[a] if a == b else holds_one[a] * holds_one[b])
        weight = ctx.opponent_weights.get(ctx.state.side_of[nxt], 0.0)
        return penalty + weight * (1.0 - p_none) * self._feed_cost(ctx)

    def _dump(self, ctx: Position, kind: int) -> float:
        w = self.weights
        base = super()._dump(ctx, kind)
        if ctx.stock <= w.dump_late_stock:
            base += w.dump_late_share * ctx.facts.values[kind]
        return base


__all__ = ["GreedyPolicy", "HeuristicPolicy", "PlannerPolicy"]
