"""How much of the hands' results two trained critics explain, each on its own policy's self-play.

Run from the repository root: ``.venv/bin/python docs/training/trials/critic_explained_variance.py SEED``.
One collect of ~98,000 learner decisions per policy (self-play only, the reference config's rollout),
then 1 - Var(G - V) / Var(G) with G each decision's own hand result (``losses/explained_variance_mc``)
and, for comparison, against GAE's returns (``losses/explained_variance``), which contain the values.
"""

import sys
import time

import numpy as np

from training.ppo import PPOConfig, Trainer, explained_variance, gae, load_config, monte_carlo_returns
from training.rollout import episode_batch, episode_length

CRITICS = [
    ("reference run 1", "docs/training/trials/reference1_policy.pt", False),
    ("privileged critic", "docs/training/trials/privileged_policy.pt", True),
]

seed = int(sys.argv[1]) if len(sys.argv) > 1 else 7
for name, path, privileged in CRITICS:
    cfg = load_config("configs/ppo_reference.yaml")
    fields = {
        **cfg.to_dict(),
        **{"run_root": "/tmp/critic_ev", "exp_name": "critic_ev", "seed": seed, "bc_teacher": None, "eval_every": 0},
        **{"self_play_fraction": 1.0, "league_baselines": [], "snapshot_every": 0, "baseline_fraction": None},
        **{"baseline_worker_share": 0.0, "schedules": {}, "batch_size": 98_304},
        **{"init_checkpoint": path, "privileged_value": privileged},
    }
    trainer = Trainer(PPOConfig(**fields), progress=False)
    start = time.time()
    episodes = trainer.collect()
    batch = episode_batch(episodes)
    lengths = [episode_length(ep) for ep in episodes]
    results = monte_carlo_returns([ep.reward for ep in episodes], lengths, 1.0)
    per_episode = np.split(batch["values"], np.cumsum(lengths)[:-1])
    returns = np.concatenate([gae(v, ep.reward, 1.0, 0.95)[1] for v, ep in zip(per_episode, episodes, strict=True)])
    print(
        f"{name}: {results.size} decisions in {len(episodes)} hands ({time.time() - start:.0f} s); explained "
        f"variance of the results {explained_variance(results, batch['values']):.3f}, of GAE's returns "
        f"{explained_variance(returns, batch['values']):.3f}",
        flush=True,
    )
    trainer.close()
