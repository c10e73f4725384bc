"""Where a batched step's time goes (batch 256, 2 players): the random policy,
the compiled kernel, and the Python around it (action checks, next deals).

Usage: .venv/bin/python bench/profile_vector.py [THREADS]   (default 2)
"""

import sys
import time

import numpy as np

from burako_env import vector as V

if len(sys.argv) > 1 and not sys.argv[1].isdigit():
    raise SystemExit("usage: profile_vector.py [THREADS]  (cProfile of BurakoVectorEnv steps; default 2 threads)")
th = int(sys.argv[1]) if len(sys.argv) > 1 else 2
env = V.BurakoVectorEnv(256, num_threads=th)
obs, masks, info = env.reset(seed=0)
rng = np.random.default_rng(0)
acts = np.zeros(256, np.int64)
for _ in range(100):
    env.step(V.sample_legal_actions(masks, rng, acts))
K = 1500
t_pick = t_step = 0.0
for _ in range(K):
    t0 = time.perf_counter()
    V.sample_legal_actions(masks, rng, acts)
    t1 = time.perf_counter()
    env.step(acts)
    t2 = time.perf_counter()
    t_pick += t1 - t0
    t_step += t2 - t1
# the kernel alone (validation and deal-ahead excluded)
t_kernel = 0.0
for _ in range(K):
    V.sample_legal_actions(masks, rng, acts)
    t0 = time.perf_counter()
    V._step_all(
        env._states,
        acts,
        env.tables.kernel_args,
        env._bufs,
        env._masks,
        env.obs,
        env.current_player,
        env.rewards,
        env.terminated,
        env.truncated,
        env.end_reason,
        env.side_totals,
        env._next_tiles,
        env._next_manos,
        env._refill,
        False,
        1000.0,
        env._obs_slots,
        env.own_obs,
    )
    t_kernel += time.perf_counter() - t0
    env._deal_ahead()
n = K * 256
print(
    f"threads {th}: per agent step: sample_legal_actions {t_pick / n * 1e9:.0f} ns, env.step {t_step / n * 1e9:.0f} ns "
    f"(kernel alone {t_kernel / n * 1e9:.0f} ns; validation + deal-ahead {(t_step - t_kernel) / n * 1e9:.0f} ns); "
    f"per batch: step {t_step / K * 1e3:.3f} ms, sampling {t_pick / K * 1e3:.3f} ms"
)
