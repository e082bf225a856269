#!/usr/bin/env bash
# Builds emgpu with CUDA for the local GPU, runs every test (CUDA-labelled ones
# on the GPU; CPU ones too, which also checks the local Catch2 version), runs
# compute-sanitizer memcheck + racecheck on the CUDA tests' [sanitize] cases,
# runs the benchmarks, and prints a short summary. Needs no network.
#
#   scripts/gpu-check.sh                 # everything, quick benchmarks
#   BENCH=full scripts/gpu-check.sh      # full-size benchmarks
#   BENCH=none SANITIZE=0 scripts/gpu-check.sh
# Env: BUILD (build dir, default build-gpu), LOGS (default $OUT or BUILD/gpu-check),
#      BENCH=quick|full|none, SANITIZE=1|0, TESTS=regex (ctest -R filter),
#      BENCH_FILTER=regex (which bench_*_cuda to run), JOBS,
#      PTXAS_THREADS (ptxas threads per file, default JOBS/2: the largest test
#      files spend most of their build in ptxas, which then splits by kernel;
#      the SASS is the same instruction for instruction, 192 of 192 kernels of
#      test_batched_lu checked; nvcc's own --split-compile changes code, so not it).
set -uo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build-gpu}
LOGS=${LOGS:-${OUT:-$BUILD/gpu-check}}
BENCH=${BENCH:-quick}
SANITIZE=${SANITIZE:-1}
JOBS=${JOBS:-$(nproc)}
PTXAS_THREADS=${PTXAS_THREADS:-$(( JOBS > 1 ? JOBS / 2 : 1 ))}
mkdir -p "$LOGS"
t0=$(date +%s)
stamp() { echo "[$(( $(date +%s) - t0 ))s] $*"; }

command -v nvidia-smi >/dev/null || { echo "gpu-check: nvidia-smi not found: no NVIDIA GPU here"; exit 2; }
export PATH=/usr/local/cuda/bin:$PATH
gpu=$(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | head -1)
ngpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | wc -l)
cap=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d '.')
stamp "GPU: $gpu (x$ngpu), sm_$cap"
nvidia-smi > "$LOGS/nvidia-smi.txt" 2>&1

gen=(); keep=(-k); command -v ninja >/dev/null && { gen=(-G Ninja); keep=(-k 0); }
stamp "configure"
cmake -S . -B "$BUILD" "${gen[@]}" -DCMAKE_BUILD_TYPE=Release -DEMGPU_ENABLE_CUDA=ON -DEMGPU_CUDA_TEST_CODE=SASS \
  -DCMAKE_CUDA_ARCHITECTURES="${cap:-90}" -DEMGPU_BUILD_BENCHMARKS=ON -DEMGPU_BUILD_EXAMPLES=ON \
  -DCMAKE_CUDA_FLAGS="${CUDAFLAGS:-} -Xptxas --split-compile=$PTXAS_THREADS" > "$LOGS/configure.log" 2>&1 \
  || { tail -30 "$LOGS/configure.log"; echo "gpu-check: configure failed"; exit 1; }
stamp "build (-j$JOBS)"
# Keep going past a failing target so one broken file does not hide every other result.
cmake --build "$BUILD" -j"$JOBS" -- "${keep[@]}" > "$LOGS/build.log" 2>&1
build_rc=$?
[ $build_rc -ne 0 ] && { grep -E "FAILED:|error:" "$LOGS/build.log" | head -40; echo "gpu-check: build FAILED (continuing with what built)"; }

stamp "tests"
filter=(); [ -n "${TESTS:-}" ] && filter=(-R "$TESTS")
ctest --test-dir "$BUILD" "${filter[@]}" --output-on-failure -j4 --timeout 900 > "$LOGS/ctest.log" 2>&1
tests_rc=$?
tail -25 "$LOGS/ctest.log"

san_summary="not run"
if [ "$SANITIZE" = 1 ] && command -v compute-sanitizer >/dev/null; then
  stamp "compute-sanitizer"
  san_fail=0; san_n=0
  for exe in "$BUILD"/tests/*/test_*_cuda; do
    [ -x "$exe" ] || continue
    name=$(basename "$exe")
    # Only the cases tagged [sanitize] (small sizes): the tools slow kernels 10-100x.
    if ! "$exe" --list-tests "[sanitize]" 2>/dev/null | grep -qE "^[1-9][0-9]* (matching )?test case"; then continue; fi
    for tool in memcheck racecheck; do
      san_n=$((san_n + 1))
      if compute-sanitizer --tool "$tool" --error-exitcode 99 --leak-check no "$exe" "[sanitize]" \
          > "$LOGS/sanitizer-$tool-$name.log" 2>&1; then
        echo "  $tool $name: clean"
      else
        echo "  $tool $name: ERRORS (see sanitizer-$tool-$name.log)"; san_fail=$((san_fail + 1))
        tail -15 "$LOGS/sanitizer-$tool-$name.log"
      fi
    done
  done
  san_summary="$((san_n - san_fail))/$san_n clean"
fi

if [ "$BENCH" != none ]; then
  stamp "benchmarks ($BENCH)"
  q=(); [ "$BENCH" = quick ] && q=(--quick)
  for exe in "$BUILD"/benchmarks/*/bench_*_cuda; do
    [ -x "$exe" ] || continue
    name=$(basename "$exe")
    [ -n "${BENCH_FILTER:-}" ] && ! [[ $name =~ $BENCH_FILTER ]] && continue
    stamp "  $name"
    "$exe" "${q[@]}" --out "$LOGS/$name.json" > "$LOGS/$name.log" 2>&1 || echo "  $name FAILED (see $name.log)"
    tail -40 "$LOGS/$name.log"
  done
  # Batches in host memory (batched::multi_gpu) on this GPU and on all of them.
  exe="$BUILD/benchmarks/batched/bench_batched_cuda"
  if [ -x "$exe" ] && { [ -z "${BENCH_FILTER:-}" ] || [[ bench_batched_cuda =~ $BENCH_FILTER ]]; }; then
    stamp "  bench_batched_cuda --only host"
    "$exe" "${q[@]}" --only host --sizes 32 --out "$LOGS/bench_batched_host_cuda.json" \
      > "$LOGS/bench_batched_host_cuda.log" 2>&1 || echo "  bench_batched_cuda --only host FAILED"
    grep -E "host memory|at once" "$LOGS/bench_batched_host_cuda.log" | tail -20
  fi
fi

echo
echo "================ gpu-check summary ================"
echo "GPU:            $gpu (x$ngpu)"
echo "build:          $([ $build_rc -eq 0 ] && echo ok || echo FAILED)"
echo "tests:          $(grep -E 'tests passed|tests failed' "$LOGS/ctest.log" | tail -1)"
grep -E "\(Failed\)|\(SEGFAULT\)|\(Timeout\)|Not Run|\*\*\*Exception" "$LOGS/ctest.log" | sed 's/^/  /' | head -20
echo "sanitizers:     $san_summary"
if ls "$LOGS"/*.json >/dev/null 2>&1; then
  python3 scripts/summarize_bench.py "$LOGS"/*.json 2>/dev/null | head -60
fi
echo "logs in $LOGS; total $(( $(date +%s) - t0 )) s"
[ $build_rc -eq 0 ] && [ $tests_rc -eq 0 ]
