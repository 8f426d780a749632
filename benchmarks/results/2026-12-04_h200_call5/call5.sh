#!/bin/bash
# device call 5 of 2026-12-04: issue 32's wall on the GPU (seccomp, the minimal root, the build door, the threat
# corpus, the sandboxed GPU evaluation and Nsight Compute inside the new sandbox)
export LITELLM_LOCAL_MODEL_COST_MAP=True WANDB_MODE=disabled PYTHONUNBUFFERED=1
export PYTHONPATH=$PWD
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv; nproc; id; ls -ld / /root;
  python3 -c "import sys, torch, triton; print(sys.executable, 'torch', torch.__version__, 'triton', triton.__version__)";
  cat /proc/self/cgroup; which ncu nvcc; } > $OUT/env.txt 2>&1
run() { local name=$1 limit=$2; shift 2; local s=$(date +%s); timeout $limit "$@" > $OUT/$name.log 2>&1; echo "$name rc=$? $(( $(date +%s)-s ))s" >> $OUT/summary.txt; }
P="python3 -m pytest -q -rA -p no:cacheprovider"
run unit 150 $P tests/test_seccomp.py tests/test_sandbox.py tests/test_build_door.py -m "not slow and not gpu" &
CUDAFORGE_THREAT_THREADS=4 run threats 250 python3 -m pytest -s -m gpu -v -rA -p no:cacheprovider \
  "tests/test_sandbox.py::test_the_whole_threat_corpus_on_a_gpu"
wait
run profile 130 $P -m gpu tests/test_profile.py
run gpu_eval 190 $P tests/test_gpu_eval.py -k "sandboxed_with_the_arena or segfault or triton_kernels_compile_ahead or repeated_cuda"
cat $OUT/summary.txt
for f in unit threats gpu_eval profile; do echo "== $f"; grep -E "^(PASSED|FAILED|ERROR)|passed|failed|Error" $OUT/$f.log | tail -n 12; done
