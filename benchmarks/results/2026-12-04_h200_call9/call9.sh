#!/bin/bash
# device call 9 of 2026-12-04: issue 32's costs with the final tree. Cold builds of part of the build corpus, and
# the evaluator's overhead per candidate alternately before the wall (5f6fefa, carried as .dev/before) and after,
# two rounds, to see whether call 6's back-to-back difference (3.67 s after, 2.25 s before, one run) holds
export LITELLM_LOCAL_MODEL_COST_MAP=True WANDB_MODE=disabled PYTHONUNBUFFERED=1
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv; nproc; } > $OUT/env.txt 2>&1
run() { local name=$1 limit=$2; shift 2; local s=$(date +%s); timeout $limit "$@" > $OUT/$name.log 2>&1; echo "$name rc=$? $(( $(date +%s)-s ))s" >> $OUT/summary.txt; }
ONLY=kernelbench_relu,pybind_relu,in_init_relu,fail_typo
export CUDAFORGE_PCH_DIR=/tmp/pch9
PYTHONPATH=$PWD run bc_after 170 python3 benchmarks/build_corpus_bench.py --out $OUT/bc_after --only $ONLY --timeout 120
for r in 1 2; do
  PYTHONPATH=$PWD/.dev/before run eb_before$r 90 python3 .dev/before/benchmarks/eval_bench.py --out $OUT --cache /tmp/eb0$r --parts overhead --tag before$r
  PYTHONPATH=$PWD run eb_after$r 90 python3 benchmarks/eval_bench.py --out $OUT --cache /tmp/eb1$r --parts overhead --tag after$r
done
cat $OUT/summary.txt
echo "== bc_after"; head -20 $OUT/bc_after/build_corpus.md 2>/dev/null || tail -n 20 $OUT/bc_after.log
for f in $OUT/eb_*.log; do echo "== $f"; grep overhead $f | cut -c1-160; done
