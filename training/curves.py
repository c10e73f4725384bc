"""Learning-curve plot: the policy's win rate against each baseline over training."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any


def plot_learning_curve(history: Sequence[dict[str, Any]], path: str | Path, title: str = "") -> Path | None:
    """Win rate (with its 95% interval band) against each evaluation
    opponent, by training decisions; ``history`` rows come from
    ``Trainer.evaluate_now``. Returns the PNG path (None without history)."""
    if not history:
        return None
    # a bare Figure, not pyplot: never touches the caller's backend (notebooks keep inline plots)
    from matplotlib.figure import Figure

    fig = Figure(figsize=(7, 4))
    ax = fig.subplots()
    opponents = list(dict.fromkeys(k for row in history for k, v in row.items() if isinstance(v, dict)))
    for name in opponents:
        # by step: rows out of order (a caller's own list) drew a line that went back and forth
        points = sorted(
            ((row["step"], row[name]) for row in history if isinstance(row.get(name), dict)), key=lambda p: p[0]
        )
        xs = [x for x, _ in points]
        ax.plot(xs, [r["win_rate"] for _, r in points], marker="o", label=f"vs {name}")
        ax.fill_between(xs, [r["low"] for _, r in points], [r["high"] for _, r in points], alpha=0.2)
    ax.axhline(0.5, color="grey", lw=0.8, ls="--")
    ax.set_xlabel("learner decisions trained on")
    ax.set_ylabel("win rate (duplicate deals, 95% CI)")
    ax.set_ylim(0, 1)
    ax.set_title(title or "learning curve")
    ax.legend(loc="lower right")
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path, dpi=110)
    return path
