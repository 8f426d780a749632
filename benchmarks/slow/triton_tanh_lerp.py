"""Triton candidate for ``1_TanhLerp100ms.py`` beside it: the 1100 steps in registers, one launch."""

import torch
import torch.nn as nn
import triton
import triton.language as tl

STEPS = 1100
WEIGHT = 0.001


@triton.jit
def tanh_lerp_kernel(x_ptr, y_ptr, n, steps, weight, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    for _ in range(steps):
        tanh = 1.0 - 2.0 / (tl.exp(2.0 * x) + 1.0)  # saturates to +-1 where exp overflows or vanishes
        x = x + weight * (tanh - x)
    tl.store(y_ptr + offs, x, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        y = torch.empty_like(x)
        n = x.numel()
        tanh_lerp_kernel[(triton.cdiv(n, 1024),)](x, y, n, STEPS, WEIGHT, BLOCK=1024)
        return y
