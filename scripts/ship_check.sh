#!/usr/bin/env bash
# Issue 15's shipping check of a trained policy, in one command: held-out duplicate games against the
# planner on two seeds and against ismcts(simulations=30), then the verdict of the rule
# docs/training/README.md applies before a network replaces agents/checkpoints/burako_ppo.pt.
# training/ship_check.py owns the evaluations and the rule; this script runs it in the project's .venv.
#
#   bash scripts/ship_check.sh runs/<run folder>/policy.pt             # the last network of a run
#   GAMES=200 SEARCH_GAMES=40 bash scripts/ship_check.sh <policy.pt>    # a quick look (no verdict worth having)
#
# The rule: a mean win rate of at least 0.70 against the planner over seeds 2026 and 2027 (1,000 games
# each) with each seed's 95% lower bound above 0.5, and at least 0.55 against ismcts(simulations=30)
# over 400 games on seed 2026 with its lower bound above 0.5. Exit status 0: it passes; 1: it does not.
#
# Overrides: GAMES (per planner seed), SEARCH_GAMES, WORKERS, OUT (folder for the .txt/.json tables,
# default: ship_check/ beside the policy), PY (interpreter, default .venv/bin/python). A killed check
# continues where it stopped when run again (each evaluation resumes from its record file).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
POLICY=${1:?usage: bash scripts/ship_check.sh <policy.pt>}
[ -f "$POLICY" ] || { echo "ship_check.sh: no such policy file: $POLICY" >&2; exit 2; }
POLICY=$(cd "$(dirname "$POLICY")" && pwd)/$(basename "$POLICY")
PY=${PY:-$ROOT/.venv/bin/python}
args=(--games "${GAMES:-1000}" --search-games "${SEARCH_GAMES:-400}" --workers "${WORKERS:-2}")
[ -n "${OUT:-}" ] && args+=(--out "$OUT")
cd "$ROOT"
exec "$PY" -m training.ship_check "$POLICY" "${args[@]}"
