#!/usr/bin/env bash
# Device call 3 of 2026-12-06 (fourteenth session), tree 3525daa: the realistic Softmax candidates of tests/test_gpu_eval.py
# alone (call 2 ran them beside the profiler's tests; the CUDA Softmax case failed and its log did not come back).
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site || exit 1
export LITELLM_LOCAL_MODEL_COST_MAP=True WANDB_MODE=disabled PYTHONUNBUFFERED=1 CUDAFORGE_PCH_DIR=/tmp/cudaforge-pch
S=$OUT/steps.log; echo "tree 3525daa" >> $S
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; } >> $S 2>&1
t0=$(date +%s); timeout 200 python3 -m pytest -m gpu -v -rA --no-header -p no:cacheprovider --durations=0 --timeout=200 tests/test_gpu_eval.py -k "realistic and Softmax" > $OUT/gpu_eval.log 2>&1; echo "gpu_eval rc=$? $(( $(date +%s)-t0 ))s" >> $S
