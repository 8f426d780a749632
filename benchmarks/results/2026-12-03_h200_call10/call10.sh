#!/bin/bash
# device call 10 of 2026-12-03 (run from the repository root): issue 18's build path on the H200
#  1. benchmarks/build_corpus_bench.py: the 22 candidates of benchmarks/build_corpus/ (LLM and public-release
#     styles: KernelBench's, pybind11 blocks, load_inline in forward and in __init__, two that must fail), each
#     built cold through precompile (sandboxed worker, trusted build), the precompiled header shared
#  2. two deferred-build candidates through the whole GPU evaluation: built ahead in the compile phase, correct
G=$OUT; export PYTHONUNBUFFERED=1
{ git log --oneline -1; nvidia-smi --query-gpu=name,driver_version --format=csv; nproc; } > $G/env.txt 2>&1
S=$SECONDS
timeout 420 python3 benchmarks/build_corpus_bench.py --out $G > $G/build_corpus.log 2>&1
echo "build corpus: exit $? in $((SECONDS - S)) s" >> $G/steps.log; S=$SECONDS
timeout $((560 - SECONDS)) python3 - > $G/deferred_eval.log 2>&1 <<'PY'
import time
from pathlib import Path
from cudaforge.eval.evaluator import Evaluator
from cudaforge.tasks import find_task, selection
for name, task in [("lazy_forward_relu", "level1/1_ReLU"), ("in_init_softmax", "level1/2_Softmax")]:
    started = time.monotonic()
    r = Evaluator({"device": "cuda"}).evaluate(find_task(selection("tiny"), task), Path(f"benchmarks/build_corpus/{name}.py").read_text())
    phases = {p.phase.value: (round(p.seconds, 2), p.message[:120]) for p in r.phases}
    print(name, r.status.value, round(time.monotonic() - started, 1), "s", phases, r.fingerprint.get("builds_ahead"), flush=True)
PY
echo "deferred eval: exit $? in $((SECONDS - S)) s" >> $G/steps.log
cat $G/steps.log; tail -n 32 $G/build_corpus.log; cat $G/deferred_eval.log | tail -4
