"""Does the update's thread count change its floats on this CPU? (``overlap_rollout`` with ``update_threads``)

    .venv/bin/python bench/update_threads_floats.py                     # configs/ppo_reference.yaml
    .venv/bin/python bench/update_threads_floats.py --batch 4096 --widen-at 0 3 7

With ``overlap_rollout: true`` and ``update_threads`` set, the update moves from ``torch_threads`` to
``update_threads`` at the first minibatch after the games beside it are done: a minibatch the clock
chooses. A run then repeats itself only where torch gives the same floats on both counts. This
script collects one batch with the reference network, then learns from it several times from the same
weights, optimiser state and minibatch order: on ``torch_threads`` throughout, and widened from each
``--widen-at`` minibatch on (after checking that the same update twice on ``torch_threads`` gives the
same weights). It prints whether every widened update's weights match bitwise; exit status 0 when they
all do, 1 when any differs (then an overlapped run with ``update_threads`` does not repeat itself on
this CPU: leave ``update_threads: null``), 2 when the update does not even repeat itself.
"""

from __future__ import annotations

import argparse
import copy
import sys
import tempfile
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_training import make_trainer

from training.ppo import Trainer


class DoneAfter:
    """Stands in for the rollout beside the update: done from the ``minibatches``-th check on."""

    def __init__(self, minibatches: int) -> None:
        self.left = minibatches

    def done(self) -> bool:
        self.left -= 1
        return self.left < 0


def learn_once(
    trainer: Trainer, episodes: list[Any], start: dict[str, Any], widen_at: int | None
) -> list[torch.Tensor]:
    """The weights after one update on ``episodes`` from ``start``, widened from minibatch ``widen_at``."""
    trainer.net.load_state_dict(start["net"])
    trainer.optimizer.load_state_dict(copy.deepcopy(start["optimizer"]))  # its steps write in place
    trainer.update_rng.bit_generator.state = start["rng"]
    torch.set_num_threads(trainer.cfg.torch_threads)
    trainer._rollout_beside = DoneAfter(widen_at) if widen_at is not None else None  # type: ignore[assignment]
    try:
        trainer._ppo_update(episodes)
    finally:
        trainer._rollout_beside = None
        torch.set_num_threads(trainer.cfg.torch_threads)
    return [p.detach().clone() for p in trainer.net.parameters()]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", default="configs/ppo_reference.yaml")
    parser.add_argument("--batch", type=int, default=8192, help="learner decisions in the batch")
    parser.add_argument("--update-threads", type=int, default=2)
    parser.add_argument("--widen-at", type=int, nargs="+", default=[0, 1, 5], help="minibatches before widening")
    args = parser.parse_args(argv)
    fields = ["rollout=vector", "policy_head=legal", "torch_threads=1", "overlap_rollout=true"]
    fields.append(f"update_threads={args.update_threads}")
    with tempfile.TemporaryDirectory() as run_root:
        trainer = make_trainer(args.config, "new", "config", args.batch, run_root, fields)
        try:
            trainer.collect_and_update()  # a batch collected beside the first update: the one learned from here
            assert trainer._ready is not None
            episodes = trainer._ready
            start = {
                "net": copy.deepcopy(trainer.net.state_dict()),
                "optimizer": copy.deepcopy(trainer.optimizer.state_dict()),
                "rng": copy.deepcopy(trainer.update_rng.bit_generator.state),
            }
            narrow = learn_once(trainer, episodes, start, None)
            again = learn_once(trainer, episodes, start, None)
            if not all(torch.equal(a, b) for a, b in zip(narrow, again, strict=True)):
                print("the same update twice on torch_threads gave different weights: nothing to compare")
                return 2
            same = True
            for widen_at in args.widen_at:
                widened = learn_once(trainer, episodes, start, widen_at)
                equal = all(torch.equal(a, b) for a, b in zip(narrow, widened, strict=True))
                worst = max(float((a - b).abs().max()) for a, b in zip(narrow, widened, strict=True))
                print(
                    f"widened to {args.update_threads} threads from minibatch {widen_at}: "
                    f"{'bitwise the same weights' if equal else f'weights differ (max |diff| {worst:.3g})'}"
                )
                same &= equal
            print(f"torch {torch.__version__}, {torch.get_num_threads()} thread(s) now, batch {len(episodes)} hands")
        finally:
            trainer.close()
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
