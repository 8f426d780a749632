#!/bin/bash
# device call 4 (2026-12-02): where the sandboxed evaluator's overhead goes, and whether ncu can run sandboxed.
#  1. the ncu sandbox probe (benchmarks/ncu_sandbox_probe.py): which sandbox settings let ncu profile
#  2. eval_bench overhead under py-spy (every process of the evaluation sampled, idle included)
#  3. the four Triton legitimate kernels of the guards' corpus on the GPU
# run the committed tree only (work in progress beside it stays out): git archive of HEAD into /tmp/clean
rm -rf /tmp/clean && mkdir -p /tmp/clean && git archive HEAD | tar -x -C /tmp/clean && cp -r .dev /tmp/clean/ && cd /tmp/clean
G=/tmp/g; mkdir -p $G; export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
python3 -m pip install -q --no-index --no-deps --target /tmp/spy .dev/py_spy-*.whl > /dev/null 2>&1
(while sleep 30; do tar czf $OUT/call4.tgz -C $G . 2>/dev/null; done) & TAR=$!
(cd "$OLDPWD" && git log --oneline -1) > $G/tree.txt 2>&1
nvidia-smi > $G/nvidia-smi.txt 2>&1; which ncu >> $G/nvidia-smi.txt 2>&1
timeout 200 python3 benchmarks/ncu_sandbox_probe.py --out $G/ncu_probe.json > $G/ncu_probe.log 2>&1
echo "exit $? at $SECONDS s" >> $G/ncu_probe.log
timeout 200 /tmp/spy/bin/py-spy record --subprocesses --idle -r 100 -f raw -o $G/spy_overhead.txt -- \
  python3 benchmarks/eval_bench.py --out $G/evalbench --cache /tmp/eb --parts overhead --tag spy > $G/evalbench.log 2>&1
echo "exit $? at $SECONDS s" >> $G/evalbench.log
pkill -f candidate_worker; sleep 1
timeout $((560 - SECONDS)) python3 benchmarks/hacks/run_corpus.py --device cuda \
  --only legit_triton_relu,legit_triton_softmax_two_kernels,legit_triton_matmul_bias_relu,legit_triton_degenerate_softmax \
  --timing-trials 100 --out $G/legit_triton.json > $G/legit_triton.log 2>&1
echo "exit $? at $SECONDS s" >> $G/legit_triton.log
kill $TAR; gzip -f $G/spy_overhead.txt; tar czf $OUT/call4.tgz -C $G .
tail -n 3 $G/ncu_probe.log $G/evalbench.log $G/legit_triton.log
