#!/bin/bash
# device call 12 of 2026-12-03 (run from the repository root): the GPU checks owed by issue 18's last changes
#  1. the threat corpus (benchmarks/hacks/run_corpus.py), hack_kernel_named_like_torch among it (NEVER_OWN)
#  2. tests/test_gpu_eval.py (the GPU evaluation, the lighter binding header in every CUDA build)
#  3. the single-H200 figures: benchmarks/eval_bench.py --parts precision,overhead
G=$OUT; export PYTHONUNBUFFERED=1 LITELLM_LOCAL_MODEL_COST_MAP=True WANDB_MODE=disabled
{ git log --oneline -1; nvidia-smi --query-gpu=name,driver_version --format=csv; nproc; } > $G/env.txt 2>&1
S=$SECONDS
timeout 170 python3 benchmarks/hacks/run_corpus.py --device cuda --out $G/threats.json > $G/threats.log 2>&1
echo "threats: exit $? in $((SECONDS - S)) s" >> $G/steps.log; S=$SECONDS
CUDAFORGE_TEST_LOG=$G/gpu_eval_outcomes.log timeout 240 python3 -m pytest -m gpu -v -rA -p no:cacheprovider \
  --durations=0 tests/test_gpu_eval.py > $G/gpu_eval.log 2>&1
echo "gpu_eval: exit $? in $((SECONDS - S)) s" >> $G/steps.log; S=$SECONDS
timeout $((585 - SECONDS)) python3 benchmarks/eval_bench.py --out $G --cache /tmp/eb --parts precision,overhead --tag call12 > $G/eval_bench.log 2>&1
echo "eval_bench: exit $? in $((SECONDS - S)) s" >> $G/steps.log
cat $G/steps.log; tail -n 8 $G/threats.log; grep -E "passed|failed" $G/gpu_eval.log | tail -3; tail -n 25 $G/eval_bench.log
