#!/usr/bin/env bash
# Nineteenth session, call C: the independent helper's Triton faults on the GPU (eval=default, their own sources), then
# the threat corpus on the GPU (the worker subpackage move and the _Evaluation split touched the sandboxed paths).
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site || exit 1
export LITELLM_LOCAL_MODEL_COST_MAP=True WANDB_MODE=disabled PYTHONUNBUFFERED=1 MAX_JOBS=2
S=$OUT/steps.log; echo "tree: $(cat .dev/tree 2>/dev/null)" >> $S
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; } >> $S 2>&1
step() { local name=$1 limit=$2; shift 2; local t0=$(date +%s); timeout $limit "$@" > $OUT/$name.log 2>&1; echo "$name rc=$? $(( $(date +%s)-t0 ))s" >> $S; }
F="python3 benchmarks/faults/run.py --no-oracle --protocols default --set timing_trials=10 --set timing_min_trials=5 --set warmup=3 --set launch_inclusive_trials=0 --set precision_probe=false"
step indep_triton 380 $F --out $OUT/indep_triton --language triton --faults benchmarks/faults/independent/triton.json --jobs 8
left=$(( 585 - SECONDS ))
CUDAFORGE_THREAT_THREADS=6 step threats $left python3 -m pytest -q -p no:cacheprovider tests/test_sandbox.py::test_the_whole_threat_corpus_on_a_gpu
cd $OUT && tar czf logs.tgz *.log 2>/dev/null; cat steps.log; tail -3 indep_triton.log; tail -3 threats.log; for f in *.log; do [ $f = steps.log ] || rm -f $f; done
