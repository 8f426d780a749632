#!/bin/bash
# device call 2 of 2026-12-05: issue 33's build corpus (52 candidates) through the evaluator on the H200, 5 at a time
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site || exit
export LITELLM_LOCAL_MODEL_COST_MAP=True WANDB_MODE=disabled PYTHONUNBUFFERED=1
mkdir -p $OUT/bc
s=$(date +%s)
timeout 555 python3 benchmarks/build_corpus_bench.py --evaluate --jobs 5 --out $OUT/bc > $OUT/bc/build_corpus.log 2>&1
echo "rc $? wall $(( $(date +%s) - s )) s" >> $OUT/bc/build_corpus.log
tail -12 $OUT/bc/build_corpus.log
