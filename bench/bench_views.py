"""What an opponent's look at the state costs on the compiled engine.

    python -m bench.bench_views [--hands 20] [--players 2]

Plays random hands on ``burako_env.env()`` (compiled core) and, at every
decision, times side by side in the same run:

- ``env.unwrapped.game`` (``FastGame.to_game_state``: the flat state read
  field by field into a readable ``GameState``);
- the old path it replaced, ``GameState.from_dict(FastGame.to_dict())`` (the
  rules to a dict and back, every meld rebuilt);
- a lazy ``LazySeatView`` over the readable state (``burako_env.views``), as
  the game runner hands it to an agent;
- the same view read once, which pays for its determinization (hidden tiles
  resampled on the readable state), as a planner or search agent does;
- the view ``burako_env.gym`` really hands out on the compiled engine
  (``_FastSeatView``: nothing built until read) and that view read once
  (resampled on the flat state by ``FastGame.determinize``, then read into a
  ``GameState``).

Prints the median and 90th percentile in microseconds and the machine load.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

import burako_env
from burako_env.engine import GameState
from burako_env.gym import _FastSeatView
from burako_env.views import LazySeatView


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hands", type=int, default=20)
    parser.add_argument("--players", type=int, default=2)
    args = parser.parse_args(argv)
    env = burako_env.env(num_players=args.players)
    rng = np.random.default_rng(0)
    names = (
        "env.unwrapped.game",
        "from_dict(to_dict) (old)",
        "opponent view",
        "opponent view, read",
        "gym view",
        "gym view, read",
    )
    timings: dict[str, list[float]] = {name: [] for name in names}
    clock = time.perf_counter
    for hand in range(args.hands):
        env.reset(seed=hand)
        raw = env.unwrapped
        for agent in env.agent_iter():
            obs, _, term, trunc, _ = env.last()
            if term or trunc:
                env.step(None)
                continue
            t0 = clock()
            _ = raw.game
            t1 = clock()
            GameState.from_dict(raw.state_.to_dict())
            t2 = clock()
            view = LazySeatView(raw.game, raw.agent_name_mapping[agent], rng)
            t3 = clock()
            view.hand  # noqa: B018
            t4 = clock()
            fast_view = _FastSeatView(raw.state_, raw.agent_name_mapping[agent], rng)
            t5 = clock()
            fast_view.hand  # noqa: B018
            t6 = clock()
            timings["gym view"].append(t5 - t4)
            timings["gym view, read"].append(t6 - t4)
            timings["opponent view, read"].append(t4 - t2)
            timings["env.unwrapped.game"].append(t1 - t0)
            timings["from_dict(to_dict) (old)"].append(t2 - t1)
            timings["opponent view"].append(t3 - t2)
            env.step(int(rng.choice(np.flatnonzero(obs["action_mask"]))))
    print(f"{args.hands} random hands, {args.players} players, load average {os.getloadavg()}")
    for name, values in timings.items():
        arr = np.array(values) * 1e6
        print(f"{name:28s} median {np.median(arr):8.1f} us   p90 {np.percentile(arr, 90):8.1f} us   ({arr.size} calls)")


if __name__ == "__main__":
    main()
