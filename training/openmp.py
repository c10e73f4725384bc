"""OpenMP's waiting threads sleep in training processes, unless the user chose how they wait.

torch runs its parallel loops on OpenMP (libgomp in the CPU wheels). At the end
of every loop a thread that is done spins, by default for about 300,000
iterations, before it sleeps. When another process holds one of the cores (a
second job, a second pytest worker) the
spinning threads take the core that the thread they wait for needs, and a PPO
update on two threads ran at 0.57x the speed it has with the waiters asleep.
Alone on the machine the two waits cost the same, within a few percent
(bench/README.md, "OpenMP's waits").

OpenMP reads its settings once, when torch loads it, so this runs when the
``training`` package is imported, before any of its modules imports torch. It
sets ``OMP_WAIT_POLICY=PASSIVE`` in the environment (processes started from
this one inherit it) unless torch is loaded already, or the environment names
any of :data:`WAIT_SETTINGS` (the user's choice wins).
"""

from __future__ import annotations

import os
import sys

#: the environment variables by which a user says how OpenMP threads wait (libgomp's and Intel's)
WAIT_SETTINGS = ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "KMP_BLOCKTIME")
#: the environment (None: unset) under which a process that imports this package keeps libgomp's default
#: waits: no policy, and the spin count libgomp uses without one, named so that the package leaves it
DEFAULT_WAITS: dict[str, str | None] = {"OMP_WAIT_POLICY": None, "GOMP_SPINCOUNT": "300000"}


def sleep_while_waiting() -> bool:
    """Set ``OMP_WAIT_POLICY=PASSIVE`` for this process and its children; False where it is too late
    (torch is loaded) or the user set how OpenMP waits."""
    if "torch" in sys.modules or any(name in os.environ for name in WAIT_SETTINGS):
        return False
    os.environ["OMP_WAIT_POLICY"] = "PASSIVE"
    return True


def set_environment(values: dict[str, str | None]) -> None:
    """Set these environment variables of this process and its children (None: remove)."""
    for name, value in values.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


def use_default_waits() -> None:
    """Undo :func:`sleep_while_waiting` for this process and its children before torch loads: libgomp's
    default waits (:data:`DEFAULT_WAITS`), as the benchmarks' code from before this module has them."""
    set_environment(DEFAULT_WAITS)
