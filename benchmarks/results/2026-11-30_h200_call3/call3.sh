#!/bin/bash
# device call 3 (2026-11-30): the shipped code (share worker, no profiler warm-up in timing workers):
# precision+overhead on GPU0 alone; throughput on both; then GPU tests split over both GPUs.
G=/tmp/gc; mkdir -p $G/A $G/B $G/T
CUDA_VISIBLE_DEVICES=0 timeout 170 python benchmarks/eval_bench.py --out $G/A --parts precision,overhead > $G/A/evalbench.log 2>&1
echo "exit $? at $SECONDS" >> $G/A/evalbench.log
timeout $((350 - SECONDS)) python benchmarks/eval_bench.py --out $G/T --parts throughput > $G/T/evalbench.log 2>&1
echo "exit $? at $SECONDS" >> $G/T/evalbench.log
python scripts/gpu_check.py --out $G/A/check --only tests --gpu 0 --step-timeout $((530 - SECONDS)) \
   --select "test_fastclose or test_realistic or hidden_library or partial_replacement or legit_triton_relu or legit_cuda_relu" > $G/A/check.log 2>&1 &
python scripts/gpu_check.py --out $G/B/check --only tests --gpu 1 --step-timeout $((530 - SECONDS)) \
   --select "test_guards and not (hidden_library or partial_replacement or legit_triton_relu or legit_cuda_relu)" > $G/B/check.log 2>&1 &
wait
