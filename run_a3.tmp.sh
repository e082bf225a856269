export PATH=/usr/local/cuda/bin:$PATH
B=build-gpu
timeout 300 $B/benchmarks/batched/bench_batched_cuda --out $OUT/batched_gpu.json > $OUT/batched_bench.log 2>&1; echo batched rc=$?
grep -vE "^\[bench_batched\]" $OUT/batched_bench.log | head -70
OMP_NUM_THREADS=2 timeout 100 taskset -c 0,1 $B/benchmarks/batched/bench_batched --quick --out $OUT/batched_cpu2.json > $OUT/batched_cpu2.log 2>&1; echo bcpu rc=$?; grep -iE "openmp_over|speedup" $OUT/batched_cpu2.log | head
OMP_NUM_THREADS=2 timeout 100 taskset -c 0,1 $B/benchmarks/tlm/bench_tlm --out $OUT/tlm_cpu2.json > $OUT/tlm_cpu2.log 2>&1; grep -E "serial|openmp" $OUT/tlm_cpu2.log
timeout 100 $B/benchmarks/dense/bench_lu_cuda --min-n 8192 --max-n 16384 --out $OUT/lu_gpu_recheck.json > $OUT/lu.log 2>&1; grep -E "crout_lu |zgetrf" $OUT/lu.log
