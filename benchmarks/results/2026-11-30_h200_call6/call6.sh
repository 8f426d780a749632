#!/bin/bash
# device call 6 (2026-11-30, session 2), final code (timing_lead_us=500 by default):
#  1. GPU0 alone: eval_bench precision,overhead
#  2. GPU0: GPU tests (gpu_eval, timing) | GPU1: GPU tests (guards)
#  3. both GPUs: eval_bench throughput;  4. GPU0: precision under the launch-inclusive protocol (lead 0), if time is left
G=/tmp/gc; mkdir -p $G/A $G/B
B="python benchmarks/eval_bench.py --out $G/A/evalbench"
CUDA_VISIBLE_DEVICES=0 timeout 150 $B --parts precision,overhead --tag final > $G/A/eb_final.log 2>&1; echo "exit $? at $SECONDS" >> $G/A/eb_final.log
(CUDA_VISIBLE_DEVICES=0 python scripts/gpu_check.py --out $G/A/check --only tests --gpu 0 --step-timeout 260 --select "test_gpu_eval or test_timing" > $G/A/check.log 2>&1; echo "exit $? at $SECONDS" >> $G/A/check.log) &
(CUDA_VISIBLE_DEVICES=1 python scripts/gpu_check.py --out $G/B/check --only tests --gpu 1 --step-timeout 260 --select "test_guards" > $G/B/check.log 2>&1; echo "exit $? at $SECONDS" >> $G/B/check.log) &
wait
CUDA_VISIBLE_DEVICES=0,1 timeout $((580 - SECONDS)) $B --parts throughput --tag final > $G/A/eb_throughput.log 2>&1; echo "exit $? at $SECONDS" >> $G/A/eb_throughput.log
if [ $SECONDS -lt 530 ]; then
  CUDA_VISIBLE_DEVICES=0 timeout $((585 - SECONDS)) $B --parts precision --tag lead0 --set timing_lead_us=0 > $G/A/eb_lead0.log 2>&1; echo "exit $? at $SECONDS" >> $G/A/eb_lead0.log
fi
nvidia-smi > $G/nvidia-smi.txt 2>&1
