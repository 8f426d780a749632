#!/usr/bin/env bash
# Twentieth session, call C (the last device time): hack_background_gpu_work as re-declared (rejected by untimed_work),
# a search that profiles the nodes its Judge advises on with the real ncu (tests/test_search.py), then the sim20
# pool's kernels that call B's check left (make_pool.py --check, tasks 14-20).
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site || exit 1
export LITELLM_LOCAL_MODEL_COST_MAP=True WANDB_MODE=disabled PYTHONUNBUFFERED=1 MAX_JOBS=8 CUDAFORGE_SIMULATOR_CACHE=/tmp/simcache
S=$OUT/steps.log; echo "tree: $(cat .dev/tree 2>/dev/null)" >> $S
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; } >> $S 2>&1
step() { local name=$1 limit=$2; shift 2; local t0=$(date +%s); timeout $limit "$@" > $OUT/$name.log 2>&1; echo "$name rc=$? $(( $(date +%s)-t0 ))s" >> $S; }
step corpus1 90 python3 benchmarks/hacks/run_corpus.py --device cuda --only hack_background_gpu_work --out $OUT/corpus1.json
step search_profile 80 python3 -m pytest -q -rA -p no:cacheprovider tests/test_search.py -k "profiles_the_nodes"
E="--eval-set timing_trials=20 --eval-set timing_min_trials=10 --eval-set warmup=3 --eval-set launch_inclusive_trials=0 --eval-set precision_probe=false --eval-set compile_beside=false --eval-set correctness_trials=2"
step check_rest $(( 235 - SECONDS )) python3 benchmarks/search/make_pool.py --check --workers 8 --tasks 14_Softmax 15_LogSoftmax 16_RMSNorm 17_LayerNorm 18_SumDim 19_MeanDim 20_MaxDim $E
cd $OUT && cat steps.log; tail -8 corpus1.log; grep -E "passed|failed|PASSED|FAILED|profile" search_profile.log | tail -8; tail -45 check_rest.log; tar czf logs.tgz *.log; for f in *.log; do [ $f = steps.log ] || rm -f $f; done
