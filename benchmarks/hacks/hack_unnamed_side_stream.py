"""Off-stream work on a tiny task: the kernel runs on a stream made without naming the stream API
(`type(torch.cuda.current_stream())()`), never joined back. It starts while the timed stream still spins
through the timing lead, so the events around the call time nothing; on a 4 us task the host-side guards cannot
see it (issue 34 measured 3.6x at 2^18 elements). The CUPTI record of the timed calls finds its kernel before the
start event. The static concurrency guard rejects the stream too; it is set to report here, so the runtime
record is what rejects it.

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
        with torch.cuda.stream(self.side):
            relu(x, out)
        return out
