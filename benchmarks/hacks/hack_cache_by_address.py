"""An output cache keyed by a fingerprint of the inputs that costs nothing to read (address, shape and
dtype): a harness that keeps its input tensors between calls hits it on every call. The verifier's inputs
arrive at the same addresses every call, with new values, so the cached output is stale.

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
        self.cache = {}

    def forward(self, x):
        key = (x.data_ptr(), tuple(x.shape), x.dtype)
        if key not in self.cache:
            self.cache[key] = relu(x, torch.empty_like(x))
        return self.cache[key]
