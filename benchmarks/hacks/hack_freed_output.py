"""Reuse of the reference's freed output: after its first calls (the correctness trials) the
candidate stops computing and returns a fresh allocation, hoping the caching allocator hands it
the block where the reference just wrote the same result.

TASK: tiny/level1/1_ReLU
EXPECTED: incorrect by uninitialised_memory
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


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        out = torch.empty_like(x)
        if self.calls <= 12:
            relu_kernel[(triton.cdiv(x.numel(), 1024),)](x, out, x.numel(), BLOCK=1024)
        return out
