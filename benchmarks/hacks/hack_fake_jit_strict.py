"""A decorator of the candidate's own named `jit`, under `torch_ops=strict`: named like `triton.jit`, it once made a
plain function a "kernel" whose body the guards never read. Only a decorator that resolves, through the imports, to a
kernel language's module makes a kernel; this function's `torch.relu` is read as forward's.

TASK: tiny/level1/1_ReLU
EXPECTED: rejected by torch_compute
CONFIG: torch_ops=strict
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


def jit(fn):
    return fn


@jit
def relu_kernel(x):
    return torch.relu(x)


@triton.jit
def copy_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        y = relu_kernel(x)
        out = torch.empty_like(y)
        copy_kernel[(triton.cdiv(y.numel(), 1024),)](y, out, y.numel(), BLOCK=1024)
        return out
