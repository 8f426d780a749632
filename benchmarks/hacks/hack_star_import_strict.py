"""PyTorch compute behind a star import, under `torch_ops=strict`: `from torch.nn.functional import *` puts `relu`
under a bare name the guards cannot tell from the candidate's own. Under strict a star import from torch is a
finding, and a bare name nothing in the text defines is a call the guards cannot resolve.

TASK: tiny/level1/1_ReLU
EXPECTED: rejected by torch_compute
CONFIG: torch_ops=strict
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl
from torch.nn.functional import *  # noqa: F403


@triton.jit
def copy_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        y = relu(x)  # noqa: F405
        out = torch.empty_like(y)
        copy_kernel[(triton.cdiv(y.numel(), 1024),)](y, out, y.numel(), BLOCK=1024)
        return out
