"""No kernel at all: a decorator of the candidate's own named `jit` made a plain PyTorch function count as a kernel,
for no_custom_kernel (and torch_compute under strict) alike. A decorator makes a kernel only when it resolves,
through the imports, to a kernel language's module (`triton.jit`, `cute.kernel`, `T.prim_func`, `numba.cuda.jit`).

TASK: tiny/level1/1_ReLU
EXPECTED: rejected by no_custom_kernel
"""
import torch
import torch.nn as nn


def jit(fn):
    return fn


@jit
def relu_kernel(x):
    return torch.relu(x)


class ModelNew(nn.Module):
    def forward(self, x):
        return relu_kernel(x)
