#!/usr/bin/env bash
# Device call A of 2026-12-07 (fifteenth session): the planted-fault benchmark on a GPU (issue 52).
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site || exit 1
export LITELLM_LOCAL_MODEL_COST_MAP=True WANDB_MODE=disabled PYTHONUNBUFFERED=1 MAX_JOBS=2
S=$OUT/steps.log; echo "tree $(git rev-parse --short HEAD 2>/dev/null) $(git status --short | wc -l) changed" >> $S
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; python3 -c "import torch, triton; print(torch.__version__, triton.__version__)"; } >> $S 2>&1
T="--set timing_trials=10 --set timing_min_trials=5 --set warmup=3 --set launch_inclusive_trials=0 --set precision_probe=false"
t0=$(date +%s); timeout 250 python3 benchmarks/faults/run.py --out $OUT/triton --language triton --per-operator 2 --jobs 6 --protocols default,kernelbench $T > $OUT/triton.log 2>&1; echo "triton rc=$? $(( $(date +%s)-t0 ))s" >> $S
t0=$(date +%s); timeout 330 python3 benchmarks/faults/run.py --out $OUT/cuda --language cuda --per-operator 1 --jobs 8 --protocols default,kernelbench $T > $OUT/cuda.log 2>&1; echo "cuda rc=$? $(( $(date +%s)-t0 ))s" >> $S
cd $OUT && tar czf logs.tgz triton.log cuda.log 2>/dev/null; rm -f triton.log cuda.log; ls -la $OUT $OUT/* >> $S
