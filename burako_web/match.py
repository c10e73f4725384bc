"""A match at one web table: seats, deals, moves, bots and records (no web code).

The match runs hand after hand until a side reaches the target (B28). Each
hand is dealt by its own deal seed exactly as ``burako_env.records.replay``
deals it, so every hand played on the web is written as a record that
replays exactly (E4). The mano still passes left from hand to hand (B5; a
void hand is dealt again by the same mano, B24): the deal seed of hand ``k``
is the first of ``seed_base(k), seed_base(k) + 1, ...`` whose deal draws the
mano the match needs (about one try in ``num_players``).

Every move, a person's or a bot's, goes through :meth:`Match.play`, which
checks the seat, the turn and the engine's mask and changes nothing when it
refuses (:class:`MoveError`).
"""

from __future__ import annotations

import contextlib
import functools
import logging
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from agents.registry import agent_games, agent_names, make_agent
from burako_env.records import RecordWriter
from burako_env.views import view_generator
from burako_web.games import TableGame

log = logging.getLogger("burako_web")

PERSON = "person"
#: how many seeds past seed_base(k) may be tried for the mano the match needs
MAX_SEED_TRIES = 10_000


@contextlib.contextmanager
def _one_torch_thread() -> Iterator[None]:
    """One move of a network bot is a small forward pass: on a busy server,
    torch's thread pool costs far more than it brings (measured 128 ms a move
    with 2 threads against 6 ms with 1, load 10 on 2 cores)."""
    torch = sys.modules.get("torch")
    if torch is None:
        yield
        return
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


@functools.lru_cache(maxsize=1)
def _shipped_policy_net() -> Any:
    """The shipped bot's network, read once per server (building one costs
    seconds: its layers are initialised before the weights are loaded)."""
    from agents import checkpoint as ckpt
    from agents.policy import DEFAULT_CHECKPOINT

    with _one_torch_thread():
        net, _ = ckpt.build_policy(ckpt.load(str(DEFAULT_CHECKPOINT)), source=str(DEFAULT_CHECKPOINT))
    return net  # build_policy returns it in eval mode


def default_bot(rules: Any, num_players: int) -> str:
    """The shipped bot where its network fits the table (its observation
    layout is that of one player count), else the ``planner`` heuristic."""
    from burako_env.observation import layout_id

    try:
        fits = _shipped_policy_net().shape.layout == layout_id(num_players, rules)
    except (OSError, ValueError, ImportError):  # no checkpoint shipped, one that cannot be read, or no torch
        fits = False
    return "policy" if fits else "planner"


class MoveError(ValueError):
    """A move that is refused (wrong seat, not its turn, not legal); nothing changed."""


def seat_kinds(game: str = "burako") -> list[str]:
    """What may sit at a seat of ``game``'s table: a person or a registered agent that plays it
    (plug-ins the registry cannot place are offered too, and refused by their own ``reset`` if unfit)."""
    return [PERSON] + [name for name in agent_names() if name != "human" and game in (agent_games(name) or (game,))]


@dataclass
class LastMove:
    seat: int
    text: str
    hand: int
    step: int


class Match:
    """One match: the engine state of the current hand and everything around it."""

    def __init__(
        self,
        game: TableGame,
        rules: Any,
        num_players: int,
        seats: Sequence[str],
        seed: int,
        record_path: Path | None = None,
        meta: dict[str, Any] | None = None,
    ) -> None:
        if num_players not in game.players_allowed(rules):
            raise ValueError(
                f"{num_players} players is not allowed by these rules ({list(game.players_allowed(rules))})"
            )
        if len(seats) != num_players:
            raise ValueError(f"{len(seats)} seats given for {num_players} players")
        known = seat_kinds(game.name)
        for seat, kind in enumerate(seats):
            if kind not in known:
                raise ValueError(
                    f"seat {seat}: unknown player {kind!r} at a {game.name} table; choose one of {', '.join(known)}"
                )
        self.game = game
        self.rules = rules
        self.num_players = num_players
        self.seats = list(seats)
        self.seed = int(seed)
        self.meta = dict(meta or {})
        self.agents: list[Any] = [None] * num_players
        for seat, kind in enumerate(self.seats):
            if kind != PERSON:
                seed_of_seat = int(np.random.SeedSequence([self.seed, 1, seat]).generate_state(1)[0])
                if kind == "policy":  # the shipped bot: one network for every room (read once, shared)
                    agent = make_agent(kind, seed=seed_of_seat, net=_shipped_policy_net())
                else:
                    agent = make_agent(kind, seed=seed_of_seat)
                agent.reset(
                    seat, rules, num_players
                )  # refuses rules/players it cannot play (e.g. a checkpoint's layout)
                self.agents[seat] = agent
        self.record_path = record_path
        #: why the last hand's record could not be written (the disk, not the game): shown to the room
        self.record_error: str | None = None
        self.records: list[dict[str, Any]] = []
        self.hand_number = -1
        self.match_scores: list[int] = []
        self.next_mano: int | None = None
        self.state: Any = None
        self.deal_seed = -1
        self.mano = -1
        self.actions: list[int] = []
        self.descriptions: list[str] = []
        self.last_move: LastMove | None = None
        self.match_over = False

    # ------------------------------------------------------------------ hands
    def seed_base(self, hand: int) -> int:
        """128 bits, from the match's seed (128 bits at random): a seat knows its own hand and the mano,
        which pin a 32-bit deal seed, and a search over 2**32 seeds would show every hidden tile."""
        return int.from_bytes(np.random.SeedSequence([self.seed, 0, hand]).generate_state(4).tobytes(), "little")

    def start_hand(self) -> None:
        """Deal the next hand (the first one too)."""
        if self.match_over:
            raise MoveError("the match is over")
        if self.state is not None and not self.hand_over:
            raise MoveError("the current hand is not over")
        self.hand_number += 1
        base = self.seed_base(self.hand_number)
        seed = base
        if self.next_mano is not None:
            for seed in range(base, base + MAX_SEED_TRIES):
                if self.game.first_mano(self.num_players, seed) == self.next_mano:
                    break
            else:  # pragma: no cover - (1 - 1/n)^10000
                raise RuntimeError("no deal seed draws the mano this hand needs")
        self.deal_seed = seed
        self.state = self.game.new_hand(self.rules, self.num_players, seed, self.match_scores, self.hand_number)
        self.match_scores = [int(x) for x in self.state.match_scores]
        self.mano = self.state.mano
        self.actions = []
        self.descriptions = []
        self.view_rngs = [view_generator(seed, seat) for seat in range(self.num_players)]
        for seat, agent in enumerate(self.agents):
            if agent is not None:
                agent.reset(seat, self.rules, self.num_players)

    @property
    def hand_over(self) -> bool:
        return self.state is not None and self.state.hand_over

    @property
    def step(self) -> int:
        """Actions played in this hand."""
        return len(self.actions)

    def bot_to_act(self) -> bool:
        return self.state is not None and not self.hand_over and self.agents[self.state.current] is not None

    # ------------------------------------------------------------------ moves
    def play(self, seat: int, action: Any) -> str:
        """Apply ``seat``'s move after checking everything; returns its text."""
        state = self.state
        if state is None:
            raise MoveError("the hand has not started")
        if state.hand_over:
            raise MoveError("the hand is over")
        if seat != state.current:
            raise MoveError(f"not your turn: seat {state.current} is to play")
        if not isinstance(action, int) or isinstance(action, bool):
            raise MoveError(f"an action is an integer, got {type(action).__name__}")
        if not state.is_legal(action):
            raise MoveError(f"action {action} is not legal now")
        text = state.describe(action)
        state.apply(action)
        self.actions.append(action)
        self.descriptions.append(text)
        self.last_move = LastMove(seat, text, self.hand_number, self.step)
        if state.hand_over:
            self._finish_hand()
        return text

    def bot_move(self) -> int:
        """The action of the bot to act (not applied: the caller paces and plays it)."""
        seat = self.state.current
        with _one_torch_thread():
            return int(self.game.agent_move(self.agents[seat], self.state, seat, self.view_rngs[seat]))

    def _finish_hand(self) -> None:
        state = self.state
        self.match_scores = [int(x) for x in state.match_scores]
        self.next_mano = self.game.next_mano(state)
        self.match_over = bool(state.match_over)
        meta = dict(self.meta, hand=self.hand_number, match_scores=list(self.match_scores), seats=list(self.seats))
        record = self.game.record(
            state, self.deal_seed, self.mano, self.seat_labels(), self.actions, self.descriptions, meta
        )
        self.records.append(record)
        if self.record_path is not None:  # appended and closed at once: readable while the room lives
            # the move is played: a full disk or a removed folder must not undo it, drop the player's
            # socket or be blamed on the bot that moved (it did both), only be said
            try:
                with RecordWriter(self.record_path, mode="a") as writer:
                    writer.write(record)
            except OSError as exc:
                self.record_error = f"hand {self.hand_number}'s record could not be written: {exc}"
                log.error("%s (%s)", self.record_error, self.record_path)

    def seat_labels(self) -> list[str]:
        return [kind if kind == PERSON else f"{kind} (bot)" for kind in self.seats]
