"""Training processes make OpenMP's waiting threads sleep (training/openmp.py), unless the user chose."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from training.openmp import WAIT_SETTINGS

SHOW = "import os; {first}; print(os.environ.get('OMP_WAIT_POLICY'), os.environ.get('GOMP_SPINCOUNT'))"


def wait_settings_of_a_fresh_process(first: str, **env: str) -> str:
    """What a new interpreter's environment says after running ``first`` (the parent's wait settings dropped)."""
    base = {k: v for k, v in os.environ.items() if k not in WAIT_SETTINGS}
    command = [sys.executable, "-c", SHOW.format(first=first)]
    return subprocess.run(command, env={**base, **env}, capture_output=True, text=True, check=True).stdout.strip()


@pytest.mark.parametrize(
    ("first", "env", "expected"),
    [
        ("import training", {}, "PASSIVE None"),  # burako-train, burako-eval ... import the package first
        ("import training.ppo", {}, "PASSIVE None"),  # before training.ppo imports torch
        ("import training", {"OMP_WAIT_POLICY": "ACTIVE"}, "ACTIVE None"),  # the user's choice wins
        ("import training", {"GOMP_SPINCOUNT": "300000"}, "None 300000"),  # a spin count is a choice too
        ("import training", {"KMP_BLOCKTIME": "200"}, "None None"),
        ("import torch; import training", {}, "None None"),  # too late: OpenMP has read its settings
        # the benchmarks' "today" path: libgomp's defaults again, named so that the package leaves them
        ("from training.openmp import use_default_waits; use_default_waits(); import training", {}, "None 300000"),
    ],
)
def test_importing_training_makes_openmps_waiting_threads_sleep_unless_chosen_or_too_late(
    first: str, env: dict[str, str], expected: str
) -> None:
    assert wait_settings_of_a_fresh_process(first, **env) == expected
