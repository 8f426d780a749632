#!/bin/bash
# device call 9b: call 9's cold builds took 14 s (8.5 s in call 6 on the tree of d8cbb09), every step about 1.5x
# slower, the header build too; the tree before the wall on the same machine, then this tree again, to tell the
# machine from the change (eval_bench's overhead runs of call 9 ran past their 90 s limits, nothing came back)
export LITELLM_LOCAL_MODEL_COST_MAP=True WANDB_MODE=disabled PYTHONUNBUFFERED=1
{ date -u; nproc; cat /proc/loadavg; lscpu | grep -E "Model name|MHz"; } > $OUT/env.txt 2>&1
run() { local name=$1 limit=$2; shift 2; local s=$(date +%s); timeout $limit "$@" > $OUT/$name.log 2>&1; echo "$name rc=$? $(( $(date +%s)-s ))s" >> $OUT/summary.txt; }
ONLY=kernelbench_relu,pybind_relu
export CUDAFORGE_PCH_DIR=/tmp/pch9b
PYTHONPATH=$PWD/.dev/before run bc_before 160 python3 .dev/before/benchmarks/build_corpus_bench.py --out $OUT/bc_before --only $ONLY --timeout 120
PYTHONPATH=$PWD run bc_after 190 python3 benchmarks/build_corpus_bench.py --out $OUT/bc_after --only $ONLY --timeout 120
cat $OUT/summary.txt $OUT/env.txt
for d in bc_before bc_after; do echo "== $d"; grep -E "^\||precompiled|median" $OUT/$d/build_corpus.md 2>/dev/null || tail -n 20 $OUT/$d.log; done
