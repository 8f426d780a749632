"""A legitimate init-time transform (KernelBench level 2 problem 96 does this): ModelNew builds the same Linear
layer as the reference under the same seed, then folds a factor of 2 into its weights in __init__ and divides it
back out in the kernel. Copying the reference's weights over the candidate's would undo the fold and make it 2x
wrong; built from the seed, as KernelBench builds it, it is right.

TASK: tiny/level1/3_MatmulBiasReLU
EXPECTED: correct
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def half_relu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, tl.maximum(x * 0.5, 0.0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        with torch.no_grad():
            self.linear.weight.mul_(2.0)
            self.linear.bias.mul_(2.0)

    def forward(self, x):
        y = self.linear(x).contiguous()
        out = torch.empty_like(y)
        half_relu_kernel[(triton.cdiv(y.numel(), 1024),)](y, out, y.numel(), BLOCK=1024)
        return out
