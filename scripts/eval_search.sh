#!/usr/bin/env bash
# Issue 16's strength check, in one command: the neural ISMCTS at a fixed time per move against
# ismcts(simulations=30) and against the shipped policy bot, over duplicate deals (burako-eval).
#
#   bash scripts/eval_search.sh                 # 400 games each, 0.2 s a move, 2 workers (hours on 2 cores)
#   GAMES=40 bash scripts/eval_search.sh        # a quick look (a small sample: wide intervals)
#
# Overrides: GAMES (even), SECONDS_PER_MOVE, WORKERS, SEED, OUT (folder for the .txt/.json results),
# PY (interpreter, default .venv/bin/python). A time budget is wall-clock time: use at most one
# worker per free core, on a quiet machine, or the searches get less than their budget.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
PY=${PY:-$ROOT/.venv/bin/python}
GAMES=${GAMES:-400}
SECONDS_PER_MOVE=${SECONDS_PER_MOVE:-0.2}
WORKERS=${WORKERS:-2}
SEED=${SEED:-16}
OUT=${OUT:-$ROOT/runs/eval_search}
mkdir -p "$OUT"
run() {  # run NAME B-AGENT [B-OPTION...]
  local name=$1 b=$2
  shift 2
  local opts=()
  for o in "$@"; do opts+=(--b-opt "$o"); done
  echo "== neural_ismcts(time_per_move=$SECONDS_PER_MOVE) vs $b $* ($GAMES games, seed $SEED) =="
  "$PY" -m training.evaluate --a neural_ismcts --a-opt "time_per_move=$SECONDS_PER_MOVE" --b "$b" "${opts[@]}" \
    --games "$GAMES" --seed "$SEED" --workers "$WORKERS" --json "$OUT/$name.json" | tee "$OUT/$name.txt"
}
echo "load: $(uptime)"
run neural_ismcts_vs_ismcts30 ismcts simulations=30
run neural_ismcts_vs_policy policy
echo "load: $(uptime)"
