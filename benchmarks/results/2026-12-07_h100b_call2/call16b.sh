#!/usr/bin/env bash
# Device call B of 2026-12-07 (sixteenth session): the planted-fault benchmark on the GPU, eval=default: our Triton
# faults (the CPU run's faults with its oracle's verdicts, 2026-12-07_cpu), then the independent helper's Triton and
# CUDA faults; then the hack corpus in what is left.
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site || exit 1
export LITELLM_LOCAL_MODEL_COST_MAP=True WANDB_MODE=disabled PYTHONUNBUFFERED=1 MAX_JOBS=2
S=$OUT/steps.log; echo "tree: $(cat .dev/tree 2>/dev/null)" >> $S
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; } >> $S 2>&1
step() { local name=$1 limit=$2; shift 2; local t0=$(date +%s); timeout $limit "$@" > $OUT/$name.log 2>&1; echo "$name rc=$? $(( $(date +%s)-t0 ))s" >> $S; }
F="python3 benchmarks/faults/run.py --no-oracle --protocols default --set timing_trials=10 --set timing_min_trials=5 --set warmup=3 --set launch_inclusive_trials=0 --set precision_probe=false"
step ours 300 $F --out $OUT/ours --language triton --faults .dev/cpu_ours_faults.json --jobs 6
step indep_triton 130 $F --out $OUT/indep_triton --language triton --faults .dev/cpu_indep_faults.json --jobs 6
left=$(( 585 - SECONDS ))
step indep_cuda $left $F --out $OUT/indep_cuda --language cuda --faults benchmarks/faults/independent/cuda.json --jobs 8
cd $OUT && tar czf logs.tgz *.log 2>/dev/null; for f in *.log; do [ $f = steps.log ] || rm -f $f; done; ls -la $OUT $OUT/* >> $S
