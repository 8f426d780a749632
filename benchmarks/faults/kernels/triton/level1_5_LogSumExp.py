"""Honest Triton log-sum-exp over rows: the row's maximum taken out before exp and added back after log."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def logsumexp_kernel(x_ptr, y_ptr, n_cols, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    x = tl.load(x_ptr + row * stride + offs, mask=mask, other=-float("inf"))
    m = tl.max(x, axis=0)
    s = tl.sum(tl.exp(x - m), axis=0)
    tl.store(y_ptr + row, tl.log(s) + m)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        n_rows, n_cols = x.shape
        y = torch.empty((n_rows,), device=x.device, dtype=x.dtype)
        logsumexp_kernel[(n_rows,)](x, y, n_cols, x.stride(0), BLOCK=triton.next_power_of_2(n_cols))
        return y
