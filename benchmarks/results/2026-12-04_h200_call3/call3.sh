#!/bin/bash
# device call 3 of 2026-12-04 (carrying .dev/carry_tl as in call 2): TileLang compiled ahead again, after the hook
# stopped stubbing torch.cuda (call 2: "No CUDA GPUs are available" in the copy that sees no GPU)
export LITELLM_LOCAL_MODEL_COST_MAP=True WANDB_MODE=disabled PYTHONUNBUFFERED=1
mkdir -p /tmp/site && tar -xJf .dev/carry_tl/tl.tar.xz -C /tmp/site || exit 1
export PYTHONPATH=$PWD:/tmp/site
{ date -u; git log --oneline -1; nvidia-smi --query-gpu=name,driver_version --format=csv; } > $OUT/env.txt 2>&1
run() { local name=$1 limit=$2; shift 2; local s=$(date +%s); timeout $limit "$@" > $OUT/$name.log 2>&1; echo "$name rc=$? $(( $(date +%s)-s ))s" >> $OUT/summary.txt; }
run t_pre 120 python3 -m pytest -q -rA -p no:cacheprovider tests/test_jit_prebuild_tilelang.py &
run t_gpu 150 python3 -m pytest -q -rA -p no:cacheprovider tests/test_gpu_eval.py -k "tilelang_kernels_compile_ahead"
wait
run bench 170 python3 benchmarks/jit_ahead_bench.py --out $OUT/jit --languages tilelang --modes pool
cat $OUT/summary.txt
for f in t_gpu t_pre; do echo "== $f"; grep -E "passed|failed|Error" $OUT/$f.log | tail -n 8; done
cat $OUT/jit/jit_ahead.md 2>/dev/null || tail -n 30 $OUT/bench.log
