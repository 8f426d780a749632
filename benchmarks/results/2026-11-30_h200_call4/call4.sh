#!/bin/bash
# device call 1 (2026-11-30, session 2): lane A GPU0 = launch residue (+teardown), eval_bench precision,overhead, GPU tests lane 0
#                                        lane B GPU1 = GPU tests (guards)
G=/tmp/gc; mkdir -p $G/A $G/B
(
  export CUDA_VISIBLE_DEVICES=0
  timeout 60 python benchmarks/launch_residue.py --out $G/A/residue > $G/A/residue.log 2>&1; echo "exit $? at $SECONDS" >> $G/A/residue.log
  timeout 60 python benchmarks/launch_residue.py --out $G/A/residue --teardown > $G/A/residue_teardown.log 2>&1; echo "exit $? at $SECONDS" >> $G/A/residue_teardown.log
  timeout $((330 - SECONDS)) python benchmarks/eval_bench.py --out $G/A/evalbench --parts precision,overhead > $G/A/evalbench.log 2>&1
  echo "evalbench exit $? at $SECONDS" >> $G/A/evalbench.log
  python scripts/gpu_check.py --out $G/A/check --only tests --gpu 0 --step-timeout $((560 - SECONDS)) \
     --select "test_gpu_eval or test_build or test_fingerprint or test_timing or test_profile or test_fastclose" > $G/A/check.log 2>&1
) &
(
  export CUDA_VISIBLE_DEVICES=1
  sleep 5
  python scripts/gpu_check.py --out $G/B/check --only tests --gpu 1 --step-timeout 400 --select "test_guards" > $G/B/check.log 2>&1
) &
wait
nvidia-smi > $G/nvidia-smi.txt 2>&1
