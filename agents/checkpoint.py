"""Checkpoints: written atomically, read only with ``torch.load(weights_only=True)``.

A checkpoint is a dict of tensors and plain Python values (never pickled
objects), so loading one cannot run code. Two kinds share the ``policy`` part:

| key            | training checkpoint                         | exported policy (shipped bots) |
|----------------|---------------------------------------------|--------------------------------|
| ``format``     | ``"burako-ppo-checkpoint"``                 | ``"burako-policy"``            |
| ``version``    | ``CHECKPOINT_VERSION``                      | same                           |
| ``policy``     | ``{"shape": NetworkShape, "state_dict"}``   | same (weights may be float16)  |
| ``rules``      | the ``Rules`` (Rummy: ``RummyRules``) as a dict | same                       |
| ``config``     | the training config as a dict               | same                           |
| ``trainer``    | optimiser, RNG states, counters, league     | absent                         |
| ``trained``    | absent (``trainer`` holds the counters)     | optional: how far it trained   |
| ``averaged``   | absent                                      | optional: how many policies' mean weights it holds |

An exported policy's ``trained`` part (``update``, ``global_step``,
``minutes``) is written by the trainer's exports since 2026-12-05. A policy
that is the mean of several policies' weights (:func:`average_policies`:
``burako-average``, or a run's ``average_kept_policies``) says how many in
``averaged``, and carries the last (furthest-trained) one's ``trained`` part.

:func:`training_progress` reads how far a file's run had trained from either
part (a learning curve over kept policies, ``training/checkpoint_curve.py``).

The game a policy plays is its shape's ``game`` (``burako`` or ``rummy``;
files written before Rummy have none and are Burako's), with the game's
observation/action layout. A file that is not a checkpoint, is truncated, was
made for the other game or for another observation/action layout raises
:class:`CheckpointError` saying which.
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
import zipfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

from agents.network import GAME_ACTIONS, NetworkShape, PolicyNet
from burako_env.atomic_file import write_atomic
from burako_env.rules import Rules, RulesError, load_rules
from burako_env.rummy.rules import RummyRules, load_rummy_rules
from burako_env.safe_yaml import not_a_file, short_repr

CHECKPOINT_VERSION = 1
TRAINING_FORMAT = "burako-ppo-checkpoint"
POLICY_FORMAT = "burako-policy"


class CheckpointError(ValueError):
    """A checkpoint cannot be used: unreadable, not ours, or a layout mismatch."""


def save(payload: dict[str, Any], path: str | Path) -> Path:
    """Write atomically (``burako_env.atomic_file``): a kill never leaves half a file, two
    writers never share a temporary file, and a symbolic link at ``path`` stays a link."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    return write_atomic(path, lambda f: torch.save(payload, f))


def _load_failure(exc: BaseException) -> str:
    """torch's reason, without its advice to retry with ``weights_only=False`` (running the
    file's code: never for a file that failed the safe load)."""
    text = str(exc).replace("WeightsUnpickler error:", "\n")
    if "weights_only" not in text:
        return text.strip().splitlines()[0] if text.strip() else type(exc).__name__
    advice = ("weights_only", "Please file an issue", "Check the documentation")
    kept = [line.strip() for line in text.splitlines() if line.strip() and not any(a in line for a in advice)]
    return f"{' '.join(kept) or type(exc).__name__} (only tensors and plain values are loaded)"


def _check_crcs(path: Path) -> None:
    """torch.load does not check the archive's CRCs, so a flipped bit in the weights would load as another
    number: every member's CRC is checked first (a few ms per MB). A file that is not a zip archive is
    left to torch.load's own error."""
    if not zipfile.is_zipfile(path):
        return
    with zipfile.ZipFile(path) as archive:
        members = archive.infolist()
        if all(member.CRC == 0 for member in members):  # saved with torch.serialization.set_crc32_options(False)
            return
        damaged = archive.testzip()
    if damaged is not None:
        raise zipfile.BadZipFile(f"{damaged} fails its CRC check (the file is damaged)")


def load(path: str | Path) -> dict[str, Any]:
    """Read a checkpoint safely; every failure is a :class:`CheckpointError`."""
    path = Path(path)
    if (why := not_a_file(path)) is not None:
        raise CheckpointError(f"checkpoint {path} {why}")
    try:
        _check_crcs(path)
        data = torch.load(path, map_location="cpu", weights_only=True)
    except ImportError:  # torch itself is missing or broken (a core install): not the file's fault
        raise
    except Exception as exc:  # a text file gave KeyError or IndexError from the unpickler (not KeyboardInterrupt)
        raise CheckpointError(
            f"checkpoint {path} cannot be read (corrupt, truncated or not a checkpoint): {_load_failure(exc)}"
        ) from exc
    if not isinstance(data, dict) or data.get("format") not in (TRAINING_FORMAT, POLICY_FORMAT):
        raise CheckpointError(f"{path} is not a burako_env checkpoint (no 'format' field of ours)")
    if type(data.get("version")) is not int or data.get("version") != CHECKPOINT_VERSION:  # True == 1
        raise CheckpointError(
            f"checkpoint {path} has version {data.get('version')!r}; this code reads version {CHECKPOINT_VERSION}"
        )
    for key in ("policy", "rules", "config"):
        if key not in data:
            raise CheckpointError(f"checkpoint {path} lacks its {key!r} part")
    check_structure(data, str(path))
    return data


#: the matrix-product dtypes a training run can use (``precision``), by the name a checkpoint saves
DTYPES: dict[str, torch.dtype] = {"float32": torch.float32, "bfloat16": torch.bfloat16}


def dtype_name(dtype: torch.dtype) -> str:
    """``torch.bfloat16`` -> ``"bfloat16"``: the name a checkpoint saves (:data:`DTYPES`)."""
    return str(dtype).removeprefix("torch.")


#: what a training checkpoint's ``trainer`` part holds, and the type of each value
TRAINER_PARTS: dict[str, type | tuple[type, ...]] = {
    "optimizer": dict,
    "rng": dict,
    "update": int,
    "global_step": int,
    "episodes": int,
    "elapsed": (int, float),
    "bc_done": bool,
    "league": dict,
    "eval_history": str,
    "run_dir": str,
}


#: an exported policy's optional ``trained`` part: how far its run had trained
TRAINED_PARTS: dict[str, type | tuple[type, ...]] = {"update": int, "global_step": int, "minutes": (int, float)}


#: the dtypes a network's weights may be stored in (exports are float16, training checkpoints float32)
WEIGHT_DTYPES = (torch.float16, torch.bfloat16, torch.float32, torch.float64)


def _check_tensors(tensors: Any, where: str, source: str, weights: bool = True) -> None:
    """A mapping of names to dense tensors, every floating value finite (NaN weights fail at load, not in
    play); ``weights``: of a float dtype (complex weights with NaN passed the check, int ones loaded, and a
    sparse one failed with a bare NotImplementedError)."""
    if not isinstance(tensors, dict):
        raise CheckpointError(f"{source}: {where} is a {type(tensors).__name__}, not a mapping of tensors")
    for name, tensor in tensors.items():
        if not isinstance(tensor, torch.Tensor):
            raise CheckpointError(f"{source}: {where}[{name!r}] is a {type(tensor).__name__}, not a tensor")
        if tensor.layout != torch.strided or tensor.is_complex() or (weights and tensor.dtype not in WEIGHT_DTYPES):
            raise CheckpointError(
                f"{source}: {where}[{name!r}] is a {tensor.layout} {tensor.dtype} tensor; "
                f"{'weights are dense float tensors' if weights else 'expected a dense real tensor'}"
            )
        if tensor.is_floating_point() and not bool(torch.isfinite(tensor).all()):
            raise CheckpointError(
                f"{source}: {where}[{name!r}] holds NaN or infinite values; the checkpoint is unusable"
            )


#: the whole-number sizes of a network shape a checkpoint may give (a crafted -1 or 10**9 is refused before
#: any tensor is allocated)
SHAPE_RANGES: dict[str, tuple[int, int]] = {
    "num_players": (2, 4),
    "obs_size": (1, 1 << 20),
    "hidden": (1, 1 << 14),
    "slot_embed": (1, 1 << 10),
}


def check_structure(data: dict[str, Any], source: str) -> None:
    """The parts a checkpoint must have, with their types: a crafted or damaged
    file fails here with a :class:`CheckpointError`, never later with a
    ``TypeError``/``KeyError`` or in play with NaN weights."""
    policy = data["policy"]
    if not isinstance(policy, dict) or set(policy) != {"shape", "state_dict"}:
        raise CheckpointError(f"{source}: 'policy' must be a mapping with exactly 'shape' and 'state_dict'")
    shape = policy["shape"]
    names = {f.name for f in dataclasses.fields(NetworkShape)}
    if not isinstance(shape, dict) or set(shape) - names or {"num_players", "obs_size", "layout"} - set(shape):
        got = sorted(map(str, shape)) if isinstance(shape, dict) else type(shape).__name__
        raise CheckpointError(f"{source}: the network shape has keys {got}; expected {sorted(names)}")
    # each field's type from NetworkShape's annotations (strings under ``from __future__ import annotations``)
    types = {f.name: {"int": int, "str": str, "bool": bool}[str(f.type)] for f in dataclasses.fields(NetworkShape)}
    for key, value in shape.items():
        want = types[key]
        if not isinstance(value, want) or (want is not bool and isinstance(value, bool)):
            raise CheckpointError(f"{source}: network shape {key!r} is a {type(value).__name__}, not {want.__name__}")
    for key, (low, high) in SHAPE_RANGES.items():
        if key in shape and not low <= shape[key] <= high:
            raise CheckpointError(f"{source}: network shape {key!r} is {shape[key]}, outside [{low}, {high}]")
    if shape.get("game", "burako") not in GAME_ACTIONS:
        raise CheckpointError(f"{source}: unknown game {shape['game']!r}; games: {sorted(GAME_ACTIONS)}")
    _check_tensors(policy["state_dict"], "policy.state_dict", source)
    for key in ("rules", "config"):
        if not isinstance(data[key], dict):
            raise CheckpointError(f"{source}: {key!r} is a {type(data[key]).__name__}, not a mapping")
    if data["format"] != TRAINING_FORMAT:
        trained = data.get("trained")
        if trained is not None and (
            not isinstance(trained, dict)
            or set(trained) != set(TRAINED_PARTS)
            or not all(isinstance(trained[k], t) and not isinstance(trained[k], bool) for k, t in TRAINED_PARTS.items())
            or not all(0 <= trained[k] < math.inf for k in TRAINED_PARTS)
        ):
            raise CheckpointError(
                f"{source}: 'trained' must map exactly {sorted(TRAINED_PARTS)} to finite non-negative numbers"
            )
        averaged = data.get("averaged")
        if averaged is not None and (not isinstance(averaged, int) or isinstance(averaged, bool) or averaged < 2):
            raise CheckpointError(f"{source}: 'averaged' must be a whole number of policies >= 2, got {averaged!r}")
        return
    trainer = data.get("trainer")
    if not isinstance(trainer, dict):
        raise CheckpointError(f"{source}: a training checkpoint needs its 'trainer' part (optimizer, RNG, counters)")
    for key, want in TRAINER_PARTS.items():
        if key not in trainer:
            raise CheckpointError(f"{source}: the 'trainer' part lacks {key!r}; the run cannot resume from it")
        if not isinstance(trainer[key], want) or (want is int and isinstance(trainer[key], bool)):
            raise CheckpointError(f"{source}: trainer {key!r} is a {type(trainer[key]).__name__}")
    precision = trainer.get("precision", "float32")  # optional: checkpoints before 2026-12-03 lack it
    if not isinstance(precision, str) or precision not in DTYPES:
        raise CheckpointError(f"{source}: trainer 'precision' {short_repr(precision)} is not one of {list(DTYPES)}")
    optimizer = trainer["optimizer"]
    if set(optimizer) != {"state", "param_groups"} or not isinstance(optimizer["state"], dict):
        raise CheckpointError(f"{source}: the optimizer state is malformed (expected 'state' and 'param_groups')")
    for index, moments in optimizer["state"].items():
        _check_tensors(moments, f"optimizer.state[{index!r}]", source, weights=False)
    rng = trainer["rng"]
    if not isinstance(rng.get("numpy"), str) or not isinstance(rng.get("torch"), torch.Tensor):
        raise CheckpointError(f"{source}: the RNG state is malformed (expected 'numpy' text and a 'torch' tensor)")
    cuda = rng.get("cuda", [])  # a run on a GPU: each device's generator
    if not isinstance(cuda, list) or not all(isinstance(state, torch.Tensor) for state in cuda):
        raise CheckpointError(f"{source}: the RNG state's 'cuda' part must be a list of tensors")
    league = trainer["league"]
    if not isinstance(league.get("snapshots"), dict) or not isinstance(league.get("results"), dict):
        raise CheckpointError(f"{source}: the league state is malformed (expected 'snapshots' and 'results')")
    for name, weights in league["snapshots"].items():
        _check_tensors(weights, f"league snapshot {name!r}", source)


def policy_payload(
    net: PolicyNet,
    rules: Rules | RummyRules,
    config: dict[str, Any],
    half: bool = False,
    trained: dict[str, int | float] | None = None,
) -> dict[str, Any]:
    """The portable part of a checkpoint: enough to rebuild and play the policy; ``trained``
    (:data:`TRAINED_PARTS`) says how far its run had trained when it was exported."""
    state = {k: (v.half() if half and v.is_floating_point() else v).clone() for k, v in net.state_dict().items()}
    payload = {
        "format": POLICY_FORMAT,
        "version": CHECKPOINT_VERSION,
        "policy": {"shape": net.shape.to_dict(), "state_dict": state},
        "rules": rules.to_dict(),
        "config": dict(config),
    }
    if trained is not None:
        payload["trained"] = dict(trained)
    return payload


def average_policies(payloads: Sequence[dict[str, Any]], sources: Sequence[str]) -> dict[str, Any]:
    """An exported policy whose weights are the mean of ``payloads``' (loaded exported policies or
    training checkpoints of one network and one set of rules, ``sources`` naming them for errors; the
    furthest trained last). The mean of a run's late policies played steadier than its last network
    in the one run measured (docs/training/README.md, "Averaging the late policies"). The result keeps
    the last payload's config, progress (``trained``) and weight precision; ``averaged`` counts the
    policies. Nothing is written here."""
    if len(payloads) != len(sources):
        raise ValueError(f"{len(payloads)} policies but {len(sources)} sources to name them")
    if len(payloads) < 2:
        raise ValueError(f"averaging needs at least two policies, got {len(payloads)}")
    last, last_source = payloads[-1], sources[-1]
    shape, rules = policy_description(last, last_source)
    weights = last["policy"]["state_dict"]
    progress = training_progress(last)
    seen: dict[tuple[Any, ...], str] = {}
    for data, source in zip(payloads, sources, strict=True):
        if data.get("averaged"):  # its own count of policies would be lost: each would weigh as one
            raise CheckpointError(
                f"{source} is already the mean of {data['averaged']} policies; average the policies it was made "
                "from instead"
            )
        further = training_progress(data)
        if further is not None and further["update"] > 0:  # the same update twice (a kept policy and a
            # checkpoint of it) would weigh double; update 0 (a warm start's export) says nothing of the run
            key = (further["update"], further["global_step"])
            if key in seen:
                raise CheckpointError(
                    f"{source} and {seen[key]} are the same update ({key[0]}) of a run; give each policy once"
                )
            seen[key] = source
        other_shape, other_rules = policy_description(data, source)
        if other_shape != shape:
            raise CheckpointError(
                f"{source} holds another network ({other_shape}) than {last_source} ({shape}); "
                "only policies of one network can be averaged"
            )
        if other_rules != rules:
            raise CheckpointError(f"{source} was trained on other rules than {last_source}; it cannot be averaged")
        state = data["policy"]["state_dict"]
        if set(state) != set(weights) or any(state[k].shape != v.shape for k, v in weights.items()):
            raise CheckpointError(f"{source}: its weights do not match {last_source}'s names and shapes")
        if progress is not None and further is not None and further["global_step"] > progress["global_step"]:
            raise CheckpointError(
                f"{source} trained further than {last_source}, the last given (whose progress and config the "
                "mean keeps): give the furthest-trained policy last"
            )
    mean = {}
    for name, tensor in weights.items():
        if tensor.is_floating_point():
            total = sum(data["policy"]["state_dict"][name].double() for data in payloads)
            mean[name] = (total / len(payloads)).to(tensor.dtype)
        else:  # counters (none today): the last policy's
            mean[name] = tensor.clone()
    payload = {
        "format": POLICY_FORMAT,
        "version": CHECKPOINT_VERSION,
        "policy": {"shape": dict(last["policy"]["shape"]), "state_dict": mean},
        "rules": dict(last["rules"]),
        "config": dict(last["config"]),
        "averaged": len(payloads),
    }
    if progress is not None:
        payload["trained"] = progress
    check_structure(payload, "the averaged policy")
    return payload


def training_progress(data: dict[str, Any]) -> dict[str, int | float] | None:
    """``update``, ``global_step`` (learner decisions) and ``minutes`` of training behind a loaded
    checkpoint: a training checkpoint's counters, or an exported policy's ``trained`` part; None for a
    policy exported without it (before 2026-12-05, or by hand)."""
    if data["format"] == TRAINING_FORMAT:
        trainer = data["trainer"]
        return {"update": trainer["update"], "global_step": trainer["global_step"], "minutes": trainer["elapsed"] / 60}
    trained = data.get("trained")
    return None if trained is None else dict(trained)


def policy_description(data: dict[str, Any], source: str = "checkpoint") -> tuple[NetworkShape, Rules | RummyRules]:
    """The network shape and the rules a checkpoint was trained on, as objects: two files compare equal
    whether or not they spell out the fields added since (defaults)."""
    try:
        shape = NetworkShape(**data["policy"]["shape"])
        rules: Rules | RummyRules = (load_rummy_rules if shape.game == "rummy" else load_rules)(data["rules"])
    except (TypeError, KeyError, RulesError) as exc:
        raise CheckpointError(f"{source}: malformed policy description: {exc}") from exc
    return shape, rules


def weights_digest(data: dict[str, Any], source: str = "checkpoint") -> str:
    """The SHA-256 of a checkpoint's network parameters rounded to float16, whatever else its file holds:
    the same network in a kept policy or a run's ``policy.pt`` (float16) and in a training checkpoint
    (float32) has one digest (hashed as float32, they differed: burako-curve refused a run and its own
    latest.pt as "other networks of the same update", burako-average counted one network twice)."""
    net, _ = build_policy(data, source)
    digest = hashlib.sha256()
    for name, tensor in sorted(net.state_dict().items()):
        digest.update(name.encode())
        digest.update(tensor.detach().cpu().half().contiguous().numpy().tobytes())
    return digest.hexdigest()


def build_policy(data: dict[str, Any], source: str = "checkpoint") -> tuple[PolicyNet, Rules | RummyRules]:
    """Rebuild the network (float32, eval mode) and the rules it was trained on."""
    shape, rules = policy_description(data, source)
    try:
        with torch.device("meta"):  # no memory: a small crafted file asked for gigabytes before it was refused
            expected = {name: tuple(t.shape) for name, t in PolicyNet(shape, rules).state_dict().items()}
    except (ValueError, RuntimeError) as exc:
        raise CheckpointError(f"{source}: the stored network shape does not fit its rules: {exc}") from exc
    stored = data["policy"]["state_dict"]
    misfits = sorted(
        name
        for name in expected.keys() | stored.keys()
        if expected.get(name) != tuple(getattr(stored.get(name), "shape", ()))
    )
    if misfits:
        raise CheckpointError(
            f"{source}: weights do not fit the network {shape}: {len(misfits)} tensor(s) missing, extra or of "
            f"another size ({', '.join(misfits[:4])}{', ...' if len(misfits) > 4 else ''})"
        )
    try:
        net = PolicyNet(shape, rules)
    except (ValueError, RuntimeError) as exc:
        raise CheckpointError(f"{source}: the stored network shape does not fit its rules: {exc}") from exc
    try:
        net.load_state_dict({k: v.float() for k, v in data["policy"]["state_dict"].items()})
    except (RuntimeError, KeyError, AttributeError) as exc:
        raise CheckpointError(f"{source}: weights do not fit the network {shape}: {exc}") from exc
    net.eval()
    return net, rules


#: the registered agent that plays each game's policies (agents/registry.py)
POLICY_AGENTS: dict[str, str] = {"burako": "policy", "rummy": "rummy-policy"}


def check_game(shape: NetworkShape, game: str, source: str = "checkpoint") -> None:
    """Refuse a policy trained for the other game, naming the agent that plays it."""
    if shape.game != game:
        raise CheckpointError(
            f"{source} is a {shape.game} policy; the {POLICY_AGENTS[game]!r} agent plays {game} only "
            f"(play this checkpoint with the {POLICY_AGENTS[shape.game]!r} agent)"
        )


def check_layout(shape: NetworkShape, expected: str, source: str = "checkpoint") -> None:
    """Refuse a policy made for another observation/action layout."""
    if shape.layout != expected:
        raise CheckpointError(
            f"{source} was trained for another observation/action layout and cannot play this env.\n"
            f"  checkpoint: {shape.layout}\n  env:        {expected}"
        )
