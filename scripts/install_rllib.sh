#!/usr/bin/env bash
# RLlib in a venv of its own (.venv-rllib): ray[rllib] pins gymnasium==1.2.2, older than the
# main venv's, and is heavy (~80 MB wheel, pyarrow). It gets the CPU torch first, then the
# project (core + the tournament extra the example's evaluation uses) and ray[rllib].
# examples/rllib_ppo.py runs there; tests/test_examples.py runs it briefly through it.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
[ -x .venv-rllib/bin/python ] || "$PYTHON" -m venv .venv-rllib
.venv-rllib/bin/python -m pip install -q --upgrade pip
.venv-rllib/bin/python -m pip install -q "torch==2.13.0"
# setuptools warns at length that an editable install maps folders (configs/rules is
# burako_env.presets): expected here, so kept off the console
PYTHONWARNINGS="ignore:Editable installation" .venv-rllib/bin/python -m pip install -q -e ".[tournament,rllib]"
