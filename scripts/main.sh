#!/usr/bin/env bash
# The main job: install the project into .venv, then
#   1. play one full hand between two built-in agents, printed, with the score breakdown;
#   2. train a policy briefly by masked-PPO self-play (configs/ppo_smoke.yaml) and
#      print its evaluation against the baselines;
#   3. evaluate the shipped reference bot (agents/checkpoints/burako_ppo.pt) against
#      the best heuristic, the planner, on duplicate deals.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh
echo "== 1. one hand between two agents"
.venv/bin/burako-play --seed "${SEED:-0}" --players "${PLAYERS:-2}" "$@"
echo
echo "== 2. a short training run (configs/ppo_smoke.yaml: a warm start cloning the planner, then PPO in a league, 30% self-play), then its evaluation"
.venv/bin/burako-train --config configs/ppo_smoke.yaml --set "run_root=${RUN_ROOT:-runs}" --no-progress
echo
echo "== 3. the shipped bot against the planner (${BOT_GAMES:-200} duplicate games; the README has 1,000)"
.venv/bin/burako-eval --a policy --b planner \
    --games "${BOT_GAMES:-200}" --seed 1 --workers 2 --no-progress
