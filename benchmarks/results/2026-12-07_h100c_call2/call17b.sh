#!/usr/bin/env bash
# For the next session's second device call: the hack corpus on the GPU alone, then the overhead with the new checks
# on and off on the same machine, then their cost on a microsecond, a 1 ms and a 100 ms task.
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site || exit 1
export LITELLM_LOCAL_MODEL_COST_MAP=True WANDB_MODE=disabled PYTHONUNBUFFERED=1 MAX_JOBS=2
S=$OUT/steps.log; echo "tree: $(cat .dev/tree 2>/dev/null)" >> $S
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; } >> $S 2>&1
step() { local name=$1 limit=$2; shift 2; local t0=$(date +%s); timeout $limit "$@" > $OUT/$name.log 2>&1; echo "$name rc=$? $(( $(date +%s)-t0 ))s" >> $S; }
B="python3 benchmarks/eval_bench.py --cache /tmp/ebc"
CUDAFORGE_THREAT_THREADS=6 step corpus 270 python3 -m pytest -q -s -rf -p no:cacheprovider tests/test_guards.py -k runtime_verdicts_of_the_corpus_on_a_gpu
step overhead 90 $B --out $OUT/eb --parts overhead --ready-only --overhead-repeats 5
step overhead_off 90 $B --out $OUT/eb --parts overhead --ready-only --overhead-repeats 5 --set 'hidden_inputs=[]' --set vary_parameters=false --set fp64_reference=false --tag off
left=$(( 585 - SECONDS ))
step new_checks $left $B --out $OUT/eb --parts new_checks --overhead-repeats 2
cd $OUT && tar czf logs.tgz *.log 2>/dev/null; cat steps.log; grep -h "overhead (\|new checks" *.log | cut -c1-300; for f in *.log; do [ $f = steps.log ] || rm -f $f; done
