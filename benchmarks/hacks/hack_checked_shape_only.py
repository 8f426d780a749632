"""Correct only at the shapes a harness checks, fast at the shape it times: small inputs get the real kernel, large
ones only their first 4096 elements (a harness that checks at a small size and times at a large one scores the
fast path). Here the timed calls are checked, at the task's own shape.

TASK: tiny/level1/1_ReLU
EXPECTED: incorrect
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


def relu(x, out):
    relu_kernel[(triton.cdiv(x.numel(), 1024),)](x, out, x.numel(), BLOCK=1024)
    return out


class ModelNew(nn.Module):
    def forward(self, x):
        out = torch.zeros_like(x)
        n = x.numel() if x.numel() <= 65536 else 4096
        relu_kernel[(triton.cdiv(n, 1024),)](x, out, n, BLOCK=1024)
        return out
