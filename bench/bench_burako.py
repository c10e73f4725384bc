"""Burako throughput with uniformly random legal play, beside the anchors.

Modes (one full hand per game, ``match=False``, default rules "burako"; ``--rules``
names another preset):

- ``aec``: the user loop through ``burako_env.env(num_players=n)`` (with
  PettingZoo's wrappers)::

      env.reset(seed=s)
      for agent in env.agent_iter():
          obs, rew, term, trunc, info = env.last()
          action = None if (term or trunc) else random legal index of obs["action_mask"]
          env.step(action)

  "agent steps" counts env.step calls with a real action; the env.step(None)
  calls that retire finished agents are counted apart as dead_steps.
- ``aec_python``: ``aec`` with ``engine="python"`` (the readable engine behind
  the env instead of the compiled core).
- ``raw_aec``: the same loop on the unwrapped ``burako_env.raw_env``.
- ``engine``: bare ``GameState``: ``legal_mask()`` and ``apply(a)`` every step,
  no observation.
- ``engine_obs``: ``engine`` plus ``Observer(n, rules).encode(state, current)``
  every step (a fresh array, as the env's ``observe`` does).
- ``fast_obs``: ``engine_obs`` on the compiled core (``fast.FastGame``:
  ``legal_mask``, ``encode(current)``, ``apply``).
- ``vector``: the batched API, ``BurakoVectorEnv(--batch)`` on ``--threads``
  threads (default: the env's own choice, one thread or every core, timed by its
  ThreadTuner; the RESULT's ``threads`` says which), stepped with ``sample_legal_actions`` (one
  uniform legal action per game) until ``--games`` hands have ended; the
  observation and mask of every game are produced at every step. Hands are
  dealt from seeds S+i and again from the same generators on auto-reset.
- ``clone``: microbenchmarks on 60 mid-game states (random play to turn 40,
  seeds S..S+59): ``GameState.clone``, ``GameState.determinize`` and
  ``FastGame.clone`` in µs per call, and memory per game state in bytes
  (tracemalloc over 2,000 clones; the fast state is one int32 vector).

Game i uses seed S+i (``reset(seed=S+i)``, or ``np.random.default_rng(S+i)``
for the engine modes); the action choice uses ``random.Random(S)``, as the
anchors do. The RESULT line has the anchors' common.py format.
"""

from __future__ import annotations

import argparse
import collections
import json
import platform
import random
import sys
import time
import warnings

import numpy as np

warnings.filterwarnings("ignore")

MODES = ("aec", "aec_python", "raw_aec", "engine", "engine_obs", "fast_obs", "vector", "clone")


def make_parser(description: str, default_games: int) -> argparse.ArgumentParser:
    """The anchors' CLI (common.py): --games, --seed, --warmup, --tag."""
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--games", type=int, default=default_games, help="number of timed games (default: %(default)s)")
    p.add_argument("--seed", type=int, default=0, help="base seed; game i uses seed base+i (default: %(default)s)")
    p.add_argument(
        "--warmup",
        type=int,
        default=3,
        help="untimed warm-up games played first, seeds 10**6+i (default: %(default)s)",
    )
    p.add_argument("--tag", default="", help="free-form label copied into the JSON line")
    return p


class Timer:
    """Wall-clock (perf_counter) and process CPU time (process_time) together."""

    def __enter__(self) -> Timer:
        self.w0 = time.perf_counter()
        self.c0 = time.process_time()
        return self

    def __exit__(self, *exc: object) -> bool:
        self.wall = time.perf_counter() - self.w0
        self.cpu = time.process_time() - self.c0
        return False


def report(bench: str, args: argparse.Namespace, timer: Timer, games: int, agent_steps: int, extra: dict) -> dict:
    """A readable summary and a RESULT line, exactly as the anchors' common.report."""
    res = {
        "bench": bench,
        "tag": args.tag,
        "games": games,
        "agent_steps": agent_steps,
        "wall_s": round(timer.wall, 4),
        "cpu_s": round(timer.cpu, 4),
        "steps_per_s": round(agent_steps / timer.wall, 1),
        "games_per_s": round(games / timer.wall, 3),
        "steps_per_game": round(agent_steps / games, 2),
        "cpu_steps_per_s": round(agent_steps / timer.cpu, 1) if timer.cpu > 0 else None,
        "seed": args.seed,
        "python": platform.python_version(),
    }
    res.update(extra)
    print(f"== {bench} {args.tag}".rstrip())
    print(f"wall seconds       {timer.wall:.3f}  (cpu {timer.cpu:.3f})")
    if agent_steps:  # a mode that plays games (clone mode times copies: its extra lines say what)
        print(f"games              {games}")
        print(f"agent steps        {agent_steps}")
        print(f"steps/s            {agent_steps / timer.wall:,.0f}")
        print(f"games/s            {games / timer.wall:,.2f}")
        print(f"mean steps/game    {agent_steps / games:.2f}")
    for k, v in extra.items():
        print(f"{k:<18} {v}")
    print("RESULT " + json.dumps(res, sort_keys=True))
    sys.stdout.flush()
    return res


def new_stats() -> dict:
    return {
        "steps": 0,
        "dead": 0,
        "forced": 0,
        "legal_sum": 0,
        "turns": 0,
        "ends": collections.Counter(),
    }


def play_aec(env, rng: random.Random, seed: int, stats: dict) -> None:
    """One episode through the AEC API: observation and mask fetched every step."""
    env.reset(seed=seed)
    steps = dead = forced = legal_sum = 0
    for _agent in env.agent_iter():
        obs, _rew, term, trunc, _info = env.last()
        if term or trunc:
            action = None
            dead += 1
        else:
            legal = np.flatnonzero(obs["action_mask"])
            n = len(legal)
            legal_sum += n
            if n == 1:
                forced += 1
            action = int(legal[rng.randrange(n)])
            steps += 1
        env.step(action)
    state = env.unwrapped.state_  # the engine's own state (turn, end_reason), not a readable snapshot
    stats["steps"] += steps
    stats["dead"] += dead
    stats["forced"] += forced
    stats["legal_sum"] += legal_sum
    stats["turns"] += state.turn
    stats["ends"][state.end_reason] += 1


def play_hand(game, encode, rng: random.Random, stats: dict) -> None:
    """One hand on an engine object (GameState or FastGame): the mask every
    step, ``encode(game)`` too if given, then a random legal action."""
    steps = forced = legal_sum = 0
    while not game.hand_over:
        if encode is not None:
            encode(game)
        legal = np.flatnonzero(game.legal_mask())
        n = len(legal)
        legal_sum += n
        if n == 1:
            forced += 1
        game.apply(int(legal[rng.randrange(n)]))
        steps += 1
    stats["steps"] += steps
    stats["forced"] += forced
    stats["legal_sum"] += legal_sum
    stats["turns"] += game.turn
    stats["ends"][game.end_reason] += 1


def play_fast(rules, num_players: int, rng: random.Random, seed: int, stats: dict) -> None:
    """One hand on the compiled core: mask, observation of the player to act, apply."""
    from burako_env.fast import FastGame

    game = FastGame.new_game(np.random.default_rng(seed), rules, num_players)
    play_hand(game, lambda g: g.encode(g.current), rng, stats)


def run_vector(args: argparse.Namespace, rules) -> None:
    """The batched API until args.games hands have ended (module docstring)."""
    import numba

    import burako_env
    from burako_env.fast import END_REASON_NAMES
    from burako_env.vector import BurakoVectorEnv, sample_legal_actions

    if args.threads is not None:  # the whole process, the sampler too (an env's num_threads is its kernels' only)
        numba.set_num_threads(args.threads)
    env = BurakoVectorEnv(args.batch, num_players=args.players, rules=rules, num_threads=args.threads)
    pick = np.random.default_rng(args.seed)
    actions = np.zeros(args.batch, dtype=np.int64)
    _obs, masks, info = env.reset(seed=10**6)
    for _ in range(50):  # warm-up (compilation is cached, this settles the threads)
        _obs, masks, *_rest, info = env.step(sample_legal_actions(masks, pick, actions))
    _obs, masks, info = env.reset(seed=args.seed)
    ends = collections.Counter()
    steps = hands = batches = 0
    with Timer() as t:
        while hands < args.games:
            _obs, masks, _rew, term, trunc, info = env.step(sample_legal_actions(masks, pick, actions))
            batches += 1
            done = term | trunc
            if done.any():
                hands += int(done.sum())
                for reason in info["end_reason"][done].tolist():
                    ends[END_REASON_NAMES[reason]] += 1
    steps = batches * args.batch
    extra = {
        "mode": "vector",
        "players": args.players,
        "batch": args.batch,
        "threads": env.step_threads,
        "batched_steps": batches,
        "memory_bytes": env.memory_bytes,
        "memory_per_game_bytes": env.memory_bytes // args.batch,
        "forced_frac": None,
        "mean_legal_actions": None,
        "end_reasons": dict(sorted(ends.items())),
        "obs_shape": [env.observation_size],
        "obs_dtype": "float32",
        "action_space": env.num_actions,
        "burako_env": burako_env.__version__,
        "numba": numba.__version__,
        "numpy": np.__version__,
    }
    report(f"burako_vector_{args.players}p", args, t, hands, steps, extra)


def run_clone(args: argparse.Namespace, rules) -> None:
    """Microbenchmarks of clone, determinize and memory per state (module docstring)."""
    import timeit
    import tracemalloc

    import burako_env
    from burako_env.engine import GameState
    from burako_env.fast import STATE_SIZE, FastGame

    n = args.players
    slow_states, fast_states = [], []
    for i in range(60):
        rng = random.Random(args.seed + i)
        slow = GameState.new_game(np.random.default_rng(args.seed + i), rules, n)
        fast = FastGame.new_game(np.random.default_rng(args.seed + i), rules, n)
        while slow.turn < 40 and not slow.hand_over:
            action = rng.choice(slow.legal_actions())
            slow.apply(action)
            fast.apply(action)
        slow_states.append(slow)
        fast_states.append(fast)
    det_rng = np.random.default_rng(args.seed)
    number = 50

    def per_call(fn) -> float:
        runs = [timeit.timeit(lambda: [fn(s) for s in states], number=number) for _ in range(5)]
        return min(runs) / (number * len(states)) * 1e6

    states = slow_states
    with Timer() as t:
        clone_us = per_call(lambda s: s.clone())
        determinize_us = per_call(lambda s: s.determinize(s.current, det_rng))
        states = fast_states
        fast_clone_us = per_call(lambda s: s.clone())
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    kept = [slow_states[i % 60].clone() for i in range(2000)]
    state_bytes = (tracemalloc.get_traced_memory()[0] - before) / len(kept)
    tracemalloc.stop()
    del kept
    extra = {
        "mode": "clone",
        "players": n,
        "clone_us": round(clone_us, 2),
        "determinize_us": round(determinize_us, 2),
        "fast_clone_us": round(fast_clone_us, 2),
        "state_bytes": round(state_bytes),
        "fast_state_bytes": STATE_SIZE * 4,
        "mean_turn": round(float(np.mean([s.turn for s in slow_states])), 1),
        "burako_env": burako_env.__version__,
        "numpy": np.__version__,
    }
    report(f"burako_clone_{n}p", args, t, 60, 0, extra)


def play_engine(rules, num_players: int, observer, rng: random.Random, seed: int, stats: dict) -> None:
    """One hand on the bare engine: mask every step, observation if ``observer``."""
    from burako_env.engine import GameState

    state = GameState.new_game(np.random.default_rng(seed), rules, num_players)
    encode = None if observer is None else (lambda s: observer.encode(s, s.current))
    play_hand(state, encode, rng, stats)


def main() -> None:
    p = make_parser(__doc__.splitlines()[0], default_games=100)
    p.add_argument("--mode", choices=MODES, default="aec", help="what to drive (default: %(default)s)")
    p.add_argument("--players", type=int, choices=(2, 4), default=2, help="number of players (default: %(default)s)")
    p.add_argument("--batch", type=int, default=256, help="vector mode: games per batch (default: %(default)s)")
    p.add_argument("--threads", type=int, default=None, help="vector mode: numba threads (default: the tuner picks)")
    p.add_argument("--rules", default="burako", help="rules preset (default: %(default)s)")
    args = p.parse_args()

    import pettingzoo

    import burako_env
    from burako_env import actions as A
    from burako_env.observation import Observer
    from burako_env.rules import load_rules

    n = args.players
    rules = load_rules(args.rules)
    if args.mode == "vector":
        run_vector(args, rules)
        return
    if args.mode == "clone":
        run_clone(args, rules)
        return
    if args.mode in ("aec", "aec_python", "raw_aec"):
        if args.mode == "raw_aec":
            env = burako_env.raw_env(num_players=n, rules=rules)
        else:
            engine = "python" if args.mode == "aec_python" else "fast"
            env = burako_env.env(num_players=n, rules=rules, engine=engine)
        env.reset(seed=args.seed)
        agent0 = env.possible_agents[0]
        obs_shape = list(env.observation_space(agent0)["observation"].shape)
        obs_dtype = str(env.observation_space(agent0)["observation"].dtype)
        action_space = int(env.action_space(agent0).n)

        def play(rng: random.Random, seed: int, stats: dict) -> None:
            play_aec(env, rng, seed, stats)

    elif args.mode == "fast_obs":
        obs_shape = [Observer(n, rules).size]
        obs_dtype = "float32"
        action_space = A.NUM_ACTIONS

        def play(rng: random.Random, seed: int, stats: dict) -> None:
            play_fast(rules, n, rng, seed, stats)

    else:
        observer = Observer(n, rules) if args.mode == "engine_obs" else None
        obs_shape = [Observer(n, rules).size] if observer is not None else None
        obs_dtype = "float32" if observer is not None else None
        action_space = A.NUM_ACTIONS

        def play(rng: random.Random, seed: int, stats: dict) -> None:
            play_engine(rules, n, observer, rng, seed, stats)

    rng = random.Random(args.seed)
    warm = new_stats()
    for i in range(args.warmup):
        play(rng, 10**6 + i, warm)

    stats = new_stats()
    rng = random.Random(args.seed)
    with Timer() as t:
        for i in range(args.games):
            play(rng, args.seed + i, stats)

    games = args.games
    extra = {
        "mode": args.mode,
        "rules": args.rules,
        "players": n,
        "forced_steps": stats["forced"],
        "forced_frac": round(stats["forced"] / stats["steps"], 3),
        "mean_legal_actions": round(stats["legal_sum"] / stats["steps"], 2),
        "mean_turns_per_hand": round(stats["turns"] / games, 2),
        "steps_per_turn": round(stats["steps"] / max(stats["turns"], 1), 2),
        "end_reasons": dict(sorted(stats["ends"].items(), key=lambda kv: str(kv[0]))),
        "obs_shape": obs_shape,
        "obs_dtype": obs_dtype,
        "action_space": action_space,
        "burako_env": burako_env.__version__,
        "pettingzoo": pettingzoo.__version__,
        "numpy": np.__version__,
    }
    if args.mode in ("aec", "aec_python", "raw_aec"):
        extra = {"dead_steps": stats["dead"], **extra}
    report(f"burako_{args.mode}_{n}p", args, t, games, stats["steps"], extra)


if __name__ == "__main__":
    main()
