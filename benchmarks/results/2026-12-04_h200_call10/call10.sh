#!/bin/bash
# device call 10 of 2026-12-04 (issue 34): the size ladder (off-stream variants vs honest twins, 2^16..2^28 and a fused
# task), the new corpus entries, the precision table, the honest candidates on the previous commit for overhead,
# and the profiler tests that the fifth red-team round's parsing changes touched
export LITELLM_LOCAL_MODEL_COST_MAP=True WANDB_MODE=disabled PYTHONUNBUFFERED=1
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv; nproc;
  python3 -c "import sys, torch, triton; print(sys.executable, 'torch', torch.__version__, 'triton', triton.__version__)"; } > $OUT/env.txt 2>&1
run() { local name=$1 limit=$2; shift 2; local s=$(date +%s); timeout $limit "$@" > $OUT/$name.log 2>&1; echo "$name rc=$? $(( $(date +%s)-s ))s" >> $OUT/summary.txt; }
PYTHONPATH=$PWD run ladder 240 python3 benchmarks/timing_ladder.py --out $OUT/ladder
PYTHONPATH=$PWD run corpus 150 python3 benchmarks/hacks/run_corpus.py --device cuda --out $OUT/corpus.json --only \
  hack_unnamed_side_stream,hack_side_stream_after_start,legit_joined_side_stream,hack_warmup_replay,hack_graph_dropped_launch,legit_graph_replay,hack_checked_shape_only,hack_cache_by_address,hack_side_stream_hidden,hack_hidden_stream_crosscheck,hack_patched_timer,legit_triton_relu,legit_cuda_relu,legit_triton_matmul_bias_relu,legit_triton_softmax_two_kernels
PYTHONPATH=$PWD run precision 120 python3 benchmarks/precision_table.py --out $OUT/precision
PYTHONPATH=$PWD/.dev/prev run ladder_prev 100 python3 benchmarks/timing_ladder.py --out $OUT/ladder_prev --honest-only --sizes 16,20,24,28
cat $OUT/summary.txt
for f in ladder corpus precision ladder_prev; do echo "== $f"; grep -E "^\||as expected|verdicts|Error|Traceback" $OUT/$f.log | tail -n 45; done
