#!/bin/bash
# device call 17 of 2026-12-04 (fifth session): the GPU tests of timing, evaluation and fingerprint, in what was left
# of the session's device time (280 s)
export LITELLM_LOCAL_MODEL_COST_MAP=True WANDB_MODE=disabled PYTHONUNBUFFERED=1
timeout 280 python3 -m pytest -v -p no:cacheprovider -m gpu tests/test_timing.py tests/test_gpu_eval.py tests/test_fingerprint.py 2>&1 | tee $OUT/gpu_tests.log
