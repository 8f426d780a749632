#!/bin/bash
# device call 8 of 2026-12-03 (run from the repository root, carrying .dev/carry_tl: tilelang 0.1.15 with
# apache-tvm-ffi, torch-c-dlpack-ext and z3-solver, unpacked from their wheels and packed as tar.xz):
#  1. TileLang end to end: benchmarks/languages_gpu.py and its hack-corpus entries
#  2. the GPU check owed by issue 18's refactors: tests/test_gpu_eval.py
G=$OUT; export PYTHONUNBUFFERED=1 LITELLM_LOCAL_MODEL_COST_MAP=True WANDB_MODE=disabled
mkdir -p /tmp/site && tar -xJf .dev/carry_tl/tl.tar.xz -C /tmp/site || exit 1
export PYTHONPATH=$PWD:/tmp/site
{ git log --oneline -1; nvidia-smi --query-gpu=name,driver_version --format=csv; which nvcc; nvcc --version | tail -2;
  python3 -c "import tilelang, torch; print('tilelang', tilelang.__version__, 'torch', torch.__version__, torch.version.cuda)"; } > $G/env.txt 2>&1
S=$SECONDS
timeout 300 python3 benchmarks/languages_gpu.py --language tilelang --out $G/tilelang.json > $G/tilelang.log 2>&1
echo "tilelang candidates: exit $? in $((SECONDS - S)) s" >> $G/steps.log; S=$SECONDS
timeout 120 python3 benchmarks/hacks/run_corpus.py --device cuda --out $G/tilelang_corpus.json \
  --only hack_tilelang_passthrough,hack_tilelang_never_runs > $G/tilelang_corpus.log 2>&1
echo "tilelang corpus: exit $? in $((SECONDS - S)) s" >> $G/steps.log; S=$SECONDS
CUDAFORGE_TEST_LOG=$G/gpu_eval_outcomes.log timeout $((590 - SECONDS)) python3 -m pytest -m gpu -v -rA -p no:cacheprovider \
  --durations=0 tests/test_gpu_eval.py > $G/gpu_eval.log 2>&1
echo "gpu_eval: exit $? in $((SECONDS - S)) s" >> $G/steps.log
cat $G/steps.log; tail -n 12 $G/tilelang.log; tail -n 6 $G/tilelang_corpus.log; grep -E "passed|failed" $G/gpu_eval.log | tail -3
