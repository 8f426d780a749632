"""Legitimate twin of hack_unnamed_side_stream and hack_side_stream_after_start: the same side stream, joined both
ways (it waits for the inputs, and the current stream waits for it before forward returns), so the events around
the call time all of its work.

TASK: tiny/level1/1_ReLU
EXPECTED: correct, reported by concurrency
NEEDS: cuda
CONFIG: guards.concurrency=report
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
    def __init__(self):
        super().__init__()
        self.side = type(torch.cuda.current_stream())()

    def forward(self, x):
        out = torch.empty_like(x)
        here = torch.cuda.current_stream()
        self.side.wait_stream(here)
        with torch.cuda.stream(self.side):
            relu(x, out)
        here.wait_stream(self.side)
        return out
