#!/bin/bash
# device call 3 (2026-12-02), after call 2: the cross-check's allowance is now the larger of the slack (0.25 ms) and
# the timing lead (0.5 ms), not the reference path's overhead (too loose on 1.6 GB tasks); the L2 entry declared
# rejected by timing_crosscheck (its stale persisting lines slow its own back-to-back calls: 5.5 ms vs 2.6 ms).
#  lane 1: every test of tests/test_gpu_eval.py (realistic candidates, builds, failures, baselines, the L2 twin)
#  lane 2: the guards' corpus on the GPU, 3 at a time, then the profiler's GPU tests
G=/tmp/g; mkdir -p $G; export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD CUDAFORGE_THREAT_THREADS=3
# only the committed tree: other work in progress in the checkout stays out of this measurement
(git stash -u -q && git log --oneline -1 && git status --short | head) > $G/tree.txt 2>&1
(while sleep 30; do tar czf $OUT/call3.tgz -C $G . 2>/dev/null; done) & TAR=$!
CUDAFORGE_TEST_LOG=$G/lane1_outcomes.log timeout 540 python3 -m pytest -m gpu -v -rA -p no:cacheprovider --durations=0 \
  tests/test_gpu_eval.py > $G/lane1.log 2>&1 &
L1=$!
(timeout 300 python3 -m pytest -s -m gpu -v -rA -p no:cacheprovider \
  "tests/test_guards.py::test_runtime_verdicts_of_the_corpus_on_a_gpu" > $G/guards.log 2>&1
 echo "exit $? at $SECONDS s" >> $G/guards.log
 CUDAFORGE_TEST_LOG=$G/profile_outcomes.log timeout $((540 - SECONDS)) python3 -m pytest -m gpu -v -rA -p no:cacheprovider \
  --durations=0 tests/test_profile.py > $G/profile.log 2>&1
 echo "exit $? at $SECONDS s" >> $G/profile.log) &
L2=$!
wait $L1; echo "lane1 exit $? at $SECONDS s" >> $G/lane1.log
wait $L2
kill $TAR; tar czf $OUT/call3.tgz -C $G .
tail -n 2 $G/lane1.log $G/guards.log $G/profile.log
