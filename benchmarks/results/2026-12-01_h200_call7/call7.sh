#!/bin/bash
# device call 7 (2026-12-01, second session), after call 6 found the timing cross-check firing on honest
# microsecond kernels (the reference now runs the worker's path through the arena; two rounds, fastest kept):
#  1. eval_bench overhead, alone on the GPU
#  2. every GPU-marked test, in two lanes side by side (the evaluator's GPU lock serialises their timing):
#     lane 1 the evaluator, the sandbox's whole threat corpus on CUDA, timing, builds; lane 2 the guards' corpus
#     (every hack and legitimate kernel) and the profiler
G=/tmp/g; mkdir -p $G; export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
(while sleep 40; do tar czf $OUT/call7.tgz -C $G . 2>/dev/null; done) & TAR=$!
timeout 110 python3 benchmarks/eval_bench.py --out $G/evalbench --cache /tmp/eb --parts overhead --tag sandbox > $G/evalbench.log 2>&1
echo "exit $? at $SECONDS s" >> $G/evalbench.log
T=$((560 - SECONDS))
CUDAFORGE_TEST_LOG=$G/lane1_outcomes.log timeout $T python3 -m pytest -m gpu -v -rA -p no:cacheprovider --durations=0 \
  tests/test_gpu_eval.py tests/test_sandbox.py tests/test_timing.py tests/test_build.py tests/test_fingerprint.py tests/test_fastclose.py > $G/lane1.log 2>&1 &
L1=$!
CUDAFORGE_TEST_LOG=$G/lane2_outcomes.log timeout $T python3 -m pytest -m gpu -v -rA -p no:cacheprovider --durations=0 \
  tests/test_guards.py tests/test_profile.py > $G/lane2.log 2>&1 &
L2=$!
wait $L1; echo "lane1 exit $? at $SECONDS s" >> $G/lane1.log
wait $L2; echo "lane2 exit $? at $SECONDS s" >> $G/lane2.log
nvidia-smi > $G/nvidia-smi.txt 2>&1
kill $TAR; tar czf $OUT/call7.tgz -C $G .
tail -3 $G/evalbench.log $G/lane1.log $G/lane2.log
