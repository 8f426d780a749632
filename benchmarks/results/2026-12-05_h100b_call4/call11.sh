#!/usr/bin/env bash
# 2026-12-05 (twelfth session) device call 4: every runtime entry of the hack corpus on the GPU, six at a time.
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site || exit 1
export LITELLM_LOCAL_MODEL_COST_MAP=True WANDB_MODE=disabled PYTHONUNBUFFERED=1
S=$OUT/steps.log
{ date -u; git log --oneline -1 2>/dev/null; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; } >> $S 2>&1
t0=$(date +%s)
CUDAFORGE_THREAT_THREADS=6 timeout ${LIMIT:-400} python3 -m pytest -q -s -rf -p no:cacheprovider tests/test_guards.py -k runtime_verdicts_of_the_corpus_on_a_gpu > $OUT/corpus.log 2>&1; echo "hack corpus rc=$? $(( $(date +%s)-t0 ))s" >> $S
