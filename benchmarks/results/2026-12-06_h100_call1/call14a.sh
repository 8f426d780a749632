#!/usr/bin/env bash
# Device call 1 of 2026-12-06 (fourteenth session), tree 3525daa: issue 33's last check (the
# side-stream pair after the worker's sync) and the corpora issue 38 owes, on the final tree.
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site || exit 1
export LITELLM_LOCAL_MODEL_COST_MAP=True WANDB_MODE=disabled PYTHONUNBUFFERED=1 CUDAFORGE_THREAT_THREADS=6
S=$OUT/steps.log; echo "tree 3525daa" >> $S
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; } >> $S 2>&1
t0=$(date +%s); timeout 90 python3 benchmarks/hacks/run_corpus.py --device cuda --only hack_unnamed_side_stream,legit_joined_side_stream --out $OUT/side.json > $OUT/side.log 2>&1; echo "side rc=$? $(( $(date +%s)-t0 ))s" >> $S
t0=$(date +%s); timeout 150 python3 -m pytest -v -s -rA -p no:cacheprovider tests/test_sandbox.py::test_the_whole_threat_corpus_on_a_gpu > $OUT/threats.log 2>&1; echo "threats rc=$? $(( $(date +%s)-t0 ))s" >> $S
t0=$(date +%s); timeout 260 python3 -m pytest -q -s -rf -p no:cacheprovider tests/test_guards.py -k runtime_verdicts_of_the_corpus_on_a_gpu > $OUT/corpus.log 2>&1; echo "corpus rc=$? $(( $(date +%s)-t0 ))s" >> $S
t0=$(date +%s); timeout 80 python3 benchmarks/eval_bench.py --out /tmp/eb --cache /tmp/ebc --parts overhead --ready-only --overhead-repeats 4 > $OUT/eval_bench.log 2>&1; echo "overhead rc=$? $(( $(date +%s)-t0 ))s" >> $S
