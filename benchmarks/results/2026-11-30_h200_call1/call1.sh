#!/bin/bash
# device call 1 (2026-11-30): lane A GPU0 = eval_bench precision,overhead + GPU tests (eval/build/fingerprint/timing/profile)
#                              lane B GPU1 = audit of the 9 main tasks left + GPU tests (guards)
G=/tmp/gc; mkdir -p $G/A $G/B
(
  export CUDA_VISIBLE_DEVICES=0
  timeout $((200 - SECONDS)) python benchmarks/eval_bench.py --out $G/A/evalbench --parts precision,overhead > $G/A/evalbench.log 2>&1
  echo "evalbench exit $? at $SECONDS" >> $G/A/evalbench.log
  python scripts/gpu_check.py --out $G/A/check --only tests --gpu 0 --step-timeout $((560 - SECONDS)) \
     --select "test_gpu_eval or test_build or test_fingerprint or test_timing or test_profile" > $G/A/check.log 2>&1
) &
(
  export CUDA_VISIBLE_DEVICES=1
  timeout 150 python -m cudaforge.cli tasks audit suite=main 'suite.levels=[2]' 'suite.problem_ids=[4,5,6,7,8,9,10]' audit.min_reference_ms=0.5 > $G/B/audit_main_level2.log 2>&1
  echo "exit $? at $SECONDS" >> $G/B/audit_main_level2.log
  timeout 80 python -m cudaforge.cli tasks audit suite=main 'suite.levels=[3]' 'suite.problem_ids=[7,8]' audit.min_reference_ms=0.5 > $G/B/audit_main_level3.log 2>&1
  echo "exit $? at $SECONDS" >> $G/B/audit_main_level3.log
  python scripts/gpu_check.py --out $G/B/check --only tests --gpu 1 --step-timeout $((560 - SECONDS)) --select "test_guards" > $G/B/check.log 2>&1
) &
wait
nvidia-smi > $G/nvidia-smi.txt 2>&1
