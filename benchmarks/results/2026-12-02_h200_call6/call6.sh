#!/bin/bash
# device call 6 (2026-12-02), after call 5 found: (1) a standby worker died of SIGSEGV at its first call: seeding the
# source's kept Triton cache rewrote, in place, the driver stub the worker had loaded while warming up (seeding now
# never touches an existing file); (2) under ncu every sandboxed target failed cudaGetDeviceCount (error 304): ncu's
# target is a child of the sandboxed program and may not write its own /proc/<pid> (an unprivileged sandbox uid in its
# own pid namespace may now write what the modes allow it in its private /proc). RmProfilingAdminOnly is 0 there.
#  1. the ncu sandbox probe   2. eval_bench overhead   3. the profiler's GPU tests (sandboxed)   4. the threat corpus
G=/tmp/g; mkdir -p $G; export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD CUDAFORGE_THREAT_THREADS=4
(while sleep 20; do tar czf $OUT/call6.tgz -C $G . 2>/dev/null; done) & TAR=$!
git status --short > $G/tree.txt 2>&1
timeout 70 python3 benchmarks/ncu_sandbox_probe.py --out $G/ncu_probe.json > $G/ncu_probe.log 2>&1
echo "exit $? at $SECONDS s" >> $G/ncu_probe.log
timeout 140 python3 benchmarks/eval_bench.py --out $G/evalbench --cache /tmp/eb --parts overhead --tag call6 > $G/evalbench.log 2>&1
echo "exit $? at $SECONDS s" >> $G/evalbench.log
pkill -f candidate_worker; sleep 1
CUDAFORGE_TEST_LOG=$G/profile_outcomes.log timeout 170 python3 -m pytest -m gpu -v -rA -p no:cacheprovider \
  --durations=0 tests/test_profile.py > $G/profile.log 2>&1
echo "exit $? at $SECONDS s" >> $G/profile.log
timeout $((530 - SECONDS)) python3 -m pytest -s -m gpu -v -rA -p no:cacheprovider \
  "tests/test_sandbox.py::test_the_whole_threat_corpus_on_a_gpu" > $G/threats.log 2>&1
echo "exit $? at $SECONDS s" >> $G/threats.log
kill $TAR; tar czf $OUT/call6.tgz -C $G .
tail -n 3 $G/ncu_probe.log $G/evalbench.log $G/profile.log $G/threats.log
