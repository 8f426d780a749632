"""An uninitialised read that passes once: only the positive outputs are written; the zeros are
whatever the fresh allocation held, which is zero the first time (fresh pages) and garbage later.

TASK: tiny/level1/1_ReLU
EXPECTED: incorrect by uninitialised_memory
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def positive_part_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    tl.store(out_ptr + offs, x, mask=mask & (x > 0))


class ModelNew(nn.Module):
    def forward(self, x):
        out = torch.empty_like(x)
        positive_part_kernel[(triton.cdiv(x.numel(), 1024),)](x, out, x.numel(), BLOCK=1024)
        return out
