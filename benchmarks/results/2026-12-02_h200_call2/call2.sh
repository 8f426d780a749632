#!/bin/bash
# device call 2 (2026-12-02), after call 1 found: the carried Triton cache root-owned (the worker runs as uid 65534
# here: PermissionError), the cross-check firing on honest microsecond kernels with 4 evaluations at a time (gaps
# 0.105-0.149 ms against a 0.1 ms slack), the L2 entry's per-call cudaGetDeviceProperties, the threat test's cache
# check counting the build service's own new builds. Fixed: chown to the scratch's owner, slack 0.25 ms or the
# reference path's own overhead when larger, the entry's props queried once, pre-existing cache entries checked.
#  1. eval_bench overhead alone on the GPU (Triton cache carried; correctness breakdown)
#  2. the threat corpus on CUDA with the integrity checks, 4 at a time
#  3. the guards' corpus on the GPU, 4 at a time
G=/tmp/g; mkdir -p $G; export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD CUDAFORGE_THREAT_THREADS=4
(while sleep 30; do tar czf $OUT/call2.tgz -C $G . 2>/dev/null; done) & TAR=$!
timeout 150 python3 benchmarks/eval_bench.py --out $G/evalbench --cache /tmp/eb --parts overhead --tag sandbox > $G/evalbench.log 2>&1
echo "exit $? at $SECONDS s" >> $G/evalbench.log
pkill -f candidate_worker; sleep 1
timeout 170 python3 -m pytest -s -m gpu -v -rA -p no:cacheprovider \
  "tests/test_sandbox.py::test_the_whole_threat_corpus_on_a_gpu" > $G/threats.log 2>&1
echo "exit $? at $SECONDS s" >> $G/threats.log
timeout $((575 - SECONDS)) python3 -m pytest -s -m gpu -v -rA -p no:cacheprovider --durations=0 \
  "tests/test_guards.py::test_runtime_verdicts_of_the_corpus_on_a_gpu" > $G/guards.log 2>&1
echo "exit $? at $SECONDS s" >> $G/guards.log
kill $TAR; tar czf $OUT/call2.tgz -C $G .
tail -2 $G/evalbench.log $G/threats.log $G/guards.log
