"""A human at the terminal, and ``burako-human``: play one hand against an agent.

    burako-human --opponent planner --rules burako --seed 0

:class:`HumanAgent` shows the table as the seat sees it (own hand, every
side's melds, the pile's top and size, hand and stock sizes, scores), lists
the legal moves numbered with their descriptions, and reads a number. Bad
input (empty, not a number, out of range) is answered with a message and
the question is asked again; the end of the input is a clear error
(:class:`InputClosedError`), never a silent default move. ``q`` quits.

The table comes from ``view.public_state()``, whose hidden parts are random;
``render_table`` only prints the viewer's own hand, so nothing hidden (or
made up) is shown.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any, TextIO

import numpy as np

from agents.base import SeatView
from agents.options import parse_options
from agents.registry import agent_names, check_agent_game, make_agent
from burako_env.engine import GameState, Phase
from burako_env.observation import Observer
from burako_env.render import render_table, score_text
from burako_env.rules import RulesError, load_rules


class InputClosedError(EOFError):
    """The input ended before the human chose a move."""


class QuitGameError(Exception):
    """The human asked to stop playing (typed ``q``)."""


class HumanAgent:
    """Asks a person for each decision through text streams."""

    name = "human"

    def __init__(
        self,
        seed: int | None = None,
        input_stream: TextIO | None = None,
        output_stream: TextIO | None = None,
    ) -> None:
        self.seed = seed  # unused: a person needs no seed; kept for the registry's signature
        self.input_stream = input_stream if input_stream is not None else sys.stdin
        self.output_stream = output_stream if output_stream is not None else sys.stdout
        self.seat = -1

    def reset(self, seat: int, rules: Any = None, num_players: int = 2) -> None:
        """Called at the start of each hand."""
        self.seat = seat

    def _say(self, text: str = "") -> None:
        print(text, file=self.output_stream, flush=True)

    def act(self, observation: dict[str, np.ndarray], view: SeatView) -> int:
        mask = observation.get("action_mask") if observation is not None else None
        legal = np.flatnonzero(mask).tolist() if mask is not None else view.legal_actions()
        if not legal:
            raise ValueError("HumanAgent.act: no legal action in the mask")
        seat = view.seat if self.seat < 0 else self.seat
        self._say("=" * 72)
        self._say(render_table(view.public_state(), viewer=seat))
        self._say("-" * 72)
        self._say(f"player_{seat}, your legal moves:")
        for i, action in enumerate(legal):
            self._say(f"  {i:3d}: {view.describe(action)}")
        return legal[self._read_choice(len(legal))]

    def _read_choice(self, count: int) -> int:
        """Read a move number in ``0..count-1``; ask again until one is valid."""
        while True:
            self.output_stream.write(f"your move (0-{count - 1}, q to quit): ")
            self.output_stream.flush()
            line = self.input_stream.readline()
            if line == "":
                raise InputClosedError("the input ended before a move was chosen")
            text = line.strip()
            if text.lower() in ("q", "quit", "exit"):
                raise QuitGameError("the player quit")
            if not text:
                self._say("please type the number of a move")
                continue
            try:
                choice = int(text)
            except ValueError:
                self._say(f"{text!r} is not a number; type the number of a move")
                continue
            if not 0 <= choice < count:
                self._say(f"{choice} is out of range; choose between 0 and {count - 1}")
                continue
            return choice


# --------------------------------------------------------------------------- the command line


def play_hand(
    opponent: str = "planner",
    rules: str = "burako",
    seed: int = 0,
    seat: int = 0,
    num_players: int = 2,
    input_stream: TextIO | None = None,
    output_stream: TextIO | None = None,
    opponent_options: dict[str, Any] | None = None,
) -> GameState:
    """Play one hand: a human at ``seat``, the ``opponent`` agent at every
    other seat (partner included with 4 players). Returns the final state."""
    out = output_stream if output_stream is not None else sys.stdout
    table = load_rules(rules)
    rng = np.random.default_rng(seed)
    state = GameState.new_game(rng, table, num_players)
    if not 0 <= seat < num_players:
        raise ValueError(f"seat must be between 0 and {num_players - 1}, got {seat}")
    view_rng = np.random.default_rng([seed, 1])  # determinizations, apart from the deal
    observer = Observer(num_players, state.rules)
    human = HumanAgent(seed=seed, input_stream=input_stream, output_stream=out)
    players: list[Any] = []
    for p in range(num_players):
        agent = human if p == seat else make_agent(opponent, seed=seed * 10 + p, **(opponent_options or {}))
        agent.reset(p, state.rules, num_players)
        players.append(agent)
    names = [("you" if p == seat else f"player_{p} ({opponent})") for p in range(num_players)]
    print(f"Burako ({state.rules.name}), {num_players} players, seed {seed}: you are player_{seat}", file=out)
    while state.phase != Phase.HAND_OVER:
        p = state.current
        if not state.legal_mask().any():  # an engine fault (E3); nobody can move
            print(f"the engine offers player_{p} no legal move: hand stopped", file=out)
            return state
        view = SeatView(state, p, view_rng)
        observation = {"observation": observer.encode(state, p), "action_mask": state.legal_mask().copy()}
        action = players[p].act(observation, view)
        text = state.describe(action)
        state.apply(action)
        print(f"{names[p]}: {text}", file=out)
    print("=" * 72, file=out)
    table_text = render_table(state, viewer=seat)
    print(table_text, file=out)
    print("-" * 72, file=out)
    closer = f" by player_{state.closer}" if state.closer >= 0 else ""
    print(f"hand over after {state.turn} turns: {state.end_reason}{closer}", file=out)
    scores = score_text(state)
    if scores not in table_text:  # render_table already ends with the breakdown
        print(scores, file=out)
    return state


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="burako-human",
        description="Play one hand of Burako in the terminal against an agent.",
    )
    parser.add_argument(
        "--opponent",
        default="planner",
        help=f"agent name ({', '.join(n for n in agent_names() if n != 'human')}) or module:Class",
    )
    parser.add_argument(
        "--opponent-opt", action="append", metavar="KEY=VALUE", help="option for the opponent (repeatable)"
    )
    parser.add_argument("--rules", default="burako", help="preset name or YAML path")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--seat", type=int, default=0, help="your seat (player_0 is seat 0)")
    parser.add_argument("--players", type=int, default=2, choices=(2, 3, 4))
    args = parser.parse_args(argv)
    if not 0 <= args.seat < args.players:
        parser.error(f"--seat must be between 0 and {args.players - 1}")
    if args.seed < 0:
        parser.error(f"--seed must be a non-negative integer, got {args.seed}")
    if args.opponent == "human":
        parser.error("--opponent: the opponent is an agent; you are the human")
    try:
        options = parse_options(args.opponent_opt, "--opponent-opt")
        check_agent_game(args.opponent, "burako")
        try:  # an unknown option is a TypeError of the agent's constructor: said here, before the deal
            probe = make_agent(args.opponent, seed=0, **options)
        except TypeError as exc:
            raise ValueError(f"--opponent-opt for {args.opponent}: {exc}") from exc
        if getattr(probe, "name", None) == HumanAgent.name:  # by name too (agents.human:HumanAgent)
            raise ValueError("--opponent: the opponent is an agent; you are the human")
        play_hand(args.opponent, args.rules, args.seed, args.seat, args.players, opponent_options=options)
    except (RulesError, ValueError) as exc:  # bad rules, bad option, unusable checkpoint
        print(f"burako-human: {exc}", file=sys.stderr)
        return 2
    except QuitGameError:
        print("\nbye", file=sys.stdout)
        return 0
    except InputClosedError as exc:
        print(f"\nburako-human: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("\nbye", file=sys.stdout)
        return 130
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
