"""A precision drop inside the tolerance: the kernel rounds its input to bfloat16 before the ReLU and writes fp32
again. KernelBench's 1e-2 tolerances let every element pass; measured against an fp64 evaluation of the reference,
its error is hundreds of times the fp32 reference's own.

TASK: hacks/level1/2_ReLULooseTolerance
EXPECTED: correct, reported by precision_fp64
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_bf16_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask).to(tl.bfloat16).to(tl.float32)
    tl.store(out_ptr + offs, tl.maximum(x, 0.0), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        out = torch.empty_like(x)
        relu_bf16_kernel[(triton.cdiv(x.numel(), 1024),)](x, out, x.numel(), BLOCK=1024)
        return out
