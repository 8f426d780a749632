#!/bin/bash
# device call 5 (2026-11-30, session 2): GPU0 alone: launch residue; precision variants; overhead; lead GPU test; then throughput (2 GPUs)
G=/tmp/gc; mkdir -p $G/A
export CUDA_VISIBLE_DEVICES=0
timeout 60 python benchmarks/launch_residue.py --out $G/A/residue > $G/A/residue.log 2>&1; echo "exit $? at $SECONDS" >> $G/A/residue.log
B="python benchmarks/eval_bench.py --out $G/A/evalbench"
timeout 120 $B --parts precision,overhead --tag default > $G/A/eb_default.log 2>&1; echo "exit $? at $SECONDS" >> $G/A/eb_default.log
timeout 80 $B --parts precision --tag wait --wait-standby > $G/A/eb_wait.log 2>&1; echo "exit $? at $SECONDS" >> $G/A/eb_wait.log
timeout 80 $B --parts precision --tag lead200 --set timing_lead_us=200 > $G/A/eb_lead200.log 2>&1; echo "exit $? at $SECONDS" >> $G/A/eb_lead200.log
timeout 90 $B --parts precision --tag nostandby --set standby_workers=false > $G/A/eb_nostandby.log 2>&1; echo "exit $? at $SECONDS" >> $G/A/eb_nostandby.log
timeout 60 python -m pytest -q -p no:cacheprovider tests/test_timing.py -m gpu -rA > $G/A/test_timing_gpu.log 2>&1; echo "exit $? at $SECONDS" >> $G/A/test_timing_gpu.log
export CUDA_VISIBLE_DEVICES=0,1
timeout $((585 - SECONDS)) $B --parts throughput > $G/A/eb_throughput.log 2>&1; echo "exit $? at $SECONDS" >> $G/A/eb_throughput.log
nvidia-smi > $G/nvidia-smi.txt 2>&1
