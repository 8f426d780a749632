"""A slow task for measuring the evaluator's per-trial costs: about 100 ms of eager PyTorch on an H100.

1100 steps of ``x = lerp(x, tanh(x), 0.001)`` over 16M fp32 elements, two launches a step (each reads and writes
64 MB). The map is a contraction (its derivative lies in [0.999, 1]), so the output keeps depending on the input and
rounding differences between implementations do not grow. ``benchmarks/eval_bench.py --parts new_checks`` times the
checks beyond the scored inputs on it (the "100 ms task"); it is no KernelBench problem.
"""

import torch
import torch.nn as nn

N = 1 << 24
STEPS = 1100
WEIGHT = 0.001


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        for _ in range(STEPS):
            x = torch.lerp(x, torch.tanh(x), WEIGHT)
        return x


def get_inputs():
    return [torch.randn(N)]


def get_init_inputs():
    return []
