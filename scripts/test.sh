#!/usr/bin/env bash
# The tests: install the project into .venv, lint, and run pytest on 2 workers.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh
.venv/bin/ruff check .
.venv/bin/ruff format --check .
.venv/bin/python -m pytest -q -n "${PYTEST_WORKERS:-2}" "$@"
