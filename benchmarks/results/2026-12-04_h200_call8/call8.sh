#!/bin/bash
# device call 8 of 2026-12-04: issue 32's wall on the GPU with the final tree (after both red-team rounds): the
# CPU-side wall tests on the GPU machine, the whole threat corpus, the sandboxed GPU evaluation, ncu in the sandbox
export LITELLM_LOCAL_MODEL_COST_MAP=True WANDB_MODE=disabled PYTHONUNBUFFERED=1
export PYTHONPATH=$PWD
{ date -u; git log -1 --format=%H 2>/dev/null; nvidia-smi --query-gpu=name,driver_version --format=csv; nproc; id;
  python3 -c "import sys, torch, triton; print(sys.executable, 'torch', torch.__version__, 'triton', triton.__version__)";
  which ncu nvcc; } > $OUT/env.txt 2>&1
run() { local name=$1 limit=$2; shift 2; local s=$(date +%s); timeout $limit "$@" > $OUT/$name.log 2>&1; echo "$name rc=$? $(( $(date +%s)-s ))s" >> $OUT/summary.txt; }
P="python3 -m pytest -q -rA -p no:cacheprovider"
run unit 150 $P tests/test_seccomp.py tests/test_sandbox.py tests/test_build_door.py -m "not slow and not gpu" &
CUDAFORGE_THREAT_THREADS=4 run threats 200 python3 -m pytest -s -m gpu -v -rA -p no:cacheprovider \
  "tests/test_sandbox.py::test_the_whole_threat_corpus_on_a_gpu"
wait
run gpu_eval 150 $P tests/test_gpu_eval.py -k "sandboxed_with_the_arena or segfault or triton_kernels_compile_ahead or repeated_cuda"
run profile 200 $P -m gpu tests/test_profile.py
cat $OUT/summary.txt
for f in unit threats gpu_eval profile; do echo "== $f"; grep -E "^(PASSED|FAILED|ERROR)|passed|failed|Error" $OUT/$f.log | tail -n 12; done
grep -E "verdict|expected|->" $OUT/threats.log | tail -n 30
