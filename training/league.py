"""The opponent league of self-play: who the learner plays each game.

Members are named by strings:

| member          | plays with                                              |
|-----------------|---------------------------------------------------------|
| ``"self"``      | the current policy; every seat is a learner seat then   |
| ``"snapshot:N"``| the policy's weights frozen after update ``N``          |
| an agent name   | a baseline agent (``planner``, ``greedy``, ``random``…, or ``module:Class``) |

Sampling: ``self`` with probability ``self_play_fraction``; otherwise one of
the other members, uniformly (``scheme="uniform"``) or prioritised towards
those the learner beats least (``scheme="prioritized"``: weight
``(1 - win rate) ** power``, AlphaStar's PFSP), win rates being decayed
averages with a prior of one draw. With ``baseline_fraction`` set, the
baselines together get that share and the snapshots the rest (each group
split by the scheme), so a growing pool of snapshots cannot crowd out the
baselines the learner is meant to beat. The league's state is plain data,
stored in checkpoints.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

SELF = "self"
SNAPSHOT_PREFIX = "snapshot:"
SCHEMES = ("uniform", "prioritized")


def member_tag(member: str) -> str:
    """A league member's name as it appears in a TensorBoard tag (``snapshot:120`` → ``snapshot_120``)."""
    return member.replace(":", "_")


#: how far past ``1 - self_play_fraction`` a ``baseline_fraction`` may lie: the sum's rounding
#: (0.1 against 1 - 0.9 = 0.09999999999999998 was refused)
SHARE_TOLERANCE = 1e-9


def share_problem(self_play_fraction: float, baseline_fraction: float | None) -> str | None:
    """The league's shares must add up: the baselines take at most what self-play leaves."""
    if baseline_fraction is None:
        return None
    room = 1.0 - self_play_fraction
    if not 0.0 <= baseline_fraction <= room + SHARE_TOLERANCE:
        return f"baseline_fraction {baseline_fraction} must be in [0, 1 - self_play_fraction = {room:.12g}]"
    return None


class League:
    def __init__(
        self,
        baselines: list[str],
        scheme: str = "prioritized",
        self_play_fraction: float = 0.2,
        max_snapshots: int = 8,
        power: float = 2.0,
        decay: float = 0.99,
        baseline_fraction: float | None = None,
    ) -> None:
        if scheme not in SCHEMES:
            raise ValueError(f"league scheme must be one of {SCHEMES}, got {scheme!r}")
        if not 0.0 <= self_play_fraction <= 1.0:
            raise ValueError(f"self_play_fraction must be in [0, 1], got {self_play_fraction}")
        share = share_problem(self_play_fraction, baseline_fraction)
        if share:
            raise ValueError(share)
        self.baseline_fraction = baseline_fraction
        self.baselines = list(baselines)
        self.scheme = scheme
        self.self_play_fraction = self_play_fraction
        self.max_snapshots = max_snapshots
        self.power = power
        self.decay = decay
        #: snapshot id -> weights (CPU tensors)
        self.snapshots: dict[str, dict[str, torch.Tensor]] = {}
        #: member -> [decayed points, decayed games]
        self.results: dict[str, list[float]] = {}

    # ------------------------------------------------------------------ members
    @property
    def opponents(self) -> list[str]:
        """Every member except ``self``."""
        return [*self.baselines, *self.snapshots]

    @property
    def size(self) -> int:
        return len(self.opponents) + (1 if self.self_play_fraction > 0 else 0)

    def add_snapshot(self, update: int, state_dict: dict[str, torch.Tensor]) -> str:
        """Freeze the current weights; the oldest snapshot leaves when full."""
        name = f"{SNAPSHOT_PREFIX}{update}"
        self.snapshots[name] = {k: v.detach().clone() for k, v in state_dict.items()}
        self._evict_beyond_max()
        return name

    def _evict_beyond_max(self) -> None:
        """The oldest snapshots leave, with their results, until ``max_snapshots`` remain."""
        while len(self.snapshots) > self.max_snapshots:
            oldest = next(iter(self.snapshots))
            del self.snapshots[oldest]
            self.results.pop(oldest, None)

    # ------------------------------------------------------------------ sampling
    def win_rate(self, member: str) -> float:
        points, games = self.results.get(member, (0.0, 0.0))
        return (points + 0.5) / (games + 1.0)

    def _split(self, members: list[str], share: float) -> dict[str, float]:
        """``share`` split among ``members`` by the scheme."""
        if self.scheme == "uniform":
            weights = np.ones(len(members))
        else:
            weights = np.array([(1.0 - self.win_rate(m)) ** self.power for m in members]) + 1e-6
        return dict(zip(members, (share * weights / weights.sum()).tolist(), strict=True))

    def probabilities(self) -> dict[str, float]:
        others = self.opponents
        if not others:
            return {SELF: 1.0}
        rest = 1.0 - self.self_play_fraction
        snapshots = list(self.snapshots)
        if self.baseline_fraction is None or not self.baselines or not snapshots:
            probs = self._split(others, rest)
        else:
            probs = {
                **self._split(self.baselines, self.baseline_fraction),
                **self._split(snapshots, max(0.0, rest - self.baseline_fraction)),
            }
        if self.self_play_fraction > 0:
            probs[SELF] = self.self_play_fraction
        return probs

    def sample(self, rng: np.random.Generator) -> str:
        """A member drawn by :meth:`probabilities`: the draw ``rng.choice(len(names), p=p)`` makes (one
        uniform, the first cdf entry above it), without its checks of ``p`` (21 -> 15 us a hand; a
        rollout starts one every ~70 learner decisions)."""
        probs = self.probabilities()
        names = list(probs)
        p = np.fromiter(probs.values(), dtype=np.float64, count=len(names)) / sum(probs.values())
        cdf = p.cumsum()
        cdf /= cdf[-1]
        return names[int(cdf.searchsorted(rng.random(), side="right"))]

    def record(self, member: str, points: float) -> None:
        """The learner's result against ``member``: 1 win, 0.5 draw, 0 loss."""
        if member == SELF:
            return
        entry = self.results.setdefault(member, [0.0, 0.0])
        entry[0] = entry[0] * self.decay + points
        entry[1] = entry[1] * self.decay + 1.0

    # ------------------------------------------------------------------ checkpoints
    def state(self) -> dict[str, Any]:
        return {
            "snapshots": dict(self.snapshots),
            "results": {k: list(v) for k, v in self.results.items()},
        }

    def load_state(self, state: dict[str, Any]) -> None:
        """A checkpoint's league; a resume that lowered ``max_snapshots`` drops its oldest snapshots."""
        self.snapshots = {k: dict(v) for k, v in state["snapshots"].items()}
        self.results = {k: [float(x) for x in v] for k, v in state["results"].items()}
        self._evict_beyond_max()
