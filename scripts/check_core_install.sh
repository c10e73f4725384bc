#!/usr/bin/env bash
# The core install stands alone: in a clean venv, `pip install burako-env` without
# extras imports the env and plays a game, with no torch, pandas or matplotlib; and a
# console script of an extra says which extra to install, with no traceback.
# (Editable, so the numba kernels compiled by scripts/install.sh are reused.)
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
venv=$(mktemp -d)/core-venv
trap 'rm -rf "$(dirname "$venv")"' EXIT
"$PYTHON" -m venv "$venv"
"$venv/bin/python" -m pip install -q --disable-pip-version-check -e .
cd "$(dirname "$venv")"
"$venv/bin/python" - <<'PY'
import importlib.util
import sys

import numpy as np

import burako_env
from burako_env.vector import BurakoVectorEnv, sample_legal_actions

absent = [name for name in ("torch", "pandas", "matplotlib", "PIL", "tensorboard") if importlib.util.find_spec(name)]
assert not absent, f"the core install pulled {absent}"
for players in (2, 4):
    env = burako_env.env(num_players=players)
    env.reset(seed=players)
    rng = np.random.default_rng(0)
    steps = 0
    for agent in env.agent_iter():
        obs, reward, term, trunc, info = env.last()
        action = None if term or trunc else int(rng.choice(np.flatnonzero(obs["action_mask"])))
        env.step(action)
        steps += 1
    assert "score_breakdown" in info or info.get("truncated") or info.get("void"), info
    print(f"core install: {players}-player hand played in {steps} steps: {info.get('end_reason')}")
vec = BurakoVectorEnv(8)
obs, masks, _ = vec.reset(seed=0)
for _ in range(50):
    obs, masks, *_ = vec.step(sample_legal_actions(masks, np.random.default_rng(1)))
# the Gymnasium env builds opponents by name from the installed burako_env.agents entry points
from burako_env.gym import BurakoGymEnv

gym_env = BurakoGymEnv(opponents="random")
gym_obs, _ = gym_env.reset(seed=0)
for _ in range(20):
    gym_obs, _, done, cut, _ = gym_env.step(int(np.flatnonzero(gym_obs["action_mask"])[0]))
    if done or cut:
        break
print(f"core install: BurakoGymEnv(opponents='random') resolved {type(gym_env._opponents[0]).__name__} by entry point")
heavy = sorted(m for m in ("torch", "pandas", "matplotlib", "PIL") if m in sys.modules)
assert not heavy, heavy
print("core install: burako_env imports and plays without torch, pandas, matplotlib or Pillow")
PY
for command in burako-train burako-eval burako-web; do
    set +e
    said=$("$venv/bin/$command" --help 2>&1)
    status=$?
    set -e
    if [ "$status" != 1 ] || ! grep -q "^$command: the package '.*' is not installed; it comes with the \[.*\] extra" <<<"$said"; then
        echo "core install: $command should name its missing extra (exit 1), got exit $status: $said" >&2
        exit 1
    fi
    echo "core install: $said"
done
"$venv/bin/burako-play" --help >/dev/null
echo "core install: burako-play runs"
