#!/bin/bash
# device call 1 of 2026-12-03 (the working tree as sent; .dev/kb = KernelBench 423217d levels 1-3, .whl = the agent
# stack's wheels without Ray, whose wheel does not fit the transfer). Issue 17's GPU evidence:
#  1. the full KernelBench audit (levels 1-3, 250 tasks) alone on the GPU, with its report (target: at most 5 min)
#  2. a campaign over the 30-task main suite, scripted agents (benchmarks/campaign_main.py), 4 tasks at a time,
#     killed with SIGKILL mid-way, survivors counted, resumed with the same command, then its report and plan;
#     beside it, the profiler's GPU tests (sandboxed ncu)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl > /tmp/pip.log 2>&1 || { tail /tmp/pip.log; exit 1; }
G=/tmp/g; mkdir -p $G; export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD:/tmp/site LITELLM_LOCAL_MODEL_COST_MAP=True WANDB_MODE=disabled
CF="python3 -m cudaforge.cli"
(while sleep 20; do tar czf $OUT/call1.tgz -C $G . 2>/dev/null; done) & TAR=$!
{ git status --short; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv; nproc; } > $G/tree.txt 2>&1
S=$SECONDS
timeout 420 $CF tasks audit suite=kernelbench suite.root=$PWD/.dev/kb/KernelBench output=$G/kernelbench_audit.json > $G/audit.log 2>&1
echo "audit: exit $? in $((SECONDS - S)) s" | tee -a $G/steps.log
pkill -f audit_child; sleep 1
CUDAFORGE_TEST_LOG=$G/profile_outcomes.log timeout 420 python3 -m pytest -m gpu -v -rA -p no:cacheprovider --durations=0 tests/test_profile.py > $G/profile.log 2>&1 &
PROF=$!
CAMP="python3 benchmarks/campaign_main.py $G/campaign strategy.max_rounds=2 profile.enabled=false concurrency=4"
S=$SECONDS
$CAMP > $G/campaign_1.log 2>&1 & P=$!
while kill -0 $P 2>/dev/null && [ $(cat $G/campaign/results.jsonl 2>/dev/null | wc -l) -lt 12 ] && [ $((SECONDS - S)) -lt 150 ]; do sleep 0.5; done
kill -9 $P; wait $P 2>/dev/null
echo "campaign killed after $((SECONDS - S)) s with $(wc -l < $G/campaign/results.jsonl) results" | tee -a $G/steps.log
sleep 5; { echo "processes left 5 s after the kill:"; ps -eo pid,ppid,etimes,cmd | grep -E "cudaforge|candidate_worker|verifier" | grep -v -E "grep|pytest|test_profile"; } >> $G/steps.log
S=$SECONDS
timeout $((560 - SECONDS)) $CAMP > $G/campaign_2.log 2>&1
echo "campaign resumed: exit $? in $((SECONDS - S)) s, $(wc -l < $G/campaign/results.jsonl) results" | tee -a $G/steps.log
$CF report $G/campaign report.out_dir=$G/campaign_report > $G/report.log 2>&1; echo "report: exit $?" >> $G/steps.log
$CF plan $G/campaign > $G/plan.log 2>&1; echo "plan: exit $?" >> $G/steps.log
wait $PROF; echo "profile tests: exit $? at $SECONDS s" >> $G/steps.log
kill $TAR; tar czf $OUT/call1.tgz -C $G .
cat $G/steps.log; tail -n 3 $G/audit.log $G/campaign_2.log; tail -n 12 $G/profile.log
