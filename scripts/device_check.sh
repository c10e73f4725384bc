#!/usr/bin/env bash
# The checks that need a CUDA GPU; CI never runs them (it has none).
#
# Runs on a machine whose python3 (or $PYTHON) already holds torch with CUDA, numba, numpy,
# pytest and pytest-xdist, from the repository root:
#
#   bash scripts/device_check.sh [OUTDIR]
#
# Missing pure-Python packages (gymnasium, pettingzoo, ...) may sit as wheels in
# .whl/ (installed to a scratch folder, never over the machine's own packages).
# Three checks, each bounded by a timeout, each writing its log to OUTDIR:
#   1. the training tests with CUDA visible (``device: auto`` resolves to cuda,
#      ``precision: auto`` to bfloat16): every test that trains runs on the GPU;
#   2. the smoke config end to end on ``device: auto``; its checkpoint goes to
#      OUTDIR so that a CPU-only machine can check that it loads there;
#   3. bench/bench_training.py, self-play and the running league: the new path on
#      the GPU beside the same path on this machine's CPU (``device=cpu``), and a
#      GPU variant with more tables.
set -u
py=${PYTHON:-python3}
out=${1:-${OUT:-/tmp/device_check}}
mkdir -p "$out"
if ! "$py" -c "import gymnasium, pettingzoo" 2> /dev/null && compgen -G ".whl/*.whl" > /dev/null; then
    "$py" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
    export PYTHONPATH=/tmp/site:$PWD
else
    export PYTHONPATH=$PWD
fi
export PYTHONUNBUFFERED=1
# not installed there: burako_env.presets is configs/rules (pyproject's package-dir); a link in this
# throwaway copy stands in for the editable install
"$py" -c "import burako_env.presets" 2> /dev/null || ln -sfn ../configs/rules burako_env/presets
{
    nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.sm --format=csv
    nproc
    uptime
    "$py" -c "import torch, numba, numpy; print('torch', torch.__version__, 'cuda', torch.cuda.is_available(), 'numba', numba.__version__, 'numpy', numpy.__version__)"
} 2>&1 | tee "$out/machine.txt"

echo "== 1. training tests with CUDA visible"
timeout 200 "$py" -m pytest -q -n 8 -p no:cacheprovider \
    tests/test_training_vector.py tests/test_privileged_value.py tests/test_ppo_parts.py \
    tests/test_training.py tests/test_run_faults.py tests/test_resume_faults.py > "$out/pytest.txt" 2>&1
echo "pytest rc=$?"
tail -25 "$out/pytest.txt"

echo "== 2. the smoke config on device: auto"
rm -rf /tmp/device_runs
timeout 120 "$py" -m training.ppo --config configs/ppo_smoke.yaml --set device=auto \
    --set run_root=/tmp/device_runs --set exp_name=cuda_smoke > "$out/smoke.txt" 2>&1
echo "smoke rc=$?"
tail -8 "$out/smoke.txt"
policy=$(find /tmp/device_runs -name 'policy.pt' | head -1)
[ -n "$policy" ] && cp "$policy" "$out/cuda_smoke_policy.pt"
"$py" - <<'EOF' 2>&1 | tee -a "$out/smoke.txt"
import glob, torch
for path in sorted(glob.glob("/tmp/device_runs/**/*.pt", recursive=True))[:4]:
    data = torch.load(path, map_location="cpu", weights_only=True)
    tensors = [v for v in (data.get("policy") or {}).values() if torch.is_tensor(v)] if isinstance(data, dict) else []
    print(path, "keys", sorted(data)[:8] if isinstance(data, dict) else type(data), "tensor devices", {str(t.device) for t in tensors})
EOF

echo "== 3. the learning loop's speed, GPU beside CPU"
for league in selfplay running; do
    timeout 170 "$py" bench/bench_training.py --config configs/ppo_reference.yaml --rounds 3 --league $league \
        --paths new --variant cpu:device=cpu --variant tables512:num_envs=512 \
        --json "$out/bench_training.json" > "$out/bench_$league.txt" 2>&1
    echo "bench $league rc=$?"
    tail -6 "$out/bench_$league.txt"
done
