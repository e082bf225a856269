#!/usr/bin/env bash
# Runs the benchmark suite at the sizes the issues quote and writes JSON (one
# file per benchmark) plus PNG charts. GPU benchmarks run when their _cuda
# executables exist; CPU benchmarks are pinned to 2 cores (taskset), the
# configuration the OpenMP-vs-serial targets are stated for.
#
#   scripts/run-benchmarks.sh [build-dir] [out-dir]
# Env: WHICH="gpu cpu" (default both), QUICK=1 for reduced sizes, EACH_TIMEOUT (s),
#      ONLY=regex of benchmark names to run (e.g. 'lu|tlm').
set -uo pipefail
cd "$(dirname "$0")/.."
B=${1:-build-gpu}
O=${2:-bench-results}
WHICH=${WHICH:-gpu cpu}
T=${EACH_TIMEOUT:-240}
mkdir -p "$O"
PIN=()
ONLY=${ONLY:-.}
run() { if [[ $1 =~ $ONLY ]]; then run_one "$@"; fi; }
q=(); [ "${QUICK:-0}" = 1 ] && q=(--quick)
run_one() {  # name, executable, args...
  local name=$1 exe=$2; shift 2
  [ -x "$exe" ] || { echo "skip $name ($exe not built)"; return; }
  echo "== $name: $exe $*"
  timeout "$T" "${PIN[@]}" "$exe" "$@" --out "$O/$name.json" > "$O/$name.log" 2>&1 || echo "   $name failed or timed out (see $O/$name.log)"
  tail -n 25 "$O/$name.log"
}
if [[ $WHICH == *gpu* ]]; then
  run lu_gpu           "$B/benchmarks/dense/bench_lu_cuda" "${q[@]}" --min-n 4096 --max-n 16384
  run batched_gpu      "$B/benchmarks/batched/bench_batched_cuda" "${q[@]}"
  run scattering2d_gpu "$B/benchmarks/scattering2d/bench_scattering2d_cuda" "${q[@]}"
  run tlm_gpu          "$B/benchmarks/tlm/bench_tlm_cuda" "${q[@]}"
  run cbfm_gpu         "$B/benchmarks/cbfm/bench_cbfm_cuda" "${q[@]}" --max-n 102400 --max-direct-n 25600
  run fe_iiee_gpu      "$B/benchmarks/fe_iiee/bench_fe_iiee_cuda" "${q[@]}" --max-rhs 100
  run special_gpu      "$B/benchmarks/math/bench_special_functions_cuda" "${q[@]}"
fi
if [[ $WHICH == *cpu* ]]; then
  command -v taskset >/dev/null && PIN=(taskset -c 0,1)
  export OMP_NUM_THREADS=2
  run lu_cpu2      "$B/benchmarks/dense/bench_lu" --quick
  run tlm_cpu2     "$B/benchmarks/tlm/bench_tlm" --quick
  run batched_cpu2 "$B/benchmarks/batched/bench_batched" --quick
  run fe_iiee_cpu2 "$B/benchmarks/fe_iiee/bench_fe_iiee" --quick --threads 2
fi
ls "$O"/*.json >/dev/null 2>&1 && python3 scripts/summarize_bench.py "$O"/*.json
