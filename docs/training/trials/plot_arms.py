"""Training runs' evaluations against the planner by learner decisions, on one plot.

Run from the repository root:
``.venv/bin/python docs/training/trials/plot_arms.py OUT.png NAME=RUN_DIR [NAME=RUN_DIR ...]``
(a run folder or a folder holding its TensorBoard log). Each run's single evaluations (200 duplicate
games, ±0.07 at 95%) are dots, their running mean over 2 M decisions a line.
"""

import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

from burako_env import analysis

TAG = "eval/winrate_vs_planner"
WINDOW = 2e6

out, runs = sys.argv[1], [arg.split("=", 1) for arg in sys.argv[2:]]
fig, ax = plt.subplots(figsize=(8, 4.5))
for name, path in runs:
    frame = analysis.tensorboard_scalars(path, [TAG])
    steps, values = frame["step"].to_numpy(), frame["value"].to_numpy()
    (dots,) = ax.plot(steps / 1e6, values, ".", alpha=0.35)
    smooth = [values[(steps > s - WINDOW) & (steps <= s)].mean() for s in steps]
    ax.plot(steps / 1e6, smooth, "-", color=dots.get_color(), label=f"{name} (last {np.mean(values[-4:]):.3f})")
ax.axhline(0.7, color="grey", linestyle=":", linewidth=1)
ax.set_xlabel("learner decisions (millions)")
ax.set_ylabel("win rate vs planner (200 duplicate games)")
ax.set_ylim(0.25, 0.8)
ax.grid(alpha=0.3)
ax.legend(loc="lower right")
fig.tight_layout()
fig.savefig(out, dpi=110)
print(out)
