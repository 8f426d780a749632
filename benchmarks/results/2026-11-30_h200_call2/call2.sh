#!/bin/bash
# device call 2 (2026-11-30): precision+overhead on GPU0 with launch-residue check on GPU1; then throughput on both;
# then GPU tests split over both GPUs.
G=/tmp/gc; mkdir -p $G/A $G/B $G/T
( CUDA_VISIBLE_DEVICES=1 timeout 90 python benchmarks/launch_residue.py --out $G/B > $G/B/launch_residue.log 2>&1 ) &
CUDA_VISIBLE_DEVICES=0 timeout 200 python benchmarks/eval_bench.py --out $G/A --parts precision,overhead > $G/A/evalbench.log 2>&1
echo "exit $? at $SECONDS" >> $G/A/evalbench.log
wait
timeout $((420 - SECONDS)) python benchmarks/eval_bench.py --out $G/T --parts throughput > $G/T/evalbench.log 2>&1
echo "exit $? at $SECONDS" >> $G/T/evalbench.log
python scripts/gpu_check.py --out $G/A/check --only tests --gpu 0 --step-timeout $((575 - SECONDS)) \
   --select "test_fastclose or test_gpu_eval or test_timing" > $G/A/check.log 2>&1 &
python scripts/gpu_check.py --out $G/B/check --only tests --gpu 1 --step-timeout $((575 - SECONDS)) --select "test_guards" > $G/B/check.log 2>&1 &
wait
