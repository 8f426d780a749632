"""Work done in warm-up and replayed: the first calls compute (and keep their output in a device buffer); every later
call copies the buffer back, a copy that is cheaper than the kernel. A harness that checks only its first calls, or
times calls on the inputs it checked, is fooled. Here every timed call is checked on fresh inputs: the replayed output is an earlier call's
(result_caching names it).

TASK: tiny/level1/1_ReLU
EXPECTED: incorrect by result_caching
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
    def __init__(self):
        super().__init__()
        self.calls = 0
        self.kept = None

    def forward(self, x):
        self.calls += 1
        if self.kept is None or self.calls < 40:  # past the correctness phase: replay
            self.kept = relu(x, torch.empty_like(x))
            return self.kept
        return self.kept.clone()
