#!/usr/bin/env bash
# 2026-12-05 (eleventh session) device call 2: the overhead after the reuse of what is measured before the candidate,
# the cheaper seeding and the standby's warm checks; the hand-over; the threat corpus; the new reuse test.
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site || exit 1
export LITELLM_LOCAL_MODEL_COST_MAP=True WANDB_MODE=disabled PYTHONUNBUFFERED=1
S=$OUT/steps.log
{ date -u; git log --oneline -1 2>/dev/null; git diff --stat | tail -1; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; } >> $S 2>&1
t0=$(date +%s)
echo "eval_bench start $(date -u +%T)" >> $S
timeout 170 python3 benchmarks/eval_bench.py --out /tmp/eb_out --cache /tmp/eb --parts overhead --tag call6 --profile /tmp/prof --ready-only --overhead-repeats 5 > $OUT/eval_bench.log 2>&1; echo "eval_bench rc=$? $(( $(date +%s)-t0 ))s" >> $S
cp /tmp/eb_out/*.json $OUT/ 2>/dev/null; cp /tmp/eb_out/*profile*.txt $OUT/profile.txt 2>/dev/null
echo "handover start $(date -u +%T)" >> $S
timeout 60 python3 benchmarks/handover_bench.py --gpu 0 --repeats 5 > $OUT/handover.log 2>&1; echo "handover rc=$? $(( $(date +%s)-t0 ))s" >> $S
echo "tests start $(date -u +%T)" >> $S
timeout $(( 565 - ($(date +%s)-t0) )) python3 -m pytest -v -rA -p no:cacheprovider --durations=10 "tests/test_gpu_eval.py::test_what_is_measured_before_a_candidate_is_reused_by_the_next_of_its_task" tests/test_sandbox.py::test_the_launcher_runs_no_user_site_of_the_home_it_is_given "tests/test_sandbox.py::test_the_launcher_never_imports_from_the_scratch_it_starts_in" tests/test_sandbox.py::test_the_whole_threat_corpus_on_a_gpu > $OUT/tests.log 2>&1; echo "tests rc=$? $(( $(date +%s)-t0 ))s" >> $S
echo "done $(date -u +%T)" >> $S
