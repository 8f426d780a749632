"""A learned scale left out: the candidate multiplies by a vector of ones it makes on every call instead of the
model's ``scale`` parameter. At their initial values (ones) the two agree; a trained model's scale would not. It
builds no tensor the evaluator can hand the varied scale to, so both models run with their initial values and the
verdict says so (a report: the check could not be made, which is not proof of a wrong kernel).

TASK: hacks/level1/3_ScaledLinear
EXPECTED: correct, reported by parameters_not_varied
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def scale_relu_kernel(h_ptr, s_ptr, y_ptr, n, cols, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    h = tl.load(h_ptr + offs, mask=mask)
    s = tl.load(s_ptr + offs % cols, mask=mask)
    tl.store(y_ptr + offs, tl.maximum(h * s, 0.0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.linear = nn.Linear(features, features)

    def forward(self, x):
        h = torch.nn.functional.linear(x, self.linear.weight, self.linear.bias).contiguous()
        y = torch.empty_like(h)
        ones = torch.ones_like(h[0])
        scale_relu_kernel[(triton.cdiv(h.numel(), 1024),)](h, ones, y, h.numel(), h.shape[1], BLOCK=1024)
        return y
