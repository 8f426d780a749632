#!/bin/bash
# device call 2 of 2026-12-04 (carrying .dev/carry_tl: tilelang 0.1.15, apache-tvm-ffi 0.1.12, torch-c-dlpack-ext
# 0.1.5, z3-solver 4.15.4, ml-dtypes 0.7.0, unpacked from their cp312 wheels as tar.xz): TileLang kernels compiled
# ahead (issue 18), the Triton path again after the hook moved around the model's construction
export LITELLM_LOCAL_MODEL_COST_MAP=True WANDB_MODE=disabled PYTHONUNBUFFERED=1
mkdir -p /tmp/site && tar -xJf .dev/carry_tl/tl.tar.xz -C /tmp/site || exit 1
export PYTHONPATH=$PWD:/tmp/site
{ date -u; git log --oneline -1; nvidia-smi --query-gpu=name,driver_version --format=csv; nproc;
  python3 -c "import torch, triton, tilelang; print('torch', torch.__version__, 'triton', triton.__version__, 'tilelang', tilelang.__version__)"; } > $OUT/env.txt 2>&1
run() { local name=$1 limit=$2; shift 2; local s=$(date +%s); timeout $limit "$@" > $OUT/$name.log 2>&1; echo "$name rc=$? $(( $(date +%s)-s ))s" >> $OUT/summary.txt; }
run t_gpu 200 python3 -m pytest -q -rA -p no:cacheprovider tests/test_gpu_eval.py -k "compile_ahead or tilelang"
run bench 220 python3 benchmarks/jit_ahead_bench.py --out $OUT/jit --languages tilelang --modes off,pool
run corpus 90 python3 benchmarks/hacks/run_corpus.py --device cuda --only hack_tilelang_passthrough,hack_tilelang_never_runs &
run t_pre 90 python3 -m pytest -q -rA -p no:cacheprovider tests/test_jit_prebuild_tilelang.py
wait
cat $OUT/summary.txt
for f in t_gpu t_pre corpus; do echo "== $f"; grep -E "passed|failed|Error|SKIP|ok" $OUT/$f.log | tail -n 8; done
cat $OUT/jit/jit_ahead.md 2>/dev/null || tail -n 30 $OUT/bench.log
