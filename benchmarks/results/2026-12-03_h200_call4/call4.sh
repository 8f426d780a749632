#!/bin/bash
# device call 4 of 2026-12-03 (a new session's first; run from the repository root, carrying .whl):
#  1. the whole threat corpus on CUDA, 4 entries at a time: the first GPU run of the timing cross-check's retry
#     (CROSSCHECK_RETRIES: a gap is measured again before the guard fires); every entry its declared verdict
#  2. tests/test_gpu_eval.py's L2-window twin (the cross-check must still fire on it) and the sandboxed-arena test
#  3. in the time left: `cudaforge rescore` of call 2's 30-task campaign under eval=cudaforge_paper, one evaluation
#     at a time, into $OUT/rescore_paper (an interrupted rescore is carried on by the next call)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl > /tmp/pip.log 2>&1 || { tail /tmp/pip.log; exit 1; }
G=$OUT; export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD:/tmp/site LITELLM_LOCAL_MODEL_COST_MAP=True WANDB_MODE=disabled
{ git log --oneline -1; git status --short | head; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv; nproc; } > $G/tree.txt 2>&1
S=$SECONDS
CUDAFORGE_THREAT_THREADS=4 CUDAFORGE_TEST_LOG=$G/threats_outcomes.log timeout 220 python3 -m pytest -s -m gpu -v -rA \
  -p no:cacheprovider "tests/test_sandbox.py::test_the_whole_threat_corpus_on_a_gpu" > $G/threats.log 2>&1
echo "threats: exit $? in $((SECONDS - S)) s" >> $G/steps.log; S=$SECONDS
CUDAFORGE_TEST_LOG=$G/gpu_eval_outcomes.log timeout 150 python3 -m pytest -m gpu -v -rA -p no:cacheprovider --durations=0 \
  "tests/test_gpu_eval.py::test_an_l2_persistence_window_buys_nothing" \
  "tests/test_gpu_eval.py::test_a_gpu_evaluation_is_sandboxed_with_the_arena_on_the_device" > $G/gpu_eval.log 2>&1
echo "gpu_eval: exit $? in $((SECONDS - S)) s" >> $G/steps.log; S=$SECONDS
rm -rf /tmp/campaign && cp -r benchmarks/results/2026-12-03_h200_call2/out/campaign /tmp/campaign
timeout $((585 - SECONDS)) python3 -m cudaforge.cli rescore /tmp/campaign eval=cudaforge_paper \
  hydra.run.dir=$G/rescore_paper > $G/rescore.log 2>&1
echo "rescore: exit $? in $((SECONDS - S)) s, $(cat $G/rescore_paper/rescored.jsonl 2>/dev/null | wc -l) rows" >> $G/steps.log
cat $G/steps.log; tail -n 3 $G/threats.log $G/gpu_eval.log $G/rescore.log
