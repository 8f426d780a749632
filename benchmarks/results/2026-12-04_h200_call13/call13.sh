#!/bin/bash
# device call 13 of 2026-12-04 (issue 34, fifth session): the sixth red-team round's record of the timed calls (copy
# and fill kernels told apart by kineto's names, markers/stream/own kernels learned in the probe, kernels between
# calls charged to the call before, one sorted pass) on CUPTI: the full ladder with the fused rung, then the stream
# entries of the threat corpus.
export LITELLM_LOCAL_MODEL_COST_MAP=True WANDB_MODE=disabled PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
{ date -u; git log -1 --format=%H 2>/dev/null; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv; } > $OUT/env.txt 2>&1
run() { local name=$1 limit=$2; shift 2; local s=$(date +%s); timeout $limit "$@" > $OUT/$name.log 2>&1; echo "$name rc=$? $(( $(date +%s)-s ))s" >> $OUT/summary.txt; }
run ladder 340 python3 benchmarks/timing_ladder.py --out $OUT/ladder
run corpus 170 python3 benchmarks/hacks/run_corpus.py --device cuda --out $OUT/corpus.json --only \
  hack_unnamed_side_stream,hack_side_stream_after_start,legit_joined_side_stream,hack_side_stream_hidden,hack_hidden_stream_crosscheck,legit_graph_replay
cat $OUT/summary.txt
for f in ladder corpus; do echo "== $f"; grep -E "^\||as expected|verdicts|Error|Traceback" $OUT/$f.log | tail -n 45; done
