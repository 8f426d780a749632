#!/bin/bash
# device call 6 of 2026-12-03: call 4's rescore again (its 27 rows did not come back: $OUT returns at most so many
# files, so the directory travels as one archive now): `cudaforge rescore` of call 2's 30-task campaign under
# eval=cudaforge_paper, one evaluation at a time, then `cudaforge report` of the campaign beside it
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl > /tmp/pip.log 2>&1 || { tail /tmp/pip.log; exit 1; }
G=/tmp/g; mkdir -p $G; export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD:/tmp/site LITELLM_LOCAL_MODEL_COST_MAP=True WANDB_MODE=disabled
(while sleep 15; do tar czf $OUT/call6.tgz -C $G . 2>/dev/null; done) & TAR=$!
rm -rf /tmp/campaign && cp -r benchmarks/results/2026-12-03_h200_call2/out/campaign /tmp/campaign
timeout $((530 - SECONDS)) python3 -m cudaforge.cli rescore /tmp/campaign eval=cudaforge_paper \
  hydra.run.dir=$G/rescore_paper > $G/rescore.log 2>&1
echo "rescore: exit $? at $SECONDS s, $(cat $G/rescore_paper/rescored.jsonl 2>/dev/null | wc -l) rows" >> $G/steps.log
python3 -m cudaforge.cli report /tmp/campaign $G/rescore_paper report.out_dir=$G/report > $G/report.log 2>&1
echo "report: exit $?" >> $G/steps.log
kill $TAR; tar czf $OUT/call6.tgz -C $G .
cat $G/steps.log; tail -n 3 $G/rescore.log; grep -A12 "## Protocols" $G/report.log
