#!/usr/bin/env bash
# Burako (or Rummy) beside the anchors, in the same run. Usage (from anywhere):
#   bash bench/run_bench.sh [REPEATS]          (default 3 rounds, ~2 min a round on a 2-core machine)
#   bash bench/run_bench.sh [REPEATS] rummy    (Rummy random play beside gin_rummy_v4, ~1 min a round;
#                                               results in bench/results-rummy/)
#
# - Our benchmarks run with the project venv (.venv, override with OURPY).
# - The anchors (PettingZoo gin_rummy_v4, RLCard, OpenSpiel) run with their own
#   venv, .bench-venv at the repo root (override with BENCH_VENV), created here
#   if missing with exactly the packages of the anchors' README (never torch).
# - The anchors' scripts run straight from their read-only folder (ANCHORS,
#   default: shared/bench/anchors beside or inside the repo); every result goes
#   to bench/results/ (override with OUT).
# - Rounds are interleaved: each round runs every benchmark once, ours and
#   theirs alternating, so slow phases of a shared machine hit all of them.
# Then bench/summarize.py prints the table (also written to $OUT/table.md).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
REPEATS=${1:-3}
SUITE=${2:-burako}
[[ "$SUITE" == burako || "$SUITE" == rummy ]] || { echo "suite must be burako or rummy, got $SUITE" >&2; exit 1; }
OURPY=${OURPY:-$ROOT/.venv/bin/python}
BENCH_VENV=${BENCH_VENV:-$ROOT/.bench-venv}
BPY=$BENCH_VENV/bin/python
if [[ "$SUITE" == rummy ]]; then OUT=${OUT:-$ROOT/bench/results-rummy}; else OUT=${OUT:-$ROOT/bench/results}; fi
if [[ -z "${ANCHORS:-}" ]]; then
  for d in "$ROOT/shared/bench/anchors" "$ROOT/../shared/bench/anchors" /work/shared/bench/anchors; do
    if [[ -f "$d/common.py" ]]; then ANCHORS=$(cd "$d" && pwd); break; fi
  done
fi
if [[ -z "${ANCHORS:-}" || ! -f "$ANCHORS/common.py" ]]; then
  echo "anchors not found; set ANCHORS=/path/to/shared/bench/anchors" >&2
  exit 1
fi
[[ -x "$OURPY" ]] || { echo "project venv python not found: $OURPY (set OURPY)" >&2; exit 1; }
export PYTHONDONTWRITEBYTECODE=1   # the anchors' folder is read-only

# ---------------------------------------------------------------- anchors venv
anchors_ok() {
  [[ -x "$BPY" ]] && "$BPY" - <<'EOF' >/dev/null 2>&1
import warnings
warnings.filterwarnings("ignore")
import pyspiel, rlcard, numpy  # noqa
from pettingzoo.classic import gin_rummy_v4  # noqa  (removed in pettingzoo 1.27)
EOF
}
if ! anchors_ok; then
  echo "== creating the anchors' venv at $BENCH_VENV"
  [[ -x "$BPY" ]] || "${PYTHON:-python3}" -m venv "$BENCH_VENV"
  "$BPY" -m pip install --quiet --upgrade pip
  # The anchors' README: gin_rummy_v4 ships in pettingzoo <= 1.26.1.
  "$BPY" -m pip install --quiet 'pettingzoo[classic]==1.26.1' open-spiel rlcard numpy
  anchors_ok || { echo "the anchors' venv is still broken: $BENCH_VENV" >&2; exit 1; }
fi
if "$BPY" -m pip show torch >/dev/null 2>&1; then
  echo "warning: torch is installed in $BENCH_VENV; the anchors do not need it" >&2
fi

# ---------------------------------------------------------------- run
mkdir -p "$OUT"
: > "$OUT/results.jsonl"
: > "$OUT/raw.log"
: > "$OUT/progress.log"
{
  echo "date: $(date -u +%FT%TZ)"
  echo "host: $(uname -srm)"
  echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //')"
  echo "nproc: $(nproc)"
  echo "loadavg at start: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "anchors: $ANCHORS"
  echo "burako_env git: $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo "?"); uncommitted diff of burako_env/ sha1: $(git -C "$ROOT" diff HEAD -- burako_env 2>/dev/null | sha1sum | cut -c1-12)"
  echo "python (ours): $("$OURPY" -c 'import sys; print(sys.version.split()[0])')"
  echo "python (anchors): $("$BPY" -c 'import sys; print(sys.version.split()[0])')"
  echo "--- pip freeze (ours, $OURPY)"
  "$OURPY" -m pip freeze 2>/dev/null || true
  echo "--- pip freeze (anchors, $BPY)"
  "$BPY" -m pip freeze 2>/dev/null || true
} > "$OUT/env.txt"

log() { echo "$*" | tee -a "$OUT/progress.log"; }

run() {  # run CMD...
  echo "### $*" >> "$OUT/raw.log"
  local t0 t1
  t0=$(date +%s.%N)
  # a failing benchmark is said and the suite goes on (set -e ended it silently, the traceback only in raw.log)
  local status
  set +e
  "$@" 2>>"$OUT/raw.log" | tee -a "$OUT/raw.log" | { grep '^RESULT ' || true; } | sed 's/^RESULT //' >> "$OUT/results.jsonl"
  status=${PIPESTATUS[0]}
  set -e
  if [ "$status" != 0 ]; then
    log "  FAILED (exit $status): $* (see $OUT/raw.log)"
  fi
  t1=$(date +%s.%N)
  log "$(printf '  %-66s %6.1fs  load %s' "$(basename "$2") ${*:3}" "$(echo "$t1 - $t0" | bc)" "$(cut -d' ' -f1 /proc/loadavg)")"
}

OURS="$ROOT/bench/bench_burako.py"
RUMMY="$ROOT/bench/bench_rummy.py"
for r in $(seq 1 "$REPEATS"); do
  log "== round $r/$REPEATS  ($(date -u +%T), load $(cut -d' ' -f1-3 /proc/loadavg))"
  if [[ "$SUITE" == rummy ]]; then
    run "$OURPY" "$RUMMY" --mode aec --players 2 --games 200 --tag "run$r"
    run "$BPY" "$ANCHORS/bench_pz_gin_rummy.py" --games 200 --seed-mode each --tag "run$r"
    run "$OURPY" "$RUMMY" --mode aec --players 3 --games 200 --tag "run$r"
    run "$OURPY" "$RUMMY" --mode aec --players 4 --games 200 --tag "run$r"
    run "$OURPY" "$RUMMY" --mode engine --players 2 --games 200 --tag "run$r"
    continue
  fi
  run "$OURPY" "$OURS" --mode aec --players 2 --games 600 --tag "run$r"
  run "$BPY" "$ANCHORS/bench_openspiel.py" --game gin_rummy --games 3000 --obs --tag "run$r"
  run "$OURPY" "$OURS" --mode vector --players 2 --games 6000 --tag "run$r"
  run "$BPY" "$ANCHORS/bench_pz_gin_rummy.py" --games 300 --seed-mode each --tag "run$r"
  run "$OURPY" "$OURS" --mode aec --players 4 --games 600 --tag "run$r"
  run "$BPY" "$ANCHORS/bench_rlcard_gin_rummy.py" --games 1000 --tag "run$r"
  run "$OURPY" "$OURS" --mode vector --players 4 --games 6000 --tag "run$r"
  run "$BPY" "$ANCHORS/bench_openspiel.py" --game gin_rummy --games 3000 --tag "run$r"
  run "$OURPY" "$OURS" --mode aec_python --players 2 --games 300 --tag "run$r"
  run "$OURPY" "$OURS" --mode raw_aec --players 2 --games 600 --tag "run$r"
  run "$OURPY" "$OURS" --mode fast_obs --players 2 --games 1000 --tag "run$r"
  run "$OURPY" "$OURS" --mode engine_obs --players 2 --games 400 --tag "run$r"
  run "$OURPY" "$OURS" --mode engine --players 2 --games 500 --tag "run$r"
  run "$OURPY" "$OURS" --mode clone --players 2 --tag "run$r"
  run "$OURPY" "$OURS" --mode clone --players 4 --tag "run$r"
done
{
  echo "date at end: $(date -u +%FT%TZ)"
  echo "loadavg at end: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "uncommitted diff of burako_env/ sha1 at end: $(git -C "$ROOT" diff HEAD -- burako_env 2>/dev/null | sha1sum | cut -c1-12)"
} >> "$OUT/env.txt"
if [[ "$SUITE" == rummy ]]; then REFERENCE=rummy_aec_2p; else REFERENCE=burako_aec_2p; fi
"$OURPY" "$ROOT/bench/summarize.py" "$OUT/results.jsonl" --reference "$REFERENCE" | tee "$OUT/table.md"
