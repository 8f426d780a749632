"""Right while it is checked, wrong once it is timed: the first calls (the correctness phase) compute the ReLU, later
ones skip the negative half and hand back a cheaper, wrong output that is no earlier call's and holds no poison. A
harness that checks only its correctness trials keeps the timed calls' speed; here every timed output is checked on
fresh inputs, and a wrong one that nothing else explains is ``timed_output``'s.

TASK: tiny/level1/1_ReLU
EXPECTED: incorrect by timed_output
NEEDS: cuda
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.maximum(tl.load(x_ptr + offs, mask=mask), 0.0), mask=mask)


@triton.jit
def copy_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        out = torch.empty_like(x)
        kernel = relu_kernel if self.calls < CHECKED_CALLS else copy_kernel
        kernel[(triton.cdiv(x.numel(), 1024),)](x, out, x.numel(), BLOCK=1024)
        return out


CHECKED_CALLS = 40
