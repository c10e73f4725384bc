#!/usr/bin/env bash
# The tests: install the project into .venv (and RLlib into .venv-rllib), check the core
# install alone, lint, and run pytest on 2 workers.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh
# the core install (no extras) imports the env and plays, without torch/pandas/matplotlib
bash scripts/check_core_install.sh
# RLlib in its own venv (it pins an older gymnasium): tests/test_examples.py runs its example there
bash scripts/install_rllib.sh
.venv/bin/ruff check .
.venv/bin/ruff format --check .
.venv/bin/python -m pytest -q -n "${PYTEST_WORKERS:-2}" --durations=25 "$@"
