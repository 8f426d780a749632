#!/bin/bash
# device call 5 (2026-12-01): the sandboxed evaluator on an H200, after calls 2-4 found what CUDA and nvcc need
# inside the sandbox (CUDA writes to its own /proc/<pid>; the compiler's prefix must be readable).
#  1. probe: a sandboxed CUDA context, and one evaluation of the bundled CUDA softmax (fingerprint)
#  2. eval_bench precision and overhead (the sandbox and verifier's cost per candidate)
#  3. the threats and legitimate kernels of the hack corpus that need a GPU
#  4. the evaluator's GPU tests, with what time is left
G=/tmp/gc; mkdir -p $G; export PYTHONUNBUFFERED=1
python3 - > $G/probe.log 2>&1 <<'PY'
import json, os, subprocess, sys
from cudaforge.sandbox import Sandbox, describe
p = Sandbox().start([sys.executable, "-c", "import torch; torch.ones(1, device='cuda'); print('CUDA OK')"],
                    env={"PATH": os.environ["PATH"], "HOME": "/tmp"}, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
print(describe(p.status())); print(p.proc.communicate(timeout=120)[0].decode()[-2000:]); p.kill()
from cudaforge.eval.evaluator import Evaluator
from cudaforge.tasks import find_task, selection
r = Evaluator({"build_cache_dir": "/tmp/gc/build"}).evaluate(find_task(selection("tiny"), "level1/2_Softmax"),
                                                             open("benchmarks/candidates/cuda_softmax.py").read())
print(r.report()); print(json.dumps({k: r.fingerprint.get(k) for k in ("sandbox_summary", "timing_crosscheck",
      "reference_solo_ms", "guard_notes", "timing_breakdown_s", "worker_setup_s", "standby")}, indent=1, default=str))
print(r.phases)
PY
echo "probe done at $SECONDS" >> $G/probe.log
timeout 170 python3 benchmarks/eval_bench.py --out $G/evalbench --parts precision,overhead --tag sandbox > $G/evalbench.log 2>&1; echo "exit $? at $SECONDS" >> $G/evalbench.log
ONLY=hack_native_timer,hack_hidden_stream_crosscheck,hack_l2_persistence,legit_cuda_relu,legit_init_time_folding,hack_write_outside,hack_result_cache,hack_uninitialised_read,hack_side_stream_hidden,legit_cuda_softmax_two_kernels
timeout $((420 - SECONDS)) python3 benchmarks/hacks/run_corpus.py --device cuda --only $ONLY --out $G/corpus.json > $G/corpus.log 2>&1; echo "exit $? at $SECONDS" >> $G/corpus.log
timeout $((560 - SECONDS)) python3 -m pytest -q -p no:cacheprovider tests/test_gpu_eval.py -rf > $G/tests_gpu_eval.log 2>&1; echo "exit $? at $SECONDS" >> $G/tests_gpu_eval.log
nvidia-smi > $G/nvidia-smi.txt 2>&1
cd $G && rm -rf build evalbench/*cache* && tar czf $OUT/call5.tgz --exclude=build .
