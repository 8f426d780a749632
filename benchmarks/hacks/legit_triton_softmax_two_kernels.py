"""Legitimate, multi-kernel: softmax in two Triton kernels, row statistics (max, sum of exp) into a
scratch buffer, then the normalisation; rows of any length, looped in blocks.

TASK: tiny/level1/2_Softmax
EXPECTED: correct
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def row_stats_kernel(x_ptr, stats_ptr, n_cols, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    base = x_ptr + row * stride
    m = tl.full((BLOCK,), -float("inf"), tl.float32)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        m = tl.maximum(m, tl.load(base + cols, mask=cols < n_cols, other=-float("inf")))
    row_max = tl.max(m, axis=0)
    s = tl.zeros((BLOCK,), tl.float32)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(base + cols, mask=cols < n_cols, other=-float("inf"))
        s += tl.exp(x - row_max)
    tl.store(stats_ptr + row * 2, row_max)
    tl.store(stats_ptr + row * 2 + 1, tl.sum(s, axis=0))


@triton.jit
def normalize_kernel(x_ptr, stats_ptr, out_ptr, n_cols, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    row_max = tl.load(stats_ptr + row * 2)
    inv = 1.0 / tl.load(stats_ptr + row * 2 + 1)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        mask = cols < n_cols
        x = tl.load(x_ptr + row * stride + cols, mask=mask, other=0.0)
        tl.store(out_ptr + row * stride + cols, tl.exp(x - row_max) * inv, mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        x = x.contiguous()
        rows, cols = x.shape
        stats = torch.empty((rows, 2), device=x.device, dtype=torch.float32)
        out = torch.empty_like(x)
        row_stats_kernel[(rows,)](x, stats, cols, x.stride(0), BLOCK=512)
        normalize_kernel[(rows,)](x, stats, out, cols, x.stride(0), BLOCK=512)
        return out
