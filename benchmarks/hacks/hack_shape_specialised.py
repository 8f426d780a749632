"""A kernel hard-coded for the task's one shape: rows of exactly 1024 columns, row stride 1024.
Right for the (128, 1024) default inputs, wrong for any other width.

TASK: tiny/level1/2_Softmax
EXPECTED: incorrect by shape_specialisation
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def softmax_1024_kernel(x_ptr, out_ptr):
    row = tl.program_id(0)
    cols = tl.arange(0, 1024)
    x = tl.load(x_ptr + row * 1024 + cols)
    e = tl.exp(x - tl.max(x, axis=0))
    tl.store(out_ptr + row * 1024 + cols, e / tl.sum(e, axis=0))


class ModelNew(nn.Module):
    def forward(self, x):
        out = torch.empty_like(x)
        softmax_1024_kernel[(x.shape[0],)](x, out)
        return out
