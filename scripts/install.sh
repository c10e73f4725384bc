#!/usr/bin/env bash
# Create .venv and install the project with every extra (pictures, training, tournaments,
# analysis, web table), the rl extra (the examples' SB3, sb3-contrib and OpenSpiel) and
# the dev tools (tests, lint, notebooks, the browser for web tests).
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
# the CPU build of torch first: a bare "torch" requirement would pull a multi-GB CUDA build
.venv/bin/python -m pip install -q "torch==2.13.0"
# setuptools warns at length that an editable install maps folders (configs/rules is
# burako_env.presets): expected here, so kept off the console
PYTHONWARNINGS="ignore:Editable installation" .venv/bin/python -m pip install -q -e ".[all,rl,dev]"
# a real browser for the web table's tests (tests/test_web_browser.py): Debian's chromium
if ! command -v chromium >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium >/dev/null 2>&1 || {
            apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium >/dev/null
        }
    else
        echo "install.sh: chromium is missing (apt-get install chromium as root); the browser tests will be skipped" >&2
    fi
fi
# compile the numba core once (cached on disk), so tests and jobs start at once
.venv/bin/python -m burako_env.vector
.venv/bin/python -m agents.fast_search
.venv/bin/python -m agents.fast_planner
.venv/bin/python -c 'import time; from agents.pair_kernel import compile_kernels as c; t = time.perf_counter(); c(); print(f"agents.pair_kernel ready in {time.perf_counter() - t:.1f} s")'
.venv/bin/python -c 'import time; from agents.sparse_kernel import compile_kernels as c; t = time.perf_counter(); c(); print(f"agents.sparse_kernel ready in {time.perf_counter() - t:.1f} s")'
.venv/bin/python -c 'import time; from training.mask_scan import compile_kernels as c; t = time.perf_counter(); c(); print(f"training.mask_scan ready in {time.perf_counter() - t:.1f} s")'
.venv/bin/python -c 'from burako_env.rummy.engine import compile_kernels as c; print(f"burako_env.rummy kernels ready in {c():.1f} s")'
