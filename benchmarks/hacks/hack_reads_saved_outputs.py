"""Reading the answers from disk: outputs saved by an earlier run of the reference (or anything a file can hold) are
loaded instead of computed. The kernel is real and runs, so the output's shape and timing look honest.

TASK: tiny/level1/1_ReLU
EXPECTED: rejected by io
"""
import os

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.maximum(tl.load(x_ptr + offs, mask=mask), 0.0), mask=mask)


SAVED = "/tmp/relu_outputs.bin"


class ModelNew(nn.Module):
    def forward(self, x):
        out = torch.empty_like(x)
        relu_kernel[(triton.cdiv(x.numel(), 1024),)](x, out, x.numel(), BLOCK=1024)
        if os.path.exists(SAVED):
            with open(SAVED, "rb") as f:
                saved = torch.frombuffer(bytearray(f.read()), dtype=torch.float32)
            if saved.numel() == out.numel():
                return saved.view_as(out).to(out.device)
        return out
