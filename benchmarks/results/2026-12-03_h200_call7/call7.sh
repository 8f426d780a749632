#!/bin/bash
# device call 7 of 2026-12-03 (run from the repository root, carrying .dev/carry_cute: nvidia-cutlass-dsl 4.2.1,
# unpacked from its wheel and packed as tar.xz to fit the 64 MiB transfer):
#  1. CuTe DSL end to end: benchmarks/languages_gpu.py evaluates, guards, times and profiles the bundled CuTe DSL
#     candidates; run_corpus.py runs its hack-corpus entries (and two legitimate ones beside them)
#  2. the GPU check owed by issue 18's refactors: the whole threat corpus on CUDA, 4 entries at a time
G=$OUT; export PYTHONUNBUFFERED=1 LITELLM_LOCAL_MODEL_COST_MAP=True WANDB_MODE=disabled
mkdir -p /tmp/site && tar -xJf .dev/carry_cute/cute.tar.xz -C /tmp/site || exit 1
export PYTHONPATH=$PWD:/tmp/site:/tmp/site/nvidia_cutlass_dsl/python_packages
{ git log --oneline -1; nvidia-smi --query-gpu=name,driver_version --format=csv; nproc; python3 -m pip show cuda-bindings 2>/dev/null | head -2;
  python3 -c "import cutlass, torch; print('cutlass', cutlass.__file__, 'torch', torch.__version__, torch.version.cuda)"; } > $G/env.txt 2>&1
S=$SECONDS
timeout 300 python3 benchmarks/languages_gpu.py --language cute_dsl --out $G/cute_dsl.json > $G/cute_dsl.log 2>&1
echo "cute_dsl candidates: exit $? in $((SECONDS - S)) s" >> $G/steps.log; S=$SECONDS
timeout 150 python3 benchmarks/hacks/run_corpus.py --device cuda --out $G/cute_corpus.json \
  --only hack_cute_dsl_passthrough,hack_cute_dsl_never_runs,hack_passthrough,legit_triton_relu > $G/cute_corpus.log 2>&1
echo "cute_dsl corpus: exit $? in $((SECONDS - S)) s" >> $G/steps.log; S=$SECONDS
CUDAFORGE_THREAT_THREADS=4 CUDAFORGE_TEST_LOG=$G/threats_outcomes.log timeout $((590 - SECONDS)) python3 -m pytest -s -m gpu -v -rA \
  -p no:cacheprovider "tests/test_sandbox.py::test_the_whole_threat_corpus_on_a_gpu" > $G/threats.log 2>&1
echo "threats: exit $? in $((SECONDS - S)) s" >> $G/steps.log
cat $G/steps.log; tail -n 12 $G/cute_dsl.log; tail -n 8 $G/cute_corpus.log; tail -n 3 $G/threats.log
