#!/bin/bash
# device call 12 of 2026-12-04 (issue 34): the fused rung of the ladder (call 11 ran out of time before it), the honest
# corpus entries, the precision table with the probe that skips identical bits, the profiler tests (verbose)
export LITELLM_LOCAL_MODEL_COST_MAP=True WANDB_MODE=disabled PYTHONUNBUFFERED=1
run() { local name=$1 limit=$2; shift 2; local s=$(date +%s); timeout $limit "$@" > $OUT/$name.log 2>&1; echo "$name rc=$? $(( $(date +%s)-s ))s" >> $OUT/summary.txt; }
PYTHONPATH=$PWD run ladder_fused 100 python3 benchmarks/timing_ladder.py --out $OUT/ladder_fused --sizes ""
PYTHONPATH=$PWD run corpus 120 python3 benchmarks/hacks/run_corpus.py --device cuda --out $OUT/corpus.json --only \
  legit_triton_relu,legit_cuda_relu,legit_triton_matmul_bias_relu,legit_triton_softmax_two_kernels
PYTHONPATH=$PWD run precision 190 python3 benchmarks/precision_table.py --out $OUT/precision
PYTHONPATH=$PWD run profile 150 python3 -m pytest -v -x -p no:cacheprovider -m gpu tests/test_profile.py
cat $OUT/summary.txt
for f in ladder_fused corpus precision; do echo "== $f"; grep -E "^\||as expected|verdicts|Error|Traceback" $OUT/$f.log | tail -n 25; done
grep -E "PASSED|FAILED|ERROR|passed|failed" $OUT/profile.log | tail -n 12
