"""Off-stream work that waits for its inputs: the side stream waits on the current stream (so it starts after the
start event, with the inputs ready) but the current stream never waits on it, so the end event is recorded before
the kernel ends. The CUPTI record finds the kernel still running after the end marker.

TASK: tiny/level1/1_ReLU
EXPECTED: rejected by untimed_work, reported by concurrency
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
        self.side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(self.side):
            relu(x, out)
        return out
