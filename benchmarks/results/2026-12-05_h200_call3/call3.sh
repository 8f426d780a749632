#!/bin/bash
# device call 3 of 2026-12-05: the overhead per candidate with the verifier profiled (issue 33's 1 s target), then the
# build corpus's candidates that call 2 found wrong (GELU, the sum) or slow (load of files), after their fixes
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site || exit
export LITELLM_LOCAL_MODEL_COST_MAP=True WANDB_MODE=disabled PYTHONUNBUFFERED=1
mkdir -p $OUT/eb $OUT/bc
s=$(date +%s)
timeout 130 python3 benchmarks/eval_bench.py --out $OUT/eb --cache /tmp/eb --parts overhead --tag call3 --profile /tmp/prof > $OUT/eb/eval_bench.log 2>&1
echo "rc $? wall $(( $(date +%s) - s )) s" >> $OUT/eb/eval_bench.log
only=$(for st in kernelbench pybind lazy_forward in_init public_try aliased per_instance load_files cupy_raw triton_autotune; do echo -n "${st}_gelu,${st}_row_sum,"; done)load_files_relu,load_files_scale_add,load_files_softmax
s=$(date +%s)
timeout 255 python3 benchmarks/build_corpus_bench.py --evaluate --jobs 5 --only "$only" --out $OUT/bc > $OUT/bc/build_corpus.log 2>&1
echo "rc $? wall $(( $(date +%s) - s )) s" >> $OUT/bc/build_corpus.log
tail -3 $OUT/eb/eval_bench.log; tail -12 $OUT/bc/build_corpus.log
