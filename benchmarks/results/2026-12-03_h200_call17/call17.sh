#!/bin/bash
export LITELLM_LOCAL_MODEL_COST_MAP=True WANDB_MODE=disabled
export PYTHONPATH=$PWD
date -u > $OUT/versions.log
run() { local name=$1 limit=$2; shift 2; local s=$(date +%s); timeout $limit "$@" > $OUT/$name.log 2>&1; echo "$name rc=$? $(( $(date +%s)-s ))s" >> $OUT/summary.txt; }
run t_jit_gpu 100 python3 -m pytest -x -q -p no:cacheprovider tests/test_gpu_eval.py -k compile_ahead
run jit_bench 90 python3 benchmarks/jit_ahead_bench.py --out $OUT/jit --modes compile_phase
run t_jit_cpu 45 python3 -m pytest -x -q -p no:cacheprovider tests/test_jit_prebuild.py
cat $OUT/summary.txt
for f in t_jit_gpu t_jit_cpu; do echo "== $f"; grep -E "Error|passed|failed" $OUT/$f.log | tail -n 6; done
tail -n 12 $OUT/jit_bench.log
