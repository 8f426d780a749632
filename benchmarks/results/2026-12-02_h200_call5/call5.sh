#!/bin/bash
# device call 5 (2026-12-02), after call 4 (which ran the session's starting tree: the device copy's git HEAD was stale)
# and helper measurements (Triton's first launch in a fresh worker: triton_key 0.32 s, Gluon 0.085 s, and a silent
# recompile because kept group files named the old scratch path). Now: those paid ahead or fixed, the precision guard
# sampling before widening, mutation checks in place; the profiler runs the candidate (and ncu) in its sandbox.
#  1. the ncu sandbox probe   2. eval_bench overhead   3. the profiler's GPU tests (sandboxed)   4. the threat corpus
G=/tmp/g; mkdir -p $G; export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD CUDAFORGE_THREAT_THREADS=4
(while sleep 30; do tar czf $OUT/call5.tgz -C $G . 2>/dev/null; done) & TAR=$!
(git log --oneline -1; git status --short | head -40) > $G/tree.txt 2>&1
timeout 150 python3 benchmarks/ncu_sandbox_probe.py --out $G/ncu_probe.json > $G/ncu_probe.log 2>&1
echo "exit $? at $SECONDS s" >> $G/ncu_probe.log
timeout 170 python3 benchmarks/eval_bench.py --out $G/evalbench --cache /tmp/eb --parts overhead --tag call5 > $G/evalbench.log 2>&1
echo "exit $? at $SECONDS s" >> $G/evalbench.log
pkill -f candidate_worker; sleep 1
CUDAFORGE_TEST_LOG=$G/profile_outcomes.log timeout 170 python3 -m pytest -m gpu -v -rA -p no:cacheprovider \
  --durations=0 tests/test_profile.py > $G/profile.log 2>&1
echo "exit $? at $SECONDS s" >> $G/profile.log
timeout $((575 - SECONDS)) python3 -m pytest -s -m gpu -v -rA -p no:cacheprovider \
  "tests/test_sandbox.py::test_the_whole_threat_corpus_on_a_gpu" > $G/threats.log 2>&1
echo "exit $? at $SECONDS s" >> $G/threats.log
kill $TAR; tar czf $OUT/call5.tgz -C $G .
tail -n 4 $G/ncu_probe.log $G/evalbench.log $G/profile.log $G/threats.log
