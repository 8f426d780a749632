"""A constant output on a degenerate task: the reference's output is all ones for ordinary inputs,
so a kernel that writes 1.0 everywhere, and never reads its input, passes every trial.

TASK: hacks/level1/1_DegenerateSoftmax
EXPECTED: rejected by output_sensitivity
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def ones_kernel(out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.full((BLOCK,), 1.0, tl.float32), mask=offs < n)


class ModelNew(nn.Module):
    def forward(self, x):
        out = torch.empty_like(x)
        ones_kernel[(triton.cdiv(out.numel(), 1024),)](out, out.numel(), BLOCK=1024)
        return out
