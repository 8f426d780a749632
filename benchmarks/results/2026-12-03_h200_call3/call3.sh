#!/bin/bash
# device call 3 of 2026-12-03 (the working tree of call 2, the machine still warm; 230 s): the paper protocol's
# speedups one evaluation at a time (issue 15), for the bundled candidates and the legitimate corpus kernels
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl >/dev/null 2>&1
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD:/tmp/site LITELLM_LOCAL_MODEL_COST_MAP=True; mkdir -p $OUT/p
timeout 230 python3 benchmarks/protocol_compare.py --out $OUT/p --device cuda --jobs 1 --protocols cudaforge_paper \
  --only cuda_relu,triton_relu,cuda_softmax,triton_softmax,cuda_matmul_bias_relu,triton_gelu,legit_cuda_relu,legit_partial_replacement,legit_triton_degenerate_softmax,legit_triton_matmul_bias_relu,legit_cuda_softmax_two_kernels,legit_triton_relu,legit_triton_softmax_two_kernels \
  2>&1 | tee $OUT/p/log.txt
