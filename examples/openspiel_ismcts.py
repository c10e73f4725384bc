"""OpenSpiel's ISMCTS bot on Burako through the shipped pyspiel adapter.

    pip install -e ".[openspiel]"      # or: bash scripts/install.sh
    python -m examples.openspiel_ismcts --games 4 --simulations 50

Loads ``python_burako`` (``burako_env.openspiel``: a pyspiel Python game over
the readable engine), builds OpenSpiel's ``ISMCTSBot`` with random-rollout
evaluation and the engine's determinization as its hidden-information
resampler (``burako_env.openspiel.ismcts_bot``), and plays it against
OpenSpiel's uniform random bot, both seatings of each deal. ``--max-moves``
stops a game early (CI runs it for a few moves only); finished games report
OpenSpiel's ``returns()`` (hand score difference / 1000).
"""

from __future__ import annotations

import argparse
import json
import os
import time
from typing import Any

import numpy as np


def play(games: int, simulations: int, seed: int, max_moves: int | None = None, players: int = 2) -> dict[str, Any]:
    import pyspiel
    from open_spiel.python.bots import uniform_random

    from burako_env.openspiel import ismcts_bot

    game = pyspiel.load_game("python_burako", {"players": players})
    returns: list[float] = []
    moves_played = 0
    unfinished = 0
    start = time.monotonic()
    for g in range(games):
        ismcts_seat = g % players
        bots = [
            ismcts_bot(game, simulations=simulations, seed=seed + g)
            if p == ismcts_seat
            else uniform_random.UniformRandomBot(p, np.random.RandomState(seed + 100 * g + p))
            for p in range(players)
        ]
        state = game.new_initial_state()
        state.apply_action(seed + g // players)  # the deal: both seatings of deal seed + g // players
        moves = 0
        while not state.is_terminal() and (max_moves is None or moves < max_moves):
            action = bots[state.current_player()].step(state)
            state.apply_action(int(action))
            moves += 1
        moves_played += moves
        if state.is_terminal():
            returns.append(float(state.returns()[ismcts_seat]))
        else:
            unfinished += 1
    seconds = time.monotonic() - start
    return {
        "library": "OpenSpiel ISMCTSBot (python_burako adapter)",
        "games": games,
        "simulations": simulations,
        "finished": len(returns),
        "unfinished": unfinished,
        "ismcts_mean_return": float(np.mean(returns)) if returns else None,
        "ismcts_wins": sum(r > 0 for r in returns),
        "moves": moves_played,
        "seconds": round(seconds, 1),
        "load_average": [round(x, 2) for x in os.getloadavg()],
    }


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description="OpenSpiel ISMCTS vs random on python_burako")
    parser.add_argument("--games", type=int, default=4)
    parser.add_argument("--simulations", type=int, default=50)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--max-moves", type=int, default=None, help="stop each game after this many moves")
    args = parser.parse_args(argv)
    result = play(args.games, args.simulations, args.seed, args.max_moves)
    print(json.dumps(result, indent=2))
    return result


if __name__ == "__main__":
    main()
