#!/usr/bin/env bash
# 2026-12-05 (twelfth session) device call 5: the worker syncs after poisoning free memory in a correctness call, so an
# unjoined side stream cannot race the fill; the entry that raced it (hack_unnamed_side_stream) and its honest twin.
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site || exit 1
export LITELLM_LOCAL_MODEL_COST_MAP=True WANDB_MODE=disabled PYTHONUNBUFFERED=1
S=$OUT/steps.log
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; } >> $S 2>&1
t0=$(date +%s)
timeout 95 python3 benchmarks/hacks/run_corpus.py --device cuda --only hack_unnamed_side_stream,legit_joined_side_stream --out $OUT/corpus.json > $OUT/corpus.log 2>&1; echo "run_corpus rc=$? $(( $(date +%s)-t0 ))s" >> $S
