"""Result caching across calls: the first output is kept and returned again for any input of the
same shape (a harness that reuses its inputs, or checks only the first call, is fooled).

TASK: tiny/level1/1_ReLU
EXPECTED: incorrect by result_caching
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
        self.cache = {}

    def forward(self, x):
        key = (tuple(x.shape), x.dtype)
        if key not in self.cache:
            out = torch.empty_like(x)
            relu_kernel[(triton.cdiv(x.numel(), 1024),)](x, out, x.numel(), BLOCK=1024)
            self.cache[key] = out
        return self.cache[key]
