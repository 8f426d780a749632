#!/usr/bin/env bash
# 2026-12-05 (twelfth session) device call 1: the overhead with each evaluation's timed series dumped (where the wall's
# jitter is), the reuse test under the stricter rules, the whole threat corpus six at a time, the build corpus's 50th.
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site || exit 1
export LITELLM_LOCAL_MODEL_COST_MAP=True WANDB_MODE=disabled PYTHONUNBUFFERED=1
S=$OUT/steps.log
{ date -u; git log --oneline -1 2>/dev/null; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; } >> $S 2>&1
t0=$(date +%s)
left() { echo $(( $1 - ($(date +%s)-t0) )); }
timeout 150 python3 benchmarks/eval_bench.py --out /tmp/eb_out --cache /tmp/eb --parts overhead --tag call8 --profile /tmp/prof --ready-only --overhead-repeats 4 > $OUT/eval_bench.log 2>&1; echo "eval_bench rc=$? $(( $(date +%s)-t0 ))s" >> $S
cp /tmp/eb_out/*.json $OUT/ 2>/dev/null; cp /tmp/eb_out/*profile*.txt $OUT/profile.txt 2>/dev/null
timeout 90 python3 -m pytest -v -rA -p no:cacheprovider "tests/test_gpu_eval.py::test_what_is_measured_before_a_candidate_is_reused_by_the_next_of_its_task" > $OUT/tests.log 2>&1; echo "reuse test rc=$? $(( $(date +%s)-t0 ))s" >> $S
CUDAFORGE_THREAT_THREADS=6 timeout $(left 470) python3 -m pytest -v -s -rA -p no:cacheprovider tests/test_sandbox.py::test_the_whole_threat_corpus_on_a_gpu > $OUT/threats.log 2>&1; echo "threat corpus rc=$? $(( $(date +%s)-t0 ))s" >> $S
timeout $(left 585) python3 benchmarks/build_corpus_bench.py --evaluate --jobs 2 --only triton_autotune_row_sum,in_init_row_sum --out /tmp/bc > $OUT/corpus.log 2>&1; echo "build corpus rc=$? $(( $(date +%s)-t0 ))s" >> $S
cp /tmp/bc/build_corpus.md $OUT/ 2>/dev/null
