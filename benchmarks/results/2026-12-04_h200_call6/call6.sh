#!/bin/bash
# device call 6 of 2026-12-04: issue 32's costs. Cold builds of part of the build corpus and the evaluator's overhead
# per candidate, the tree before the wall (5f6fefa, carried as .dev/before: its cudaforge and benchmark scripts)
# against this tree, on one machine, one after the other (after first: it pays the shared precompiled headers).
export LITELLM_LOCAL_MODEL_COST_MAP=True WANDB_MODE=disabled PYTHONUNBUFFERED=1
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv; nproc; } > $OUT/env.txt 2>&1
run() { local name=$1 limit=$2; shift 2; local s=$(date +%s); timeout $limit "$@" > $OUT/$name.log 2>&1; echo "$name rc=$? $(( $(date +%s)-s ))s" >> $OUT/summary.txt; }
ONLY=kernelbench_relu,pybind_relu,in_init_relu,fail_typo
export CUDAFORGE_PCH_DIR=/tmp/pch  # the precompiled headers, shared: both trees make the same ones
PYTHONPATH=$PWD run bc_after1 170 python3 benchmarks/build_corpus_bench.py --out $OUT/bc_after1 --only $ONLY --timeout 120
PYTHONPATH=$PWD/.dev/before run bc_before 100 python3 .dev/before/benchmarks/build_corpus_bench.py --out $OUT/bc_before --only $ONLY --timeout 120
PYTHONPATH=$PWD/.dev/before run eb_before 100 python3 .dev/before/benchmarks/eval_bench.py --out $OUT --cache /tmp/eb0 --parts overhead --tag before
PYTHONPATH=$PWD run eb_after 100 python3 benchmarks/eval_bench.py --out $OUT --cache /tmp/eb1 --parts overhead --tag after
# the L2 persistence entry alone (call 5 ran it four entries at a time: its cross-check did not fire)
PYTHONPATH=$PWD run l2_alone 60 python3 benchmarks/hacks/run_corpus.py --device cuda --only hack_l2_persistence
cat $OUT/summary.txt
for d in bc_after1 bc_before; do echo "== $d"; cat $OUT/$d/build_corpus.md 2>/dev/null | head -20 || tail -n 20 $OUT/$d.log; done
for t in before after; do echo "== eval_bench $t"; tail -n 12 $OUT/eb_$t.log; done
