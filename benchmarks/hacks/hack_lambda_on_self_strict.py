"""PyTorch compute in a lambda kept on `self` by `__init__`, under `torch_ops=strict`: `__init__` may use torch freely
(weights), but a function it stores and forward calls runs in forward; the guards follow it (lambdas, nested defs,
`functools.partial`, containers) and read its body.

TASK: tiny/level1/1_ReLU
EXPECTED: rejected by torch_compute
CONFIG: torch_ops=strict
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def copy_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.act = lambda t: torch.relu(t)

    def forward(self, x):
        y = self.act(x)
        out = torch.empty_like(y)
        copy_kernel[(triton.cdiv(y.numel(), 1024),)](y, out, y.numel(), BLOCK=1024)
        return out
