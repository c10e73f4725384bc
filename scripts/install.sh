#!/usr/bin/env bash
# Create .venv and install the project with every extra (pictures, training, tournaments,
# analysis) and the dev tools (tests, lint, notebooks).
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
# the CPU build of torch first: a bare "torch" requirement would pull a multi-GB CUDA build
.venv/bin/python -m pip install -q "torch==2.13.0"
.venv/bin/python -m pip install -q -e ".[all,dev]"
# compile the numba core once (cached on disk), so tests and jobs start at once
.venv/bin/python -m burako_env.vector
.venv/bin/python -m agents.fast_search
