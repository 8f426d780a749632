#!/bin/bash
# device call 1 (2026-12-01): the sandboxed evaluator on an H200.
#  1. probe: what the sandbox applies there (uid, Landlock, namespaces), device nodes, a sandboxed CUDA process
#  2. GPU tests of the evaluator (tests/test_gpu_eval.py, incl. the sandbox/arena and L2-window tests)
#  3. the hack corpus through the evaluator on the GPU (benchmarks/hacks/run_corpus.py)
#  4. eval_bench precision and overhead, if time is left
G=/tmp/gc; mkdir -p $G
export PYTHONUNBUFFERED=1
{
  id; uname -r; python3 -c "import torch, triton; print(torch.__version__, triton.__version__, torch.cuda.get_device_name(0))"
  ls -l /dev/nvidia* ; ls -ld /opt /opt/torch /opt/torch/.venv 2>&1; readlink -f $(which python3)
  python3 - <<'PY'
import json, os, subprocess, sys
from cudaforge.sandbox import Sandbox, describe
from cudaforge.sandbox.linux import landlock_abi
print("landlock abi", landlock_abi())
code = "import os, torch; x = torch.ones(1, device='cuda'); print('uid', os.getuid(), 'cuda ok', float(x.sum()), os.listdir('/proc')[:8])"
p = Sandbox().start([sys.executable, "-c", code], env={"PATH": os.environ["PATH"], "HOME": "/tmp"}, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
print(json.dumps(p.status())); print(describe(p.status()))
print(p.proc.communicate(timeout=120)[0].decode()[-3000:]); p.kill()
PY
} > $G/probe.log 2>&1
echo "probe done at $SECONDS" >> $G/probe.log
timeout 240 python3 -m pytest -q -p no:cacheprovider tests/test_gpu_eval.py -x -rf > $G/tests_gpu_eval.log 2>&1; echo "exit $? at $SECONDS" >> $G/tests_gpu_eval.log
timeout $((520 - SECONDS)) python3 benchmarks/hacks/run_corpus.py --device cuda --out $G/corpus.json > $G/corpus.log 2>&1; echo "exit $? at $SECONDS" >> $G/corpus.log
if [ $SECONDS -lt 450 ]; then
  timeout $((575 - SECONDS)) python3 benchmarks/eval_bench.py --out $G/evalbench --parts precision,overhead --tag sandbox > $G/evalbench.log 2>&1; echo "exit $? at $SECONDS" >> $G/evalbench.log
fi
nvidia-smi > $G/nvidia-smi.txt 2>&1
cd $G && tar czf $OUT/call1.tgz . 
