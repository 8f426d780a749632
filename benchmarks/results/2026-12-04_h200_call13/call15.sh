#!/bin/bash
# device call 15 of 2026-12-04 (fifth session): issue 35's rescore on the H200 (a campaign run under the authors'
# harness, rescored under ours, the report's Protocols section); issue 34's overhead with the precision probe reused
# across a task's candidates (ladder rungs 2^16, 2^24 and the fused task); the one honest corpus entry call 14 did
# not reach.
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl > /tmp/pip.log 2>&1 || { tail /tmp/pip.log; exit 1; }
export LITELLM_LOCAL_MODEL_COST_MAP=True WANDB_MODE=disabled PYTHONUNBUFFERED=1 PYTHONPATH=$PWD:/tmp/site
run() { local name=$1 limit=$2; shift 2; local s=$(date +%s); timeout $limit "$@" > $OUT/$name.log 2>&1; echo "$name rc=$? $(( $(date +%s)-s ))s" >> $OUT/summary.txt; }
G=/tmp/g; mkdir -p $G
run contrast 200 python3 benchmarks/authors_contrast.py $G/contrast
run rescore 150 python3 -m cudaforge.cli rescore $G/contrast eval=default hydra.run.dir=$G/contrast_default
run report 60 python3 -m cudaforge.cli report $G/contrast $G/contrast_default
cp $G/contrast_default/rescored.jsonl $OUT/rescored.jsonl 2>/dev/null
sed -n '/## Protocols/,/## Notes/p' $G/contrast/report/report.md > $OUT/protocols.md 2>/dev/null
run ladder 170 python3 benchmarks/timing_ladder.py --out $OUT/ladder --sizes 16,24
run corpus 60 python3 benchmarks/hacks/run_corpus.py --device cuda --out $OUT/corpus.json --only legit_triton_softmax_two_kernels
cat $OUT/summary.txt; tail -n 6 $OUT/contrast.log; cat $OUT/rescore.log | tail -6; cat $OUT/protocols.md
for f in ladder corpus; do echo "== $f"; grep -E "^\||as expected|Error|Traceback" $OUT/$f.log | tail -n 20; done
