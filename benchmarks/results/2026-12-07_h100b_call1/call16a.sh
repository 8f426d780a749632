#!/usr/bin/env bash
# Device call A of 2026-12-07 (sixteenth session): where the overhead goes (profile), the overhead as it is and with
# three plain correctness trials, what the new checks cost on a microsecond, a 1 ms and a 100 ms task; then the
# threat corpus alone.
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site || exit 1
export LITELLM_LOCAL_MODEL_COST_MAP=True WANDB_MODE=disabled PYTHONUNBUFFERED=1 MAX_JOBS=2
S=$OUT/steps.log; echo "tree: $(cat .dev/tree 2>/dev/null)" >> $S
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; } >> $S 2>&1
B="python3 benchmarks/eval_bench.py --cache /tmp/ebc"
step() { local name=$1 limit=$2; shift 2; local t0=$(date +%s); timeout $limit "$@" > $OUT/$name.log 2>&1; echo "$name rc=$? $(( $(date +%s)-t0 ))s" >> $S; }
step overhead 100 $B --out $OUT/eb --parts overhead --ready-only --overhead-repeats 5
step overhead_t3 90 $B --out $OUT/eb --parts overhead --ready-only --overhead-repeats 5 --set correctness_trials=3 --tag t3
step profile 90 $B --out $OUT/eb --parts overhead --ready-only --overhead-repeats 3 --profile /tmp/prof --tag profile
step new_checks 170 $B --out $OUT/eb --parts new_checks --overhead-repeats 3
left=$(( 585 - SECONDS ))
CUDAFORGE_THREAT_THREADS=6 step threats $left python3 -m pytest -v -s -rA -p no:cacheprovider tests/test_sandbox.py::test_the_whole_threat_corpus_on_a_gpu
cd $OUT && tar czf logs.tgz *.log 2>/dev/null; for f in *.log; do [ $f = steps.log ] || rm -f $f; done; ls -la $OUT $OUT/eb >> $S
