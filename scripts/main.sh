#!/usr/bin/env bash
# The main job: install the project into .venv and play one full hand between
# two built-in agents, printed as text, ending with the score breakdown.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh
.venv/bin/burako-play --seed "${SEED:-0}" --players "${PLAYERS:-2}" "$@"
