#!/usr/bin/env bash
# Create .venv and install the project with its dev extras (tests, lint, notebooks) and the rl extras (examples).
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
# the CPU build of torch first: a bare "torch" requirement would pull a multi-GB CUDA build
.venv/bin/python -m pip install -q "torch==2.13.0"
# dev: tests, lint, notebooks; rl: the optional RL libraries the examples and their tests use
# (SB3 + sb3-contrib, OpenSpiel); never core dependencies
.venv/bin/python -m pip install -q -e ".[dev,rl]"
# compile the numba core once (cached on disk), so tests and jobs start at once
.venv/bin/python -m burako_env.vector
