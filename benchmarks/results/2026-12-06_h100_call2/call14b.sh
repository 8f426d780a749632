#!/usr/bin/env bash
# Device call 2 of 2026-12-06 (fourteenth session), tree 3525daa: every GPU-marked test but the two corpora (call 1 ran them).
# The timing tests and the short ones run alone first; then test_gpu_eval.py beside the profiler's tests.
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site || exit 1
export LITELLM_LOCAL_MODEL_COST_MAP=True WANDB_MODE=disabled PYTHONUNBUFFERED=1
S=$OUT/steps.log; echo "tree 3525daa" >> $S
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; } >> $S 2>&1
t0=$(date +%s); timeout 150 python3 scripts/gpu_check.py --out $OUT/a --only fingerprint,tests --step-timeout 140 --select "test_timing or test_fingerprint or test_fastclose or test_build or test_markers" > $OUT/a.log 2>&1; echo "a rc=$? $(( $(date +%s)-t0 ))s" >> $S
t0=$(date +%s)
timeout 420 python3 scripts/gpu_check.py --out $OUT/b1 --only tests --step-timeout 410 --select "test_gpu_eval" > $OUT/b1.log 2>&1 &
p1=$!
timeout 420 python3 scripts/gpu_check.py --out $OUT/b2 --only tests --step-timeout 410 --select "test_profile" > $OUT/b2.log 2>&1 &
p2=$!
wait $p1; r1=$?; wait $p2; r2=$?
echo "b1 rc=$r1 b2 rc=$r2 $(( $(date +%s)-t0 ))s" >> $S
