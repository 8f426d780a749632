#!/usr/bin/env bash
# Device call B of 2026-12-07 (fifteenth session): both corpora on the GPU, the planted-fault benchmark (Triton, one
# fault per kernel and operator, eval=default) beside the threat corpus and the GPU test of the new checks, then the
# overhead alone.
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site || exit 1
export LITELLM_LOCAL_MODEL_COST_MAP=True WANDB_MODE=disabled PYTHONUNBUFFERED=1 CUDAFORGE_THREAT_THREADS=6 MAX_JOBS=2
S=$OUT/steps.log; echo "tree: $(cat .dev/tree 2>/dev/null)" >> $S
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; } >> $S 2>&1
t0=$(date +%s); timeout 235 python3 -m pytest -q -s -rf -p no:cacheprovider tests/test_guards.py -k runtime_verdicts_of_the_corpus_on_a_gpu > $OUT/corpus.log 2>&1; echo "corpus rc=$? $(( $(date +%s)-t0 ))s" >> $S
t0=$(date +%s)
timeout 215 python3 -m pytest -v -s -rA -p no:cacheprovider tests/test_sandbox.py::test_the_whole_threat_corpus_on_a_gpu > $OUT/threats.log 2>&1 &
p1=$!
timeout 215 python3 benchmarks/faults/run.py --out $OUT/triton --language triton --per-operator 1 --jobs 6 --protocols default --set timing_trials=10 --set timing_min_trials=5 --set warmup=3 --set launch_inclusive_trials=0 --set precision_probe=false > $OUT/triton.log 2>&1 &
p2=$!
timeout 120 python3 -m pytest -q -rA -p no:cacheprovider tests/test_beyond.py -k gpu > $OUT/beyond.log 2>&1 &
p3=$!
timeout 215 python3 benchmarks/faults/run.py --out $OUT/indep --language cuda --faults benchmarks/faults/independent/cuda.json --no-oracle --jobs 4 --protocols default --set timing_trials=10 --set timing_min_trials=5 --set warmup=3 --set launch_inclusive_trials=0 --set precision_probe=false > $OUT/indep.log 2>&1 &
p4=$!
wait $p1; r1=$?; wait $p2; r2=$?; wait $p3; r3=$?; wait $p4; r4=$?
echo "threats rc=$r1 faults rc=$r2 beyond rc=$r3 indep rc=$r4 $(( $(date +%s)-t0 ))s" >> $S
t0=$(date +%s); timeout 80 python3 benchmarks/eval_bench.py --out /tmp/eb --cache /tmp/ebc --parts overhead --ready-only --overhead-repeats 4 > $OUT/eval_bench.log 2>&1; echo "overhead rc=$? $(( $(date +%s)-t0 ))s" >> $S
cp /tmp/eb/*.json $OUT/ 2>/dev/null
cd $OUT && tar czf logs.tgz corpus.log threats.log triton.log beyond.log indep.log eval_bench.log 2>/dev/null; rm -f corpus.log threats.log triton.log beyond.log indep.log eval_bench.log; ls -la $OUT $OUT/triton $OUT/indep >> $S
