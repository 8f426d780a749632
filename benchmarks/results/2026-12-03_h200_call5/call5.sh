#!/bin/bash
# device call 5 of 2026-12-03 (the working tree as sent, with .dev/before = `git archive 8594b01` minus its results,
# docs and tests: the last commit without the sandbox). Issue 14's "no false positives, speedups within 2%":
#  1. both checkouts' build caches filled in parallel, one untimed process per bundled candidate/task pair
#  2. the 7 pairs, both checkouts alternated one evaluation at a time (compare_checkouts.py --interleave: before,
#     after, after, before ...), 5 timed repeats per side after one warm evaluation, 3 evaluators per side in turn
#     so that standby workers are ready
G=/tmp/g; mkdir -p $G; export PYTHONUNBUFFERED=1
(while sleep 20; do tar czf $OUT/call5.tgz -C $G . 2>/dev/null; done) & TAR=$!
{ git status --short; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv; } > $G/tree.txt 2>&1
WARM=""
for i in 0 1 2 3 4 5 6; do
  PYTHONPATH=$PWD/.dev/before timeout 120 python3 benchmarks/compare_checkouts.py --root .dev/before --repeats 0 --pairs $i --out $G/warm_before_$i.json > $G/warm_before_$i.log 2>&1 & WARM="$WARM $!"
  PYTHONPATH=$PWD timeout 120 python3 benchmarks/compare_checkouts.py --root . --repeats 0 --pairs $i --out $G/warm_after_$i.json > $G/warm_after_$i.log 2>&1 & WARM="$WARM $!"
done
wait $WARM
echo "warm-up done at $SECONDS s" > $G/steps.log; pkill -f candidate_worker; sleep 1
timeout $((560 - SECONDS)) python3 benchmarks/compare_checkouts.py --interleave .dev/before . --outs $G/before.json $G/after.json --repeats 5 --evaluators 3 > $G/interleave.log 2>&1
echo "interleave: exit $? at $SECONDS s" >> $G/steps.log; pkill -f candidate_worker; sleep 1
PYTHONPATH=$PWD python3 benchmarks/compare_checkouts.py --compare $G/before.json $G/after.json > $G/compare.log 2>&1
echo "compare: exit $? at $SECONDS s" >> $G/steps.log
kill $TAR; tar czf $OUT/call5.tgz -C $G .
cat $G/steps.log $G/interleave.log $G/compare.log
