#!/usr/bin/env bash
# 2026-12-05 (eleventh session) device call 3: the overhead again after numpy.ma imported by the standby, the cgroup
# polled every 2 ms at the sandbox's end and no garbage collection inside the timed series; the hand-over.
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site || exit 1
export LITELLM_LOCAL_MODEL_COST_MAP=True WANDB_MODE=disabled PYTHONUNBUFFERED=1
S=$OUT/steps.log
{ date -u; git log --oneline -1 2>/dev/null; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; } >> $S 2>&1
t0=$(date +%s)
timeout 120 python3 benchmarks/eval_bench.py --out /tmp/eb_out --cache /tmp/eb --parts overhead --tag call7 --profile /tmp/prof --ready-only --overhead-repeats 3 > $OUT/eval_bench.log 2>&1; echo "eval_bench rc=$? $(( $(date +%s)-t0 ))s" >> $S
cp /tmp/eb_out/*.json $OUT/ 2>/dev/null; cp /tmp/eb_out/*profile*.txt $OUT/profile.txt 2>/dev/null
timeout $(( 200 - ($(date +%s)-t0) )) python3 benchmarks/handover_bench.py --gpu 0 --repeats 3 > $OUT/handover.log 2>&1; echo "handover rc=$? $(( $(date +%s)-t0 ))s" >> $S
