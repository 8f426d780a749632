#!/bin/bash
# device call 8b: call 8's GPU evaluation and profiler tests ran past their limits with -q (no output); again,
# verbose, side by side, with each test's duration
export LITELLM_LOCAL_MODEL_COST_MAP=True WANDB_MODE=disabled PYTHONUNBUFFERED=1
export PYTHONPATH=$PWD
run() { local name=$1 limit=$2; shift 2; local s=$(date +%s); timeout $limit "$@" > $OUT/$name.log 2>&1; echo "$name rc=$? $(( $(date +%s)-s ))s" >> $OUT/summary.txt; }
P="python3 -m pytest -v -s -rA -p no:cacheprovider --durations=0"
run gpu_eval 420 $P tests/test_gpu_eval.py -k "sandboxed_with_the_arena or segfault or triton_kernels_compile_ahead or repeated_cuda" &
run profile 420 $P -m gpu tests/test_profile.py
wait
cat $OUT/summary.txt
for f in gpu_eval profile; do echo "== $f"; grep -E "PASSED|FAILED|ERROR|passed|failed|s call|s setup" $OUT/$f.log | tail -n 20; done
