#!/usr/bin/env bash
# 2026-12-05 device call 4: issue 33's owed GPU checks on e1b4713 (overhead, hand-over, threat corpus and GPU tests
# with the launcher's -s -P, the build corpus evaluated). Writes at most 8 files under $OUT.
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site || exit 1
export LITELLM_LOCAL_MODEL_COST_MAP=True WANDB_MODE=disabled PYTHONUNBUFFERED=1
S=$OUT/steps.log
{ date -u; git log --oneline -1 2>/dev/null; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; python3 -c "import torch, triton; print(torch.__version__, triton.__version__)"; } >> $OUT/steps.log 2>&1
t0=$(date +%s)
echo "eval_bench start $(date -u +%T)" >> $S
timeout 200 python3 benchmarks/eval_bench.py --out /tmp/eb_out --cache /tmp/eb --parts overhead --tag call4 --profile /tmp/prof --ready-only > $OUT/eval_bench.log 2>&1; echo "eval_bench rc=$? $(( $(date +%s)-t0 ))s" >> $S
cp /tmp/eb_out/*.json $OUT/ 2>/dev/null; ls /tmp/prof >> $S 2>&1; cp /tmp/eb_out/*profile*.txt $OUT/profile.txt 2>/dev/null || cp /tmp/prof/*.txt $OUT/profile.txt 2>/dev/null
echo "handover start $(date -u +%T)" >> $S
timeout 60 python3 benchmarks/handover_bench.py --gpu 0 --repeats 5 > $OUT/handover.log 2>&1; echo "handover rc=$? $(( $(date +%s)-t0 ))s" >> $S
echo "tests start $(date -u +%T)" >> $S
timeout 200 python3 -m pytest -q -p no:cacheprovider tests/test_sandbox.py::test_the_whole_threat_corpus_on_a_gpu tests/test_gpu_eval.py tests/test_sandbox.py::test_the_launcher_runs_no_user_site_of_the_home_it_is_given "tests/test_sandbox.py::test_the_launcher_never_imports_from_the_scratch_it_starts_in" > $OUT/tests.log 2>&1; echo "tests rc=$? $(( $(date +%s)-t0 ))s" >> $S
echo "corpus start $(date -u +%T)" >> $S
timeout $(( 560 - ($(date +%s)-t0) )) python3 benchmarks/build_corpus_bench.py --evaluate --jobs 5 --out /tmp/bc > $OUT/corpus.log 2>&1; echo "corpus rc=$? $(( $(date +%s)-t0 ))s" >> $S
cp /tmp/bc/*.md $OUT/ 2>/dev/null; ls /tmp/bc >> $S 2>&1
echo "done $(date -u +%T)" >> $S
