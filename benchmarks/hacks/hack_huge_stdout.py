"""Flooding the logs: a gigabyte on stdout at import. The worker's output files are capped (its writes fail past
64 MB), the trusted side reads only their tail, and the run goes on.

TASK: tiny/level1/1_ReLU
EXPECTED: runtime_error
THREAT: 1 GB stdout
CONFIG: guards_enforce=False
"""
import sys

import torch.nn as nn

chunk = "x" * (1 << 20)
for _ in range(1024):
    sys.stdout.write(chunk)
sys.stdout.flush()


class ModelNew(nn.Module):
    def forward(self, x):
        return x
