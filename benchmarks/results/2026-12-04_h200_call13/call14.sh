#!/bin/bash
# device call 14 of 2026-12-04 (fifth session): what call 13 did not reach: the ladder's 2^28 rung and the fused task,
# and the honest corpus entries
export LITELLM_LOCAL_MODEL_COST_MAP=True WANDB_MODE=disabled PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
run() { local name=$1 limit=$2; shift 2; local s=$(date +%s); timeout $limit "$@" > $OUT/$name.log 2>&1; echo "$name rc=$? $(( $(date +%s)-s ))s" >> $OUT/summary.txt; }
run ladder 130 python3 benchmarks/timing_ladder.py --out $OUT/ladder --sizes 28
run corpus 170 python3 benchmarks/hacks/run_corpus.py --device cuda --out $OUT/corpus.json --only legit_joined_side_stream,legit_graph_replay,legit_triton_relu,legit_cuda_relu,legit_triton_matmul_bias_relu,legit_triton_softmax_two_kernels
