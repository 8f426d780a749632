#!/bin/bash
# device call 1 (2026-12-02): what b71533c changed, on the GPU
#  1. the whole threat corpus on CUDA (the two timing hacks with the two-call cross-check), 4 entries at a time,
#     with the integrity checks (package, run directory, build cache unchanged; no survivors)
#  2. eval_bench overhead alone on the GPU, with the Triton cache carried and the correctness breakdown
#  3. the guards' corpus on the GPU (hacks and legitimate kernels), 4 at a time, with the time left
G=/tmp/g; mkdir -p $G; export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD CUDAFORGE_THREAT_THREADS=4
(while sleep 30; do tar czf $OUT/call1.tgz -C $G . 2>/dev/null; done) & TAR=$!
timeout 250 python3 -m pytest -s -m gpu -v -rA -p no:cacheprovider \
  "tests/test_sandbox.py::test_the_whole_threat_corpus_on_a_gpu" > $G/threats.log 2>&1
echo "exit $? at $SECONDS s" >> $G/threats.log
pkill -f candidate_worker; sleep 1
timeout 120 python3 benchmarks/eval_bench.py --out $G/evalbench --cache /tmp/eb --parts overhead --tag sandbox > $G/evalbench.log 2>&1
echo "exit $? at $SECONDS s" >> $G/evalbench.log
timeout $((570 - SECONDS)) python3 -m pytest -s -m gpu -v -rA -p no:cacheprovider --durations=0 \
  "tests/test_guards.py::test_runtime_verdicts_of_the_corpus_on_a_gpu" > $G/guards.log 2>&1
echo "exit $? at $SECONDS s" >> $G/guards.log
nvidia-smi > $G/nvidia-smi.txt 2>&1
kill $TAR; tar czf $OUT/call1.tgz -C $G .
tail -5 $G/threats.log $G/evalbench.log; tail -3 $G/guards.log
