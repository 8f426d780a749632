#!/usr/bin/env bash
# For the next session's first device call: the planted-fault benchmark on the GPU, eval=default: our Triton faults
# at one per kernel and operator (.dev/ours_per_op1.json: sources made by the operators, the CPU oracle's verdicts),
# then the independent helper's Triton faults (.dev/cpu_indep_faults.json, the CPU run's verdicts kept).
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site || exit 1
export LITELLM_LOCAL_MODEL_COST_MAP=True WANDB_MODE=disabled PYTHONUNBUFFERED=1 MAX_JOBS=2
S=$OUT/steps.log; echo "tree: $(cat .dev/tree 2>/dev/null)" >> $S
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; } >> $S 2>&1
step() { local name=$1 limit=$2; shift 2; local t0=$(date +%s); timeout $limit "$@" > $OUT/$name.log 2>&1; echo "$name rc=$? $(( $(date +%s)-t0 ))s" >> $S; }
F="python3 benchmarks/faults/run.py --no-oracle --protocols default --set timing_trials=10 --set timing_min_trials=5 --set warmup=3 --set launch_inclusive_trials=0 --set precision_probe=false"
step ours 380 $F --out $OUT/ours --language triton --faults .dev/ours_per_op1.json --jobs 8
left=$(( 585 - SECONDS ))
step indep_triton $left $F --out $OUT/indep_triton --language triton --faults .dev/cpu_indep_faults.json --jobs 8
cd $OUT && tar czf logs.tgz *.log 2>/dev/null; cat steps.log; for f in *.log; do [ $f = steps.log ] || rm -f $f; done
