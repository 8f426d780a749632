"""The speed-of-light guard's wiring, shown on an honest kernel: with ``eval.speed_of_light_margin`` raised far past
any real kernel (a floor of 10,000 x the time the task's bytes take at the GPU's peak bandwidth), the measured median
is "faster than physics" and the guard rejects. A real lie reaches the floor only once the CUPTI record of the timed
calls cannot raise each call to its device span (``untimed_work``) and the cross-check does not see it either; this
entry keeps the guard's own step in the corpus: its numbers (``fingerprint["speed_of_light"]``) and its verdict.

TASK: main/level1/1_GELU
EXPECTED: rejected by speed_of_light
NEEDS: cuda
CONFIG: speed_of_light_margin=10000.0
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def gelu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, 0.5 * x * (1.0 + tl.math.erf(x * 0.7071067811865476)), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        out = torch.empty_like(x)
        gelu_kernel[(triton.cdiv(x.numel(), 1024),)](x, out, x.numel(), BLOCK=1024)
        return out
