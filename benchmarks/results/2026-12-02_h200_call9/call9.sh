#!/bin/bash
# device call 9 (2026-12-02, the working tree as sent, with .dev/before = `git archive 8594b01` minus its results,
# docs and tests: the last commit without the sandbox). The whole call has about 300 s:
#  1. both checkouts' build caches filled in parallel, one process per bundled candidate/task pair (untimed)
#  2. the bundled candidates' speedups, 8594b01 and then this tree, one at a time, 3 repeats each
#     (compare_checkouts.py: "no false positives, speedups within 2%" of issue 14)
#  3. if time is left: eval_bench precision (5 evaluations of one pair) with this tree
G=/tmp/g; mkdir -p $G; export PYTHONUNBUFFERED=1
(while sleep 15; do tar czf $OUT/call9.tgz -C $G . 2>/dev/null; done) & TAR=$!
git status --short > $G/tree.txt 2>&1; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv >> $G/tree.txt 2>&1
WARM=""
for i in 0 1 2 3 4 5 6; do
  PYTHONPATH=$PWD/.dev/before timeout 100 python3 benchmarks/compare_checkouts.py --root .dev/before --repeats 0 --pairs $i --out $G/warm_before_$i.json > $G/warm_before_$i.log 2>&1 & WARM="$WARM $!"
  PYTHONPATH=$PWD timeout 100 python3 benchmarks/compare_checkouts.py --root . --repeats 0 --pairs $i --out $G/warm_after_$i.json > $G/warm_after_$i.log 2>&1 & WARM="$WARM $!"
done
wait $WARM
echo "warm-up done at $SECONDS s" > $G/steps.log; pkill -f candidate_worker; sleep 1
PYTHONPATH=$PWD/.dev/before timeout $((195 - SECONDS)) python3 benchmarks/compare_checkouts.py --root .dev/before --out $G/before.json --repeats 3 > $G/before.log 2>&1
echo "before: exit $? at $SECONDS s" >> $G/steps.log; pkill -f candidate_worker; sleep 1
PYTHONPATH=$PWD timeout $((280 - SECONDS)) python3 benchmarks/compare_checkouts.py --root . --out $G/after.json --repeats 3 > $G/after.log 2>&1
echo "after: exit $? at $SECONDS s" >> $G/steps.log; pkill -f candidate_worker; sleep 1
PYTHONPATH=$PWD python3 benchmarks/compare_checkouts.py --compare $G/before.json $G/after.json > $G/compare.log 2>&1
echo "compare: exit $? at $SECONDS s" >> $G/steps.log
if [ $SECONDS -lt 245 ]; then
  PYTHONPATH=$PWD timeout $((285 - SECONDS)) python3 benchmarks/eval_bench.py --out $G/evalbench --cache /tmp/eb --parts precision --tag call9 > $G/precision.log 2>&1
  echo "precision: exit $? at $SECONDS s" >> $G/steps.log
fi
kill $TAR; tar czf $OUT/call9.tgz -C $G .
cat $G/steps.log $G/compare.log; tail -n 3 $G/before.log $G/after.log $G/precision.log 2>/dev/null
