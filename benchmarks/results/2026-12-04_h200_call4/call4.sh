#!/bin/bash
# device call 4 of 2026-12-04 (carrying .dev/carry_tl as in calls 2-3): the review fixes (a source keeps and seeds
# only its own languages' JIT caches; prepared only when its store holds kernels) through the TileLang GPU test
export LITELLM_LOCAL_MODEL_COST_MAP=True WANDB_MODE=disabled PYTHONUNBUFFERED=1
mkdir -p /tmp/site && tar -xJf .dev/carry_tl/tl.tar.xz -C /tmp/site || exit 1
export PYTHONPATH=$PWD:/tmp/site
date -u > $OUT/env.txt
s=$(date +%s); timeout 150 python3 -m pytest -q -rA -p no:cacheprovider tests/test_gpu_eval.py -k "tilelang_kernels_compile_ahead" > $OUT/t_gpu.log 2>&1
echo "t_gpu rc=$? $(( $(date +%s)-s ))s" | tee $OUT/summary.txt
grep -E "passed|failed|Error" $OUT/t_gpu.log | tail -n 8
