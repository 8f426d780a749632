#!/bin/bash
# device call 1 of 2026-12-04: the GPU checks owed since 74ea0e5 (issue 18's Triton pre-build and its review fixes)
export LITELLM_LOCAL_MODEL_COST_MAP=True WANDB_MODE=disabled PYTHONUNBUFFERED=1
export PYTHONPATH=$PWD
{ date -u; git log --oneline -1; nvidia-smi --query-gpu=name,driver_version --format=csv; nproc;
  python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"; } > $OUT/env.txt 2>&1
run() { local name=$1 limit=$2; shift 2; local s=$(date +%s); timeout $limit "$@" > $OUT/$name.log 2>&1; echo "$name rc=$? $(( $(date +%s)-s ))s" >> $OUT/summary.txt; }
# CPU-heavy, untimed: side by side
CUDAFORGE_THREAT_THREADS=4 CUDAFORGE_TEST_LOG=$OUT/threats_outcomes.log run threats 260 python3 -m pytest -s -m gpu -v -rA \
  -p no:cacheprovider "tests/test_sandbox.py::test_the_whole_threat_corpus_on_a_gpu" &
run t_jit_prebuild 250 python3 -m pytest -q -rA -p no:cacheprovider tests/test_jit_prebuild.py
wait
# timed: alone
run t_gpu_eval 130 python3 -m pytest -q -rA -p no:cacheprovider tests/test_gpu_eval.py -k "compile_ahead or l2_persistence"
run jit_bench 160 python3 benchmarks/jit_ahead_bench.py --out $OUT/jit --modes off,pool
cat $OUT/summary.txt
for f in threats t_jit_prebuild t_gpu_eval; do echo "== $f"; grep -E "passed|failed|Error" $OUT/$f.log | tail -n 6; done
cat $OUT/jit/jit_ahead.md 2>/dev/null || tail -n 30 $OUT/jit_bench.log
