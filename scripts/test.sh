#!/usr/bin/env bash
# The tests: install the project into .venv (and RLlib into .venv-rllib), check the core
# install alone, lint, and run pytest on 2 workers.
set -euo pipefail
cd "$(dirname "$0")/.."
# RLlib in its own venv (it pins an older gymnasium): tests/test_examples.py runs its example there.
# It installs beside the main venv: install.sh spends ~2 minutes compiling numba kernels on one core.
rllib_log=$(mktemp)
rllib_pid=
# a failed step or Ctrl-C ends the script: the RLlib install, in a process group of its own (set -m),
# is stopped with it rather than left running (a background job ignores Ctrl-C)
stop_rllib() {
    local status=$?
    if [ -n "$rllib_pid" ]; then
        kill -TERM -- -"$rllib_pid" 2>/dev/null || true
        wait "$rllib_pid" 2>/dev/null || true
    fi
    rm -f "$rllib_log"
    exit "$status"
}
trap stop_rllib EXIT
set -m
bash scripts/install_rllib.sh >"$rllib_log" 2>&1 &
rllib_pid=$!
set +m
bash scripts/install.sh
# the core install (no extras) imports the env and plays, without torch/pandas/matplotlib
bash scripts/check_core_install.sh
rllib_status=0
wait "$rllib_pid" || rllib_status=$?
rllib_pid=
if [ "$rllib_status" != 0 ]; then
    cat "$rllib_log" >&2
    echo "test.sh: scripts/install_rllib.sh failed with status $rllib_status (its output above)" >&2
    exit 1
fi
.venv/bin/ruff check .
.venv/bin/ruff format --check .
.venv/bin/python -m pytest -q -n "${PYTEST_WORKERS:-2}" --durations=25 "$@"
