#!/usr/bin/env bash
# The tests: install the project into .venv (and RLlib into .venv-rllib), check the core
# install alone, lint, and run pytest on 2 workers.
set -euo pipefail
cd "$(dirname "$0")/.."
# RLlib in its own venv (it pins an older gymnasium): tests/test_examples.py runs its example
# there. pip and numba's compiler each use one core, so on CI's two cores this install runs
# beside the main one (about 2 minutes less); its output is shown if it fails.
rllib_log=$(mktemp)
bash scripts/install_rllib.sh > "$rllib_log" 2>&1 &
rllib_install=$!
trap 'pkill -P "$rllib_install" 2>/dev/null || true; kill "$rllib_install" 2>/dev/null || true; rm -f "$rllib_log"' EXIT
bash scripts/install.sh
# the core install (no extras) imports the env and plays, without torch/pandas/matplotlib
bash scripts/check_core_install.sh
if ! wait "$rllib_install"; then
    cat "$rllib_log" >&2
    echo "test.sh: scripts/install_rllib.sh failed (its output above)" >&2
    exit 1
fi
.venv/bin/ruff check .
.venv/bin/ruff format --check .
.venv/bin/python -m pytest -q -n "${PYTEST_WORKERS:-2}" --durations=25 "$@"
