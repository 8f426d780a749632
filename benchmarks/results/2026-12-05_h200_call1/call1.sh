#!/bin/bash
# device call 1 of 2026-12-05: issue 37's GPU part (held-out shapes, torch.compile beside eager, the kernels in a model)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site || exit
export LITELLM_LOCAL_MODEL_COST_MAP=True WANDB_MODE=disabled PYTHONUNBUFFERED=1
timeout 545 python3 benchmarks/paper_extras_gpu.py /tmp/px 2>&1 | tee $OUT/paper_extras.log
cp /tmp/px/summary.json /tmp/px/run/integrate/*.md /tmp/px/report/report.md $OUT/
