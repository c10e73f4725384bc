"""The games a web table can hold, and what each seat may see of them.

A game plugs into the table through :class:`TableGame`: how to read table
rules sent by a browser, how to deal a hand from a seed, what one seat may see
(:meth:`TableGame.seat_view`, the only source of every live message about the
game, E2), the seat's legal moves in terms the page can click, and the frames
of a replay. The page draws the same generic pieces for every game (tile rows
per side, a discard pile, hand sizes, a stock, the seat's own hand), so a
second game (Rummy) needs one more adapter here and no new page.

Tiles travel as tile *kinds* (``burako_env.tiles``: ``colour * 13 + number - 1``,
52 = joker); the page draws a kind as a tile or, with ``cards``, as a card.

What a Burako seat may see (E2), and so all a live message may contain:
its own hand and (while deciding, B17) the privilege tile it drew, every
side's melds, the whole discard pile (every discard was shown face up), the
tiles other players took with the pile and still hold (``known``), hand
sizes, the stock's size, whether each muerto was taken, the pending choice of
its own ambiguous addition, scores. Never another hand, the stock's order or
a muerto's content. :meth:`BurakoTable.seat_view` reads exactly these fields
of the engine state, and the tests check that a view is unchanged when every
hidden part is resampled (``GameState.determinize``).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any, Protocol

import numpy as np

from agents.base import SeatView
from burako_env import actions as A
from burako_env.engine import VOID, GameState, Phase, draw_first_mano
from burako_env.melds import PATTERNS, Meld, describe_meld, meld_kinds
from burako_env.observation import Observer
from burako_env.records import build_record, replay_steps, rules_of
from burako_env.rules import Rules, RulesError, _read_yaml, load_rules, preset_names
from burako_env.tiles import NUM_KINDS

#: the most bytes of table rules (YAML) a browser may send
MAX_RULES_TEXT = 4096


class TableGame(Protocol):
    """What the web table needs from a game (one instance serves every room)."""

    name: str

    def rules_from_request(self, preset: str, yaml_text: str | None) -> Any:
        """Table rules from browser input: a preset name, or YAML on top of one.
        Never reads a file; bad input is a ValueError that names the problem."""

    def players_allowed(self, rules: Any) -> tuple[int, ...]: ...

    def target(self, rules: Any) -> int:
        """The match target (B28)."""

    def rules_summary(self, rules: Any) -> dict[str, Any]:
        """What the page shows of the rules: name, target, whether tiles are cards."""

    def deal(self, rules: Any, num_players: int, deal_seed: int) -> Any:
        """The hand dealt by ``deal_seed``, exactly as its record replays it."""

    def first_mano(self, num_players: int, deal_seed: int) -> int:
        """The mano the deal of ``deal_seed`` draws (B5)."""

    def seat_view(self, state: Any, seat: int) -> dict[str, Any]:
        """Everything ``seat`` may see, as JSON-ready data (E2)."""

    def legal_moves(self, state: Any, seat: int) -> list[dict[str, Any]]:
        """The seat's legal moves (empty when it is not its turn)."""

    def replay_frames(self, record: Mapping[str, Any]) -> dict[str, Any]:
        """A record checked by replaying it, as frames with every hand."""

    def new_hand(self, rules: Any, num_players: int, deal_seed: int, match_scores: list[int], hand_number: int) -> Any:
        """The hand of ``deal_seed`` inside a match: the deal as :meth:`deal`,
        carrying the match scores so the engine applies the target (B28)."""

    def next_mano(self, state: Any) -> int:
        """Who deals the next hand of the match after ``state`` ended (B5)."""

    def agent_move(self, agent: Any, state: Any, seat: int, rng: np.random.Generator) -> int:
        """Ask a registered agent for its move, with what the seat may see."""

    def record(
        self,
        state: Any,
        deal_seed: int,
        mano: int,
        names: list[str],
        actions: list[int],
        descriptions: list[str],
        meta: Mapping[str, Any],
    ) -> dict[str, Any]:
        """The finished hand's record (JSON lines, ``burako_env.records``)."""


def _kinds(counts: np.ndarray) -> list[int]:
    """Tile kinds of a count vector, repeated, sorted."""
    return np.repeat(np.arange(NUM_KINDS), counts.astype(np.int64)).tolist()


@functools.lru_cache(maxsize=16)
def _observer(num_players: int, rules: Rules) -> Observer:
    return Observer(num_players, rules)


def meld_data(meld: Meld, cards: bool) -> dict[str, Any]:
    """One meld for the page: tiles in table order (``meld_kinds``), the wild's
    place, canasta mark, text."""
    canasta = None
    if meld.is_canasta:
        canasta = "clean" if meld.clean else "dirty"
    wild = None  # the index in ``tiles`` of a wild standing in for another tile
    if meld.wild_kind >= 0:
        wild = meld.wild_pos - meld.lo if meld.is_run else meld.length - 1
    return {"tiles": list(meld_kinds(meld)), "canasta": canasta, "wild": wild, "text": describe_meld(meld, cards)}


class BurakoTable:
    """The Burako engine (``burako_env.engine.GameState``) at a web table."""

    name = "burako"

    # ------------------------------------------------------------------ rules
    def rules_from_request(self, preset: str, yaml_text: str | None) -> Rules:
        if not isinstance(preset, str) or preset not in preset_names():
            raise ValueError(f"unknown rules preset {preset!r}; presets: {', '.join(preset_names())}")
        if yaml_text is None or not yaml_text.strip():
            return load_rules(preset)
        if not isinstance(yaml_text, str) or len(yaml_text.encode()) > MAX_RULES_TEXT:
            raise ValueError(f"table rules: at most {MAX_RULES_TEXT} bytes of YAML")
        try:
            data = _read_yaml(yaml_text, "table rules")
            base = data.pop("preset", preset)
            # a preset names a packaged file only: a path here would read the server's disk
            if not isinstance(base, str) or base not in preset_names():
                raise RulesError(f"table rules: unknown preset {base!r}; presets: {', '.join(preset_names())}")
            return load_rules(base, data)
        except (RulesError, TypeError) as exc:
            raise ValueError(str(exc)) from exc

    def players_allowed(self, rules: Rules) -> tuple[int, ...]:
        return tuple(rules.players)

    def target(self, rules: Rules) -> int:
        return int(rules.target)

    def rules_summary(self, rules: Rules) -> dict[str, Any]:
        return {"name": rules.name, "target": rules.target, "cards": rules.cards}

    # ------------------------------------------------------------------ deals
    def first_mano(self, num_players: int, deal_seed: int) -> int:
        return draw_first_mano(np.random.default_rng(deal_seed), num_players)

    def deal(self, rules: Rules, num_players: int, deal_seed: int) -> GameState:
        return GameState.new_game(np.random.default_rng(deal_seed), rules, num_players)

    def new_hand(
        self, rules: Rules, num_players: int, deal_seed: int, match_scores: list[int], hand_number: int
    ) -> GameState:
        state = self.deal(rules, num_players, deal_seed)
        if match_scores:
            state.match_scores = [int(x) for x in match_scores]
        state.hand_number = hand_number
        return state

    def next_mano(self, state: GameState) -> int:
        return state.mano if state.end_reason == VOID else (state.mano + 1) % state.num_players

    def agent_move(self, agent: Any, state: GameState, seat: int, rng: np.random.Generator) -> int:
        observation = {
            "observation": _observer(state.num_players, state.rules).encode(state, seat),
            "action_mask": state.legal_mask().copy(),
        }
        return agent.act(observation, SeatView(state, seat, rng))

    def record(
        self,
        state: GameState,
        deal_seed: int,
        mano: int,
        names: list[str],
        actions: list[int],
        descriptions: list[str],
        meta: Mapping[str, Any],
    ) -> dict[str, Any]:
        return build_record(state, deal_seed, mano, names, actions, descriptions, meta)

    # ------------------------------------------------------------------ views
    def seat_view(self, state: GameState, seat: int) -> dict[str, Any]:
        cards = state.rules.cards
        mine = state.current == seat
        view: dict[str, Any] = {
            "game": self.name,
            "cards": cards,
            "num_players": state.num_players,
            "num_sides": state.num_sides,
            "side_of": list(state.side_of),
            "seat": seat,
            "phase": state.phase.name,
            "current": state.current,
            "mano": state.mano,
            "turn": state.turn,
            "hand": _kinds(state.hands[seat]),
            "privilege_tile": int(state.privilege_tile) if mine and state.phase == Phase.PRIVILEGE else None,
            "melds": [[meld_data(m, cards) for m in side] for side in state.melds],
            "pile": [int(k) for k in state.pile],
            "pile_top_required": int(state.pile_top_required) if state.pile_top_required >= 0 else None,
            "known": [_kinds(state.known[p]) for p in range(state.num_players)],
            "hand_sizes": [int(x) for x in state.hand_size],
            "stock_size": len(state.stock),
            "muerto_taken": [bool(x) for x in state.muerto_taken],
            "muerto_sizes": [0 if state.muerto_taken[s] else len(state.muertos[s]) for s in range(state.num_sides)],
            "match_scores": [int(x) for x in state.match_scores],
            "pending": None,
            "end_reason": state.end_reason,
            "closer": state.closer,
            "hand_scores": None if state.hand_scores is None else [s.to_dict() for s in state.hand_scores],
        }
        if mine and state.pending is not None:
            slot, kind, outcomes = state.pending
            view["pending"] = {"slot": slot, "tile": kind, "options": [meld_data(m, cards) for m in outcomes]}
        return view

    def legal_moves(self, state: GameState, seat: int) -> list[dict[str, Any]]:
        """Each legal action with what the page needs to offer it: its tiles
        (a discard, a 3-tile meld, an addition), the meld slot, the option."""
        if state.hand_over or state.current != seat:
            return []
        moves = []
        for action in state.legal_actions():
            what, a, b = A.decode(action)
            move: dict[str, Any] = {"action": action, "kind": what, "text": state.describe(action)}
            if what == A.DISCARD:
                move["tiles"] = [a]
            elif what == A.MELD:
                move["tiles"] = sorted(meld_kinds(PATTERNS[a]))
            elif what == A.ADD:
                move["tiles"] = [b]
                move["slot"] = a
            elif what == A.CHOOSE:
                move["option"] = a
            moves.append(move)
        return moves

    def full_view(self, state: GameState) -> dict[str, Any]:
        """Every seat's view plus every hand and the muertos (replays only:
        a record names its deal seed, so nothing in it is secret)."""
        view = self.seat_view(state, state.current)
        view["hands"] = [_kinds(state.hands[p]) for p in range(state.num_players)]
        view["privilege_tile"] = int(state.privilege_tile) if state.phase == Phase.PRIVILEGE else None
        view["muertos"] = [[int(k) for k in sorted(m)] for m in state.muertos]
        return view

    def replay_frames(self, record: Mapping[str, Any]) -> dict[str, Any]:
        frames = []
        for step in replay_steps(record):  # checks every action and the outcome (E4)
            frame = self.full_view(step.state)
            frame["index"] = step.index
            frame["by"] = step.seat
            frame["move"] = step.description
            frames.append(frame)
        rules = rules_of(record)
        return {
            "game": self.name,
            "rules": rules.name,
            "cards": rules.cards,
            "agents": list(record["agents"]),
            "num_players": record["num_players"],
            "deal_seed": str(record["deal_seed"]),  # as text: 128-bit seeds do not fit JavaScript's numbers
            "end_reason": record["end_reason"],
            "hand_scores": record["hand_scores"],
            "frames": frames,
        }


#: the games a room may hold, by name (Rummy joins here once its engine exists)
GAMES: dict[str, TableGame] = {"burako": BurakoTable()}


def game_named(name: Any) -> TableGame:
    if not isinstance(name, str) or name not in GAMES:
        raise ValueError(f"unknown game {name!r}; games: {', '.join(GAMES)}")
    return GAMES[name]
