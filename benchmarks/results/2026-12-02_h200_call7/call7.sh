#!/bin/bash
# device call 7 (2026-12-02, a new session; the working tree as sent). After call 6: the cross-check's path overhead
# is the larger of the reference's and the worker's own exchange, calibrated before the candidate loads; the
# sandboxed profiler gets the trusted side's prebuilt libraries by build key.
#  1. eval_bench overhead (target: at most 2.64 s per candidate, 8594b01's 2.14 s + 0.5 s)
#  2. the shipped kernels under both protocols, with speedups (issue 15), 6 evaluations at a time; the corpus
#     entries' verdicts under ours checked against their declarations (the guards' corpus on the GPU)
#  3. the profiler's GPU tests (sandboxed ncu, delivered libraries)
G=/tmp/g; mkdir -p $G; export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
(while sleep 20; do tar czf $OUT/call7.tgz -C $G . 2>/dev/null; done) & TAR=$!
git status --short > $G/tree.txt 2>&1; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv >> $G/tree.txt 2>&1
timeout 130 python3 benchmarks/eval_bench.py --out $G/evalbench --cache /tmp/eb --parts overhead --tag call7 > $G/evalbench.log 2>&1
echo "exit $? at $SECONDS s" >> $G/evalbench.log
pkill -f candidate_worker; sleep 1
timeout 280 python3 benchmarks/protocol_compare.py --out $G/protocols --device cuda --jobs 6 > $G/protocols.log 2>&1
echo "exit $? at $SECONDS s" >> $G/protocols.log
pkill -f candidate_worker; sleep 1
CUDAFORGE_TEST_LOG=$G/profile_outcomes.log timeout $((575 - SECONDS)) python3 -m pytest -m gpu -v -rA -p no:cacheprovider \
  --durations=0 tests/test_profile.py > $G/profile.log 2>&1
echo "exit $? at $SECONDS s" >> $G/profile.log
kill $TAR; tar czf $OUT/call7.tgz -C $G .
tail -n 4 $G/evalbench.log $G/protocols.log $G/profile.log
