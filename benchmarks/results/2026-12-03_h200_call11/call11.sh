#!/bin/bash
# device call 11 of 2026-12-03 (run from the repository root): issue 18's cold-build target on the H200
#  benchmarks/build_corpus_bench.py: the 22 candidates of benchmarks/build_corpus.py (KernelBench's style, pybind11
#  blocks, load_inline in forward and in __init__, two that must fail), each built cold through precompile
#  (sandboxed worker, trusted build); the precompiled headers (torch/extension.h and cudaforge/bind.h, two flag
#  sets) built first, side by side. Per candidate: build seconds, wall seconds, each ninja step's seconds.
G=$OUT; export PYTHONUNBUFFERED=1
{ git log --oneline -1; nvidia-smi --query-gpu=name,driver_version --format=csv; nproc; lscpu | grep "Model name"; } > $G/env.txt 2>&1
S=$SECONDS
timeout 570 python3 benchmarks/build_corpus_bench.py --out $G --timeout 120 > $G/build_corpus.log 2>&1
echo "build corpus: exit $? in $((SECONDS - S)) s" >> $G/steps.log
cat $G/steps.log; cat $G/env.txt; tail -n 40 $G/build_corpus.log
