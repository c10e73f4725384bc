"""Shared test helpers and the ``engine`` fixture: one set of rule scenarios, both engines.

A rule scenario (docs/rules.md: B, V, E ids) takes the ``engine`` fixture and
builds its table with ``engine.build(...)`` (the arguments of
:func:`burako_env.scenario.build_state`) or deals with ``engine.new_game(...)``.
The fixture runs the test twice:

- ``[python]``: the readable engine, a :class:`~burako_env.engine.GameState`;
- ``[fast]``: the compiled core, a :class:`~burako_env.fast.FastGame` made from
  the same scenario with ``FastGame.from_game_state``, behind
  :class:`CompiledTable`, which gives it the reading API the scenarios use.

Both runs make the same exact assertions (legal actions, melds, hands,
phases, scores). On the compiled run every action, mask and score is the
core's own; :class:`CompiledTable` only reads the flat state back (through
``FastGame``'s queries, or ``FastGame.to_game_state()``, a field-by-field view
of the flat state) and refuses every readable-engine method that decides
something, so a ``[fast]`` test can never pass on the readable engine's logic.

The helpers below (legal-action sets, tile-named actions, playing a list of
actions with the E1 check, expected score breakdowns) work on both.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import warnings
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from burako_env import actions as A
from burako_env.actions import add_action, discard_action, meld_action
from burako_env.engine import GameState, SideScore
from burako_env.fast import FastGame
from burako_env.melds import PATTERN_INDEX, PATTERNS, Meld
from burako_env.rules import Rules
from burako_env.scenario import build_state, tile, tile_text
from burako_env.tiles import NUM_KINDS
from training.openmp import WAIT_SETTINGS

# pytest -n 2 runs two workers on CI's two cores, and each trainer in them asks torch for both:
# OpenMP's waiting threads spun on the core the other worker held, and the training tests ran
# ~3x slower (tests/test_average.py with tests/test_checkpoint_curve.py: 118 s against 41 s).
# Importing the training package (above, before any test module can import torch) makes waiters
# sleep (training/openmp.py). Had a plugin loaded torch first, no wait setting would be set now.
if not any(name in os.environ for name in WAIT_SETTINGS):
    warnings.warn("torch was loaded before the training package: OpenMP's waiting threads spin", stacklevel=1)

ENGINES = ("python", "fast")

CHOOSE_LOW = A.CHOOSE_BASE
CHOOSE_HIGH = A.CHOOSE_BASE + 1


class CompiledTable:
    """A :class:`FastGame` read like a :class:`GameState` by the scenarios.

    What decides (``apply``, ``legal_mask``, ``score_sides``, ``next_hand``,
    the end of a hand, rewards) is the compiled core's; the plain fields
    (hands, melds, pile, ...) are read from its flat state. Any other
    readable-engine attribute raises AttributeError instead of quietly
    running the readable engine's logic."""

    #: answered by FastGame itself
    _CORE = frozenset(
        {
            "phase",
            "current",
            "turn",
            "hand_over",
            "match_over",
            "match_winner",
            "end_reason",
            "num_sides",
            "hand_number",
            "match_scores",
            "hand_scores",
            "side_rewards",
            "score_sides",
            "to_dict",
        }
    )
    #: plain fields (and pure reads of them) of the flat state, through to_game_state()
    _FIELDS = frozenset(
        {
            "rules",
            "num_players",
            "side_of",
            "t",
            "hands",
            "hand_size",
            "stock",
            "pile",
            "pile_counts",
            "muertos",
            "muerto_taken",
            "muerto_unplayed",
            "melds",
            "close_ready",
            "known",
            "mano",
            "privilege_tile",
            "pending",
            "pile_top_required",
            "closer",
            "stock_size",
            "tile_counts",
            "check_conservation",
            "describe",
        }
    )

    __slots__ = ("game",)

    def __init__(self, game: FastGame) -> None:
        self.game = game

    def apply(self, action: int) -> None:
        self.game.apply(action)

    def legal_mask(self) -> np.ndarray:
        return self.game.legal_mask()

    def legal_actions(self) -> list[int]:
        return np.flatnonzero(self.game.legal_mask()).tolist()

    def is_legal(self, action: int) -> bool:
        return 0 <= action < A.NUM_ACTIONS and bool(self.game.legal_mask()[action])

    def clone(self) -> CompiledTable:
        return CompiledTable(self.game.clone())

    def next_hand(self, rng: np.random.Generator) -> None:
        self.game.next_hand(rng)

    def __getattr__(self, name: str) -> Any:
        if name in CompiledTable._CORE:
            return getattr(self.game, name)
        if name in CompiledTable._FIELDS:
            return getattr(self.game.to_game_state(), name)
        raise AttributeError(f"CompiledTable has no {name!r}: not a plain field, and not answered by the compiled core")


#: what a scenario plays on: the readable engine or the compiled core
Table = GameState | CompiledTable


class Engine:
    """One of the two engines, as the ``engine`` fixture hands it to a test."""

    def __init__(self, name: str) -> None:
        if name not in ENGINES:
            raise ValueError(f"engine {name!r} is not one of {ENGINES}")
        self.name = name

    def __repr__(self) -> str:
        return f"Engine({self.name!r})"

    def table(self, state: GameState) -> Table:
        """``state`` itself, or the same state on the compiled core."""
        return state if self.name == "python" else CompiledTable(FastGame.from_game_state(state))

    def build(self, *args: Any, **kwargs: Any) -> Table:
        """:func:`burako_env.scenario.build_state` on this engine."""
        return self.table(build_state(*args, **kwargs))

    def new_game(
        self, rng: np.random.Generator, rules: Rules | str = "burako", num_players: int = 2, mano: int | None = None
    ) -> Table:
        """``GameState.new_game`` / ``FastGame.new_game`` (the same deal from the same ``rng``)."""
        if self.name == "python":
            return GameState.new_game(rng, rules, num_players, mano)
        return CompiledTable(FastGame.new_game(rng, rules, num_players, mano))


@pytest.fixture(params=ENGINES)
def engine(request: pytest.FixtureRequest) -> Engine:
    """Runs a rule scenario on the readable engine and on the compiled core."""
    return Engine(request.param)


# ----------------------------------------------------------------------------- actions by tile names


def rng(seed: int = 0) -> np.random.Generator:
    return np.random.default_rng(seed)


def meld_of(meld: Meld) -> int:
    """The MELD action of a 3-tile pattern."""
    return meld_action(PATTERN_INDEX[meld])


def add(slot: int, text: str) -> int:
    """ADD the tile ``text`` (``"R5"``) to meld ``slot`` of the player's side."""
    return add_action(slot, tile(text))


def discard(text: str) -> int:
    return discard_action(tile(text))


# ----------------------------------------------------------------------------- legal actions, by kind


def legal(state: Table) -> set[int]:
    return set(state.legal_actions())


def legal_melds(state: Table) -> set[Meld]:
    return {PATTERNS[a - A.MELD_BASE] for a in legal(state) if A.MELD_BASE <= a < A.ADD_BASE}


def legal_adds(state: Table) -> set[tuple[int, str]]:
    out = set()
    for a in legal(state):
        if a >= A.ADD_BASE:
            slot, kind = divmod(a - A.ADD_BASE, NUM_KINDS)
            out.add((slot, tile_text(kind)))
    return out


def legal_discards(state: Table) -> set[str]:
    return {tile_text(a - A.DISCARD_BASE) for a in legal(state) if A.DISCARD_BASE <= a < A.MELD_BASE}


# ----------------------------------------------------------------------------- playing and scoring


def play(state: Table, *actions: int) -> Table:
    """Apply ``actions`` in order (each must be legal), checking tile conservation (E1) after each."""
    for action in actions:
        state.apply(action)
        state.check_conservation()
    return state


def scores(state: Table) -> list[dict[str, int]]:
    """The hand's score breakdown per side (``SideScore.to_dict``); the hand must be scored."""
    assert state.hand_scores is not None
    return [s.to_dict() for s in state.hand_scores]


def breakdown(melded: int, canasta: int, closing: int, hand: int, muerto: int) -> dict[str, int]:
    """Expected ``SideScore.to_dict()``; ``hand`` and ``muerto`` as positive penalties."""
    return {
        "melded": melded,
        "canasta_bonus": canasta,
        "closing_bonus": closing,
        "hand_penalty": -hand,
        "muerto_penalty": -muerto,
        "total": melded + canasta + closing - hand - muerto,
    }


def score_dicts(side_scores: Sequence[SideScore]) -> list[dict[str, int]]:
    return [s.to_dict() for s in side_scores]


# ----------------------------------------------------------------------------- training credit


def kill_after_first_checkpoint(args: Sequence[str], run_root: Path, timeout: float = 240.0) -> Path:
    """Start ``python -m training.ppo ARGS`` (its runs under ``run_root``), SIGKILL it once its
    ``checkpoints/latest.pt`` holds an update, and return that checkpoint's path."""
    latest, returncode, _ = signal_after_first_checkpoint(args, run_root, signal.SIGKILL, timeout)
    assert returncode == -signal.SIGKILL
    return latest


def child_environment(root: Path) -> dict[str, str]:
    """The environment of a ``python -m`` child run from the repository: the repository first on its
    ``PYTHONPATH``, what was there kept (where packages come from it, as on a machine without an install)."""
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(root), *filter(None, [os.environ.get("PYTHONPATH")])])}


def signal_after_first_checkpoint(
    args: Sequence[str], run_root: Path, signum: int, timeout: float = 240.0
) -> tuple[Path, int, str]:
    """Start ``python -m training.ppo ARGS`` (its runs under ``run_root``), send it ``signum`` once its
    ``checkpoints/latest.pt`` holds an update; return that checkpoint's path, the exit status and stderr."""
    from agents import checkpoint as ckpt

    root = Path(__file__).resolve().parent.parent
    env = child_environment(root)
    command = [sys.executable, "-m", "training.ppo", *args]
    proc = subprocess.Popen(command, cwd=root, env=env, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + timeout
        latest = None
        while time.monotonic() < deadline and proc.poll() is None:
            found = list(run_root.glob("*/checkpoints/latest.pt"))
            if found and ckpt.load(found[0])["trainer"]["update"] >= 1:
                latest = found[0]
                break
            time.sleep(0.5)
        assert latest is not None, "no checkpoint within the deadline"
        assert proc.poll() is None, "the run ended before it could be stopped"
        proc.send_signal(signum)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return latest, proc.returncode, err


def episodes_by_hand(episodes: Iterable[Any]) -> dict[int, list[Any]]:
    """Stored training episodes grouped by hand, after checking that every
    stored action was legal under the mask stored with it."""
    by_hand: dict[int, list[Any]] = {}
    for ep in episodes:
        assert bool(ep.masks[np.arange(ep.actions.size), ep.actions].all()), "a stored action was illegal"
        by_hand.setdefault(ep.hand, []).append(ep)
    return by_hand


def unforced_positions(count: int = 40, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Observations, masks (bool) and random legal moves of up to ``count`` unforced decisions of a
    2-player Burako hand played at random: what a network test feeds its policy."""
    from burako_env.observation import Observer
    from burako_env.rules import load_rules

    generator = np.random.default_rng(seed)
    state = GameState.new_game(generator, "burako", 2)
    observer = Observer(2, load_rules("burako"))
    obs, masks, actions = [], [], []
    while len(actions) < count and not state.hand_over:
        mask = state.legal_mask()
        action = int(generator.choice(np.flatnonzero(mask)))
        if mask.sum() > 1:
            obs.append(observer.encode(state, state.current))
            masks.append(mask.astype(bool))
            actions.append(action)
        state.apply(action)
    return np.stack(obs), np.stack(masks), np.array(actions)
