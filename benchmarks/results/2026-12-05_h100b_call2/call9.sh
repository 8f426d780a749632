#!/usr/bin/env bash
# 2026-12-05 (twelfth session) device call 2: the overhead with the launch-inclusive series as the warm-up and the
# one-pass bit check; GPU tests of both; the threat corpus and the whole runtime hack corpus, six at a time.
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site || exit 1
export LITELLM_LOCAL_MODEL_COST_MAP=True WANDB_MODE=disabled PYTHONUNBUFFERED=1
S=$OUT/steps.log
{ date -u; git log --oneline -1 2>/dev/null; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; } >> $S 2>&1
t0=$(date +%s)
left() { echo $(( $1 - ($(date +%s)-t0) )); }
timeout 130 python3 benchmarks/eval_bench.py --out /tmp/eb_out --cache /tmp/eb --parts overhead --tag call9 --profile /tmp/prof --ready-only --overhead-repeats 5 > $OUT/eval_bench.log 2>&1; echo "eval_bench rc=$? $(( $(date +%s)-t0 ))s" >> $S
cp /tmp/eb_out/*.json $OUT/ 2>/dev/null; cp /tmp/eb_out/*profile*.txt $OUT/profile.txt 2>/dev/null
timeout $(left 230) python3 -m pytest -v -rA -p no:cacheprovider -m "gpu or slow or not gpu" tests/test_fastclose.py::test_the_word_comparison_on_a_gpu_agrees_with_torch_equal tests/test_fastclose.py::test_the_screen_on_a_gpu_agrees_with_isclose "tests/test_gpu_eval.py::test_realistic_candidates_are_correct_and_timed" -k "word or screen or ReLU" > $OUT/tests.log 2>&1; echo "gpu tests rc=$? $(( $(date +%s)-t0 ))s" >> $S
CUDAFORGE_THREAT_THREADS=6 timeout $(left 360) python3 -m pytest -v -s -rA -p no:cacheprovider tests/test_sandbox.py::test_the_whole_threat_corpus_on_a_gpu > $OUT/threats.log 2>&1; echo "threat corpus rc=$? $(( $(date +%s)-t0 ))s" >> $S
CUDAFORGE_THREAT_THREADS=6 timeout $(left 588) python3 -m pytest -q -s -rf -p no:cacheprovider tests/test_guards.py -k runtime_verdicts_of_the_corpus_on_a_gpu > $OUT/corpus.log 2>&1; echo "hack corpus rc=$? $(( $(date +%s)-t0 ))s" >> $S
