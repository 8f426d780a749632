#!/bin/bash
export LITELLM_LOCAL_MODEL_COST_MAP=True WANDB_MODE=disabled
mkdir -p /tmp/site
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl > $OUT/pip.log 2>&1
export PYTHONPATH=$PWD:/tmp/site
date -u > $OUT/versions.log
run() { local name=$1 limit=$2; shift 2; local s=$(date +%s); timeout $limit "$@" > $OUT/$name.log 2>&1; echo "$name rc=$? $(( $(date +%s)-s ))s" >> $OUT/summary.txt; }
run t_jit_cpu 90 python3 -m pytest -x -q -p no:cacheprovider tests/test_jit_prebuild.py
run t_jit_gpu 150 python3 -m pytest -x -q -p no:cacheprovider tests/test_gpu_eval.py -k compile_ahead
run jit_bench 250 python3 benchmarks/jit_ahead_bench.py --out $OUT/jit
run t_owed 90 python3 -m pytest -q -p no:cacheprovider tests/test_gpu_eval.py -k "sandboxed or l2_persistence"
cat $OUT/summary.txt
for f in t_jit_cpu t_jit_gpu t_owed; do echo "== $f"; tail -n 4 $OUT/$f.log; done
cat $OUT/jit/jit_ahead.md 2>/dev/null || tail -n 30 $OUT/jit_bench.log
