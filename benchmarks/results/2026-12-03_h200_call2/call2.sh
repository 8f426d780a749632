#!/bin/bash
# device call 2 of 2026-12-03 (the working tree as sent: the audit's checks now stay on the GPU, chunked; .dev/kb =
# KernelBench 423217d levels 1-3; .whl = the agent stack's wheels without Ray). After call 1 (the audit did 16
# tasks in its 420 s, copying each output to the host for its checks):
#  1. the full KernelBench audit alone on the GPU, with its report (target: at most 5 min)
#  2. the 30-task main-suite campaign (scripted agents), SIGKILLed after 12 results, every process listed 3 s
#     later, resumed with the same command to its end; its report and plan; beside the resumed run, the
#     profiler's three GPU tests not yet run on a GPU
#  3. in the time left: `cudaforge rescore` of the campaign under eval=cudaforge_paper (rows kept as they finish)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl > /tmp/pip.log 2>&1 || { tail /tmp/pip.log; exit 1; }
G=/tmp/g; mkdir -p $G; export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD:/tmp/site LITELLM_LOCAL_MODEL_COST_MAP=True WANDB_MODE=disabled
CF="python3 -m cudaforge.cli"
(while sleep 20; do tar czf $OUT/call2.tgz -C $G . 2>/dev/null; done) & TAR=$!
{ git status --short; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv; nproc; } > $G/tree.txt 2>&1
S=$SECONDS
timeout 330 $CF tasks audit suite=kernelbench suite.root=$PWD/.dev/kb/KernelBench output=$G/kernelbench_audit.json > $G/audit.log 2>&1
echo "audit: exit $? in $((SECONDS - S)) s" | tee -a $G/steps.log
pkill -f audit_child; sleep 1
CAMP="python3 benchmarks/campaign_main.py $G/campaign strategy.max_rounds=2 profile.enabled=false concurrency=4"
S=$SECONDS
$CAMP > $G/campaign_1.log 2>&1 & P=$!
while kill -0 $P 2>/dev/null && [ $(cat $G/campaign/results.jsonl 2>/dev/null | wc -l) -lt 12 ] && [ $((SECONDS - S)) -lt 120 ]; do sleep 0.5; done
kill -9 $P; wait $P 2>/dev/null
echo "campaign killed after $((SECONDS - S)) s with $(wc -l < $G/campaign/results.jsonl) results" | tee -a $G/steps.log
sleep 3; ps -eo pid,ppid,sid,etimes,args > $G/ps_after_kill.txt
echo "processes 3 s after the kill: $(grep -c -E 'cudaforge|candidate_worker' $G/ps_after_kill.txt) matching cudaforge" >> $G/steps.log
CUDAFORGE_TEST_LOG=$G/profile_outcomes.log timeout 200 python3 -m pytest -m gpu -v -rA -p no:cacheprovider --durations=0 \
  tests/test_profile.py -k "two_kernel_softmax and basic or fallback or spec_sheet" > $G/profile.log 2>&1 &
PROF=$!
S=$SECONDS
timeout $((500 - SECONDS)) $CAMP > $G/campaign_2.log 2>&1
echo "campaign resumed: exit $? in $((SECONDS - S)) s, $(wc -l < $G/campaign/results.jsonl) results" | tee -a $G/steps.log
$CF report $G/campaign report.out_dir=$G/campaign_report > $G/report.log 2>&1; echo "report: exit $?" >> $G/steps.log
$CF plan $G/campaign > $G/plan.log 2>&1; echo "plan: exit $?" >> $G/steps.log
wait $PROF; echo "profile tests: exit $? at $SECONDS s" >> $G/steps.log
S=$SECONDS
timeout $((580 - SECONDS)) $CF rescore $G/campaign eval=cudaforge_paper hydra.run.dir=$G/rescore_paper > $G/rescore.log 2>&1
echo "rescore: exit $? in $((SECONDS - S)) s, $(cat $G/rescore_paper/rescored.jsonl 2>/dev/null | wc -l) rows" >> $G/steps.log
kill $TAR; tar czf $OUT/call2.tgz -C $G .
cat $G/steps.log; tail -n 3 $G/audit.log $G/campaign_2.log $G/rescore.log; grep -E "PASSED|FAILED|passed|failed" $G/profile.log | tail -5
