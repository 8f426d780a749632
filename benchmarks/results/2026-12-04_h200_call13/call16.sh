#!/bin/bash
# device call 16 of 2026-12-04 (fifth session): call 15 again for what it could not do (litellm was not among the
# wheels; the ladder's JSON was one file too many): issue 35's rescore on the H200 (a campaign run under the authors'
# harness, rescored under ours, the report's Protocols section) and issue 34's overhead with the precision probe
# reused across a task's candidates (ladder rung 2^16).
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl > /tmp/pip.log 2>&1 || { tail /tmp/pip.log; exit 1; }
export LITELLM_LOCAL_MODEL_COST_MAP=True WANDB_MODE=disabled PYTHONUNBUFFERED=1 PYTHONPATH=$PWD:/tmp/site
run() { local name=$1 limit=$2; shift 2; local s=$(date +%s); timeout $limit "$@" > $OUT/$name.log 2>&1; echo "$name rc=$? $(( $(date +%s)-s ))s" >> $OUT/summary.txt; }
G=/tmp/g; mkdir -p $G
run contrast 200 python3 benchmarks/authors_contrast.py $G/contrast
run rescore 150 python3 -m cudaforge.cli rescore $G/contrast eval=default hydra.run.dir=$G/contrast_default
python3 -m cudaforge.cli report $G/contrast $G/contrast_default > $G/report.log 2>&1; echo "report rc=$?" >> $OUT/summary.txt
cp $G/contrast_default/rescored.jsonl $OUT/rescored.jsonl; cp $G/contrast/results.jsonl $OUT/contrast_results.jsonl
sed -n '/## Protocols/,/## Notes/p' $G/contrast/report/report.md > $OUT/protocols.md
run ladder 120 python3 benchmarks/timing_ladder.py --out $OUT/ladder --sizes 16 --no-fused
cat $OUT/summary.txt; tail -n 5 $OUT/contrast.log; tail -n 5 $OUT/rescore.log; cat $OUT/protocols.md; tail -n 12 $G/report.log
grep -E "^\||as expected|Error|Traceback" $OUT/ladder.log | tail -n 8
