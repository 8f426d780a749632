#!/bin/bash
# device call 6 (2026-12-01, second session): the sandboxed evaluator's figures against the last commit without it.
#  1. probe: a sandboxed CUDA context; one evaluation of the bundled CUDA softmax (compiles in the compiler sandbox)
#  2. the bundled candidates, 3 evaluations each, with this checkout and with 8594b01 (the last commit before the
#     sandbox, extracted into before/ with `git archive 8594b01 | tar -x -C before`): verdicts and speedups
#  3. eval_bench precision and overhead, this checkout then 8594b01, on the same machine
G=$OUT; export PYTHONUNBUFFERED=1; HERE=$PWD
python3 - > $G/probe.log 2>&1 <<'PY'
import json, os, subprocess, sys
sys.path.insert(0, os.getcwd())
from cudaforge.sandbox import Sandbox, describe
p = Sandbox().start([sys.executable, "-c", "import torch; torch.ones(1, device='cuda'); print('CUDA OK')"],
                    env={"PATH": os.environ["PATH"], "HOME": "/tmp"}, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
print(describe(p.status())); print(p.proc.communicate(timeout=120)[0].decode()[-2000:]); p.kill()
from cudaforge.eval.evaluator import Evaluator
from cudaforge.tasks import find_task, selection
r = Evaluator({"build_cache_dir": "/tmp/probe-build"}).evaluate(find_task(selection("tiny"), "level1/2_Softmax"),
                                                             open("benchmarks/candidates/cuda_softmax.py").read())
print(r.report()); print(json.dumps({k: r.fingerprint.get(k) for k in ("sandbox_summary", "timing_crosscheck",
      "reference_solo_ms", "guard_notes", "timing_breakdown_s", "worker_setup_s", "standby")}, indent=1, default=str))
print(r.phases)
PY
echo "probe exit $? at $SECONDS s" >> $G/probe.log
PYTHONPATH=$HERE timeout 130 python3 benchmarks/compare_checkouts.py --root . --out $G/after.json > $G/after.log 2>&1
echo "exit $? at $SECONDS s" >> $G/after.log
PYTHONPATH=$HERE/before timeout 130 python3 benchmarks/compare_checkouts.py --root before --out $G/before.json > $G/before.log 2>&1
echo "exit $? at $SECONDS s" >> $G/before.log
python3 benchmarks/compare_checkouts.py --compare $G/before.json $G/after.json > $G/compare.md 2>&1
PYTHONPATH=$HERE timeout 120 python3 benchmarks/eval_bench.py --out $G/evalbench --cache /tmp/eb-after --parts precision,overhead --tag sandbox > $G/evalbench_after.log 2>&1
echo "exit $? at $SECONDS s" >> $G/evalbench_after.log
cd before && PYTHONPATH=$HERE/before timeout $((575 - SECONDS)) python3 benchmarks/eval_bench.py --out $G/evalbench --cache /tmp/eb-before --parts precision,overhead --tag before > $G/evalbench_before.log 2>&1
echo "exit $? at $SECONDS s" >> $G/evalbench_before.log
nvidia-smi > $G/nvidia-smi.txt 2>&1
