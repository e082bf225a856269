export PATH=/usr/local/cuda/bin:$PATH
B=build-gpu
s() { n=$1; shift; timeout 120 compute-sanitizer --error-exitcode 99 --leak-check no "$@" > $OUT/san-$n.log 2>&1; echo "san $n rc=$?"; tail -1 $OUT/san-$n.log; }
s fe-tensor-mem --tool memcheck $B/tests/fe_iiee/test_fe_iiee_cuda "[tensor]"
s fe-tensor-race --tool racecheck $B/tests/fe_iiee/test_fe_iiee_cuda "[tensor]"
s fe-mgpu-mem --tool memcheck $B/tests/fe_iiee/test_fe_iiee_cuda "[multi_gpu]"
for t in lu qr svd; do s big-$t --tool memcheck $B/tests/batched/test_batched_${t}_cuda "[sanitize_big]"; done
s bench-batched --tool memcheck $B/benchmarks/batched/bench_batched_cuda --sizes 8,32,64,128 --count 64 --out /tmp/bbm.json
timeout 200 $B/benchmarks/fe_iiee/bench_fe_iiee_cuda --quick --max-rhs 1000 --max-gflop 20000 --float 0 --out $OUT/fe_iiee_gpu_tc.json > $OUT/fe_bench.log 2>&1; echo fe bench rc=$?
grep -E "TFLOP|speedup|multi_gpu|tensor_vs" $OUT/fe_bench.log | head -60
