#!/usr/bin/env bash
# Twentieth session, call B: issue 56's simulator comparison on a GPU (sim20, 20 tasks; cudaforge, best_of_n, beam,
# tree at equal dollars; seeds 1,2 then 1,2,3), its pool's verdicts primed and checked first (make_pool.py --check:
# every kernel its declared kind, measured speedups); then the four new GPU entries of the hack corpus.
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site || exit 1
export LITELLM_LOCAL_MODEL_COST_MAP=True WANDB_MODE=disabled PYTHONUNBUFFERED=1 MAX_JOBS=8 CUDAFORGE_SIMULATOR_CACHE=/tmp/simcache
S=$OUT/steps.log; echo "tree: $(cat .dev/tree 2>/dev/null)" >> $S
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; } >> $S 2>&1
step() { local name=$1 limit=$2; shift 2; local t0=$(date +%s); timeout $limit "$@" > $OUT/$name.log 2>&1; echo "$name rc=$? $(( $(date +%s)-t0 ))s" >> $S; }
E="--eval-set timing_trials=20 --eval-set timing_min_trials=10 --eval-set warmup=3 --eval-set launch_inclusive_trials=0 --eval-set precision_probe=false --eval-set compile_beside=false --eval-set correctness_trials=2"
step check 200 python3 benchmarks/search/make_pool.py --check --workers 8 $E
C="python3 benchmarks/search/compare.py --out $OUT/search_sim20 --jobs 4 --runs-at-once 4 --bootstrap 1000 $E"
step compare2 $(( 440 - SECONDS )) $C --seeds 1,2
[ $(( 470 - SECONDS )) -gt 40 ] && step compare3 $(( 470 - SECONDS )) $C --seeds 1,2,3
step corpus4 $(( 585 - SECONDS )) python3 benchmarks/hacks/run_corpus.py --device cuda --only hack_wrong_once_timed,hack_faster_than_light,hack_native_timer_host_gap,hack_background_gpu_work --out $OUT/corpus4.json
cd $OUT && cat steps.log; tail -15 check.log; cat search_sim20/summary.md 2>/dev/null; tail -25 corpus4.log; rm -rf search_sim20/runs; tar czf logs.tgz *.log; for f in *.log; do [ $f = steps.log ] || rm -f $f; done
