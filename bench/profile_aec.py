"""cProfile of the AEC user loop only (the env built and warmed first), 2
players, rules "burako", 150 games, sorted by own time.

Usage: .venv/bin/python bench/profile_aec.py [fast|python]   (the env's engine)
"""

import cProfile
import io
import pstats
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from bench_burako import new_stats, play_aec

import burako_env

if len(sys.argv) > 1 and sys.argv[1] in ("-h", "--help"):
    raise SystemExit("usage: profile_aec.py [fast|python]  (cProfile of the AEC loop on that engine)")
engine = sys.argv[1] if len(sys.argv) > 1 else "fast"
env = burako_env.env(num_players=2, engine=engine)
rng = random.Random(0)
for i in range(3):
    play_aec(env, rng, 10**6 + i, new_stats())
stats = new_stats()
prof = cProfile.Profile()
prof.enable()
for i in range(150):
    play_aec(env, rng, i, stats)
prof.disable()
print("agent steps", stats["steps"])
s = io.StringIO()
pstats.Stats(prof, stream=s).sort_stats("tottime").print_stats(16)
print("\n".join(line for line in s.getvalue().splitlines() if line.strip()))
