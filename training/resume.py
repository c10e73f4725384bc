"""Resuming a PPO run: its run folder and the training checkpoint.

A run folder is ``{run_root}/{env}__{exp}__{seed}__{time}``
(:func:`new_run_dir`). ``checkpoints/latest.pt`` (every ``checkpoint_every``
updates, after behaviour cloning, and at the end) holds the policy and the
state the run continues from: the optimiser, the random generators (numpy's,
torch's, and CUDA's on a GPU), the counters, the wall-clock time used so far,
whether cloning is done, the league (snapshots and results) and the evaluation
history. ``burako-train --resume RUN_DIR`` (:func:`latest_checkpoint`) loads
it into a new :class:`~training.ppo.Trainer` (:func:`restore`); TensorBoard
events logged after the checkpoint's step are dropped, so the curves continue
without a fold. The format and its checks are :mod:`agents.checkpoint`'s.

What it does not hold is the games in play: a resumed run deals fresh hands,
and the learner decisions of the hands unfinished at the checkpoint are not
learned. So a resumed run is not the uninterrupted run bit for bit (its
batches differ from the first update after the resume); it is the same run
in everything a checkpoint holds. Its rules and seed cannot change (a resume
that tries is refused): the random state continues from the checkpoint.

``config.yaml`` in the run folder is the config the run is going on with
(:func:`record_config`): a resume that changes fields (``--set
max_minutes=115``) rewrites it and appends what changed, at which update, to
``config_changes.yaml``, so the folder says how its policy was trained.
"""

from __future__ import annotations

import json
import os
import re
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch
import yaml

from agents import checkpoint as ckpt
from agents.network import NetworkShape, PolicyNet
from burako_env.safe_yaml import short_repr
from training.files import write_text_atomic
from training.games import rules_differences

if TYPE_CHECKING:
    from training.ppo import PPOConfig, Trainer


def new_run_dir(root: Path, env_name: str, config: PPOConfig) -> Path:
    """A new run folder ``{env}__{exp}__{seed}__{time}``, created here; runs
    started in the same second get ``-2``, ``-3``, ... (mkdir is atomic, so
    two processes never share one)."""
    try:
        root.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError) as exc:  # a file where a folder must be
        raise ValueError(f"run_root {str(root)!r} cannot hold run folders: it or a folder above it is a file") from exc
    # the env name holds the rules' name, a free label: "/" or ".." in it put the folder outside run_root,
    # and 200 characters overran the file system's name limit
    env_name = re.sub(r"[^A-Za-z0-9._-]", "_", env_name).lstrip(".")[:60] or "run"
    base = f"{env_name}__{config.exp_name}__{config.seed}__{time.strftime('%Y%m%d-%H%M%S')}"
    for k in range(1, 10_000):
        path = root / (base if k == 1 else f"{base}-{k}")
        try:
            path.mkdir()
        except FileExistsError:
            continue
        return path
    raise RuntimeError(f"no free run folder name under {root} for {base}")  # pragma: no cover


def record_config(run_dir: Path, config: dict[str, Any], update: int, global_step: int) -> dict[str, list[Any]]:
    """Write ``config.yaml``; when the folder already has one that differs
    (a resume with other settings), append the change to ``config_changes.yaml``.
    Returns the changed fields as ``{field: [before, after]}``."""
    path = run_dir / "config.yaml"
    now = yaml.safe_load(yaml.safe_dump(config, sort_keys=False))  # as it reads back: tuples become lists
    changed: dict[str, list[Any]] = {}
    if path.is_file():
        before = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        if not isinstance(before, dict):
            before = {}
        changed = {k: [before.get(k), v] for k, v in now.items() if before.get(k) != v}
        if not changed:
            return changed
        entry = [{"update": update, "global_step": global_step, "changed": changed}]
        with (run_dir / "config_changes.yaml").open("a", encoding="utf-8") as f:
            f.write(yaml.safe_dump(entry, sort_keys=False))
    write_text_atomic(path, yaml.safe_dump(now, sort_keys=False))
    return changed


def latest_checkpoint(path: Path) -> Path:
    """What ``--resume`` names: a checkpoint file, or a run folder (its latest one)."""
    return path / "checkpoints" / "latest.pt" if path.is_dir() else path


def run_folder_of(checkpoint: Path) -> Path:
    """The run folder a training checkpoint continues in: the folder above its ``checkpoints/``."""
    path = Path(os.path.abspath(checkpoint))  # "latest.pt" given from inside checkpoints/ is that folder's
    if path.parent.name != "checkpoints":
        raise ckpt.CheckpointError(
            f"{checkpoint} is not in a run folder's checkpoints/, so there is no run folder to continue in; "
            "resume from the run folder (or a checkpoint inside its checkpoints/)"
        )
    return path.parent.parent


def _rng_state(trainer: Trainer) -> dict[str, Any]:
    state = {"numpy": json.dumps(trainer.rng.bit_generator.state), "torch": torch.get_rng_state()}
    if trainer.update_rng is not trainer.rng:  # overlap_rollout: the update's minibatch order has its own
        state["update_numpy"] = json.dumps(trainer.update_rng.bit_generator.state)
    if trainer.device.type == "cuda":  # the rollout's action draws on a GPU come from its device's generator
        state["cuda"] = [torch.cuda.get_rng_state(trainer.device)]
    return state


def save_checkpoint(trainer: Trainer, name: str = "latest.pt") -> Path:
    """Write ``trainer``'s whole state to ``checkpoints/<name>`` in its run folder."""
    payload = ckpt.policy_payload(trainer.net, trainer.rules, trainer.cfg.to_dict())
    payload["format"] = ckpt.TRAINING_FORMAT
    payload["trainer"] = {
        "optimizer": trainer.optimizer.state_dict(),
        "rng": _rng_state(trainer),
        "update": trainer.update,
        "global_step": trainer.global_step,
        "episodes": trainer.episodes_done,
        "elapsed": trainer.elapsed(),
        "bc_done": trainer.bc_done,
        "league": trainer.league.state(),
        "eval_history": json.dumps(trainer.eval_history),
        "run_dir": str(trainer.run_dir),
        "precision": ckpt.dtype_name(trainer.compute_dtype),
    }
    return ckpt.save(payload, trainer.run_dir / "checkpoints" / name)


#: an optimiser's kernel choice: the running code's, not the checkpoint's
KERNEL_FLAGS = ("fused", "foreach")


def load_optimizer_state(optimizer: torch.optim.Optimizer, state: dict[str, Any]) -> None:
    """``optimizer.load_state_dict(state)``, keeping this optimiser's kernel.

    ``load_state_dict`` copies every param-group key, kernel flags included,
    so a checkpoint from before fused Adam would resume on the plain kernel
    (3.6x slower steps, bench/README.md). The flags are put back, and a fused
    kernel's step counters moved to their parameters' device as it needs."""
    kernels = [{key: group[key] for key in KERNEL_FLAGS if key in group} for group in optimizer.param_groups]
    optimizer.load_state_dict(state)
    for group, kernel in zip(optimizer.param_groups, kernels, strict=True):
        group.update(kernel)
        if group.get("fused"):
            for param in group["params"]:
                step = optimizer.state.get(param, {}).get("step")
                if isinstance(step, torch.Tensor):
                    optimizer.state[param]["step"] = step.to(param.device, torch.float32)


def restore(trainer: Trainer, path: Path) -> Path:
    """Load a training checkpoint (or a run folder's latest) into ``trainer``; returns the run folder."""
    path = latest_checkpoint(path)
    data = ckpt.load(path)
    if data["format"] != ckpt.TRAINING_FORMAT or "trainer" not in data:
        raise ckpt.CheckpointError(f"{path} is an exported policy, not a training checkpoint; it cannot resume")
    run_dir = run_folder_of(path)
    shape = NetworkShape(**data["policy"]["shape"])
    if shape.game != trainer.game:
        raise ckpt.CheckpointError(f"{path} is a {shape.game} run; this config trains {trainer.game} (game: ...)")
    ckpt.check_layout(shape, trainer.layout, str(path))
    if shape != trainer.net.shape:
        raise ckpt.CheckpointError(f"{path}: network {shape} differs from the config's {trainer.net.shape}")
    _check_same_run(data, trainer, path)
    t = data["trainer"]
    try:
        trainer.net.load_state_dict(data["policy"]["state_dict"])
        load_optimizer_state(trainer.optimizer, t["optimizer"])
        trainer.rng.bit_generator.state = json.loads(t["rng"]["numpy"])
        if trainer.update_rng is not trainer.rng and "update_numpy" in t["rng"]:  # else as seeded (overlap turned on)
            trainer.update_rng.bit_generator.state = json.loads(t["rng"]["update_numpy"])
        torch.set_rng_state(t["rng"]["torch"])
        if trainer.device.type == "cuda" and t["rng"].get("cuda"):  # the run's device's, on whichever GPU now
            torch.cuda.set_rng_state(t["rng"]["cuda"][0], trainer.device)
        trainer.league.load_state(t["league"])
        with torch.random.fork_rng(devices=[]):  # its initial weights drew from the generator restored above
            probe = PolicyNet(trainer.net.shape, trainer.rules)
        for weights in trainer.league.snapshots.values():  # a damaged snapshot fails here, not in a game
            probe.load_state_dict(weights)
        trainer.eval_history = json.loads(t["eval_history"])
    except (RuntimeError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise ckpt.CheckpointError(
            f"{path}: the training state does not fit this run ({type(exc).__name__}: {short_repr(str(exc), 300)})"
        ) from exc
    trainer.net.eval()
    trainer.update = int(t["update"])
    trainer.global_step = int(t["global_step"])
    trainer.episodes_done = int(t["episodes"])
    trainer.elapsed_before = float(t["elapsed"])
    trainer.bc_done = bool(t["bc_done"])
    _keep_precision(trainer, t.get("precision"))
    return run_dir


def _check_same_run(data: dict[str, Any], trainer: Trainer, path: Path) -> None:
    """Refuse a resume under other rules (an edited rules file, another preset) or another seed."""
    _, trained_under = ckpt.policy_description(data, str(path))  # fields added since read as their defaults
    differ = rules_differences(trained_under, trainer.rules)
    if differ:
        raise ckpt.CheckpointError(
            f"{path}: the run was trained under other rules than config rules {trainer.cfg.rules!r} gives now "
            f"(they differ in {differ}); a run cannot change its rules midway (start a new run)"
        )
    seed = data["config"].get("seed")
    if seed is not None and seed != trainer.cfg.seed:
        raise ckpt.CheckpointError(
            f"{path}: the run's seed is {seed}, the config says {trainer.cfg.seed}: a resume continues the run's "
            f"random state from its checkpoint, so its seed cannot change (--set seed={seed}, or a new run)"
        )


def _keep_precision(trainer: Trainer, saved: str | None) -> None:
    """``precision: auto`` resumes in the dtype the run trained in until now, so a run moved to another machine
    does not change its arithmetic mid-run; a precision named in the config is what the user asked for.
    Either way a change is said on stderr. Checkpoints from before this was saved keep the config's."""
    if saved is None:
        return
    here = trainer.compute_dtype
    if trainer.cfg.precision == "auto":
        trainer.compute_dtype = ckpt.DTYPES[saved]
        if trainer.compute_dtype != here:
            print(
                f"resumed in {saved}, the precision this run trained in until now (precision: auto would pick "
                f"{ckpt.dtype_name(here)} on this machine; name a precision in the config to change it)",
                file=sys.stderr,
            )
    elif ckpt.DTYPES[saved] != here:
        said = f"precision changes at this resume: {saved} until now, {ckpt.dtype_name(here)} from here"
        print(said, file=sys.stderr)
