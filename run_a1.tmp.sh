export PATH=/usr/local/cuda/bin:$PATH
BENCH=none JOBS=32 LOGS=$OUT/gc timeout 570 scripts/gpu-check.sh > $OUT/gc-out.txt 2>&1; echo gc rc=$?
grep -E "^\[[0-9]+s\]|clean|ERRORS|tests passed|Failed|FAILED|Timeout|build:" $OUT/gc-out.txt | head -60
cd $OUT && tar czf gc.tgz gc && rm -rf gc
