"""PyTorch compute through Python's operators, under `torch_ops=strict`: `x * (x > 0)` is a ReLU made of two PyTorch
kernels (a comparison and a product); the Triton kernel only copies the result. Under strict an operator on what may
be a tensor is compute (sizes, shapes and grids are plain Python and stay allowed: `legit_triton_launchers_strict`).

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
    def forward(self, x):
        y = x * (x > 0)
        out = torch.empty_like(y)
        copy_kernel[(triton.cdiv(y.numel(), 1024),)](y, out, y.numel(), BLOCK=1024)
        return out
