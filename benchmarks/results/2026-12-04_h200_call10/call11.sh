#!/bin/bash
# device call 11 of 2026-12-04 (issue 34): call 10 found every side-stream variant rejected by the static concurrency
# guard before the runtime record could see it; the ladder and the corpus entries now set that guard to report. Also
# the profiler tests the fifth red-team round's parsing changes touched.
export LITELLM_LOCAL_MODEL_COST_MAP=True WANDB_MODE=disabled PYTHONUNBUFFERED=1
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv; } > $OUT/env.txt 2>&1
run() { local name=$1 limit=$2; shift 2; local s=$(date +%s); timeout $limit "$@" > $OUT/$name.log 2>&1; echo "$name rc=$? $(( $(date +%s)-s ))s" >> $OUT/summary.txt; }
PYTHONPATH=$PWD run ladder 300 python3 benchmarks/timing_ladder.py --out $OUT/ladder
PYTHONPATH=$PWD run corpus 200 python3 benchmarks/hacks/run_corpus.py --device cuda --out $OUT/corpus.json --only \
  hack_unnamed_side_stream,hack_side_stream_after_start,legit_joined_side_stream,hack_warmup_replay,legit_graph_replay,hack_hidden_stream_crosscheck,hack_side_stream_hidden,legit_triton_relu
PYTHONPATH=$PWD run profile 90 python3 -m pytest -q -x -p no:cacheprovider -m gpu tests/test_profile.py
cat $OUT/summary.txt
for f in ladder corpus; do echo "== $f"; grep -E "^\||as expected|verdicts|Error|Traceback" $OUT/$f.log | tail -n 45; done
tail -n 5 $OUT/profile.log
