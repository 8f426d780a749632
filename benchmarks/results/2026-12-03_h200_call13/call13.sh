#!/bin/bash
# device call 13 of 2026-12-03 (run from the repository root): what call 12's time limits cut short
#  1. the threat corpus as the GPU test runs it (tests/test_sandbox.py: every entry, several at once)
#  2. hack_kernel_named_like_torch alone through benchmarks/hacks/run_corpus.py (NEVER_OWN)
#  3. the tests of tests/test_gpu_eval.py that call 12 did not reach
G=$OUT; export PYTHONUNBUFFERED=1 LITELLM_LOCAL_MODEL_COST_MAP=True WANDB_MODE=disabled
{ git log --oneline -1; nvidia-smi --query-gpu=name,driver_version --format=csv; nproc; } > $G/env.txt 2>&1
S=$SECONDS
CUDAFORGE_TEST_LOG=$G/threat_outcomes.log timeout 200 python3 -m pytest -m gpu -v -rA -p no:cacheprovider \
  "tests/test_sandbox.py::test_the_whole_threat_corpus_on_a_gpu" > $G/threats.log 2>&1
echo "threat corpus: exit $? in $((SECONDS - S)) s" >> $G/steps.log; S=$SECONDS
timeout 60 python3 benchmarks/hacks/run_corpus.py --device cuda --only hack_kernel_named_like_torch --out $G/named_like_torch.json > $G/named_like_torch.log 2>&1
echo "named like torch: exit $? in $((SECONDS - S)) s" >> $G/steps.log; S=$SECONDS
CUDAFORGE_TEST_LOG=$G/gpu_eval_outcomes.log timeout $((400 - SECONDS)) python3 -m pytest -m gpu -v -rA -p no:cacheprovider --durations=0 \
  tests/test_gpu_eval.py -k "segfault or compile_baseline or baseline_times or sandboxed or l2_persistence or cute_dsl" > $G/gpu_eval.log 2>&1
echo "gpu_eval rest: exit $? in $((SECONDS - S)) s" >> $G/steps.log
cat $G/steps.log; tail -n 4 $G/threats.log; cat $G/named_like_torch.log; grep -E "PASSED|FAILED|SKIPPED|ERROR|passed|failed" $G/gpu_eval.log | tail -10
