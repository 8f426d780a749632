"""PyTorch compute rebuilt from a pickle, under `torch_ops=strict`: the bytes name `torch.relu`, which the text
never does. The Triton kernel only copies the result.

TASK: tiny/level1/1_ReLU
EXPECTED: rejected by dynamic_code
CONFIG: torch_ops=strict
"""
import pickle

import torch
import torch.nn as nn
import triton
import triton.language as tl

ACTIVATION = pickle.loads(b"ctorch\nrelu\n.")


@triton.jit
def copy_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        y = ACTIVATION(x)
        out = torch.empty_like(y)
        copy_kernel[(triton.cdiv(y.numel(), 1024),)](y, out, y.numel(), BLOCK=1024)
        return out
