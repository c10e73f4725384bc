#!/usr/bin/env bash
# Issue 15's shipping check of a trained policy, in one command: training/ship_check.py (which owns the
# rule, its three held-out evaluations and their defaults) run in the project's .venv.
#
#   bash scripts/ship_check.sh runs/<run folder>/policy.pt             # the last network of a run
#   GAMES=200 SEARCH_GAMES=40 bash scripts/ship_check.sh <policy.pt>    # a quick look (no verdict worth having)
#
# Exit status 0: it ships; 1: it does not; 2: bad input. Overrides, each passed on only when set: GAMES
# (per planner seed), SEARCH_GAMES, WORKERS, OUT (folder of the tables, default ship_check/ beside the
# policy); PY (interpreter, default .venv/bin/python). A killed check continues where it stopped when
# run again (each evaluation resumes from its record file).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
POLICY=${1:?usage: bash scripts/ship_check.sh <policy.pt>}
[ -f "$POLICY" ] || { echo "ship_check.sh: no such policy file: $POLICY" >&2; exit 2; }
POLICY=$(cd "$(dirname "$POLICY")" && pwd)/$(basename "$POLICY")  # absolute: the check runs from $ROOT
args=()
[ -n "${GAMES:-}" ] && args+=(--games "$GAMES")
[ -n "${SEARCH_GAMES:-}" ] && args+=(--search-games "$SEARCH_GAMES")
[ -n "${WORKERS:-}" ] && args+=(--workers "$WORKERS")
[ -n "${OUT:-}" ] && args+=(--out "$OUT")
cd "$ROOT"
exec "${PY:-$ROOT/.venv/bin/python}" -m training.ship_check "$POLICY" "${args[@]}"
