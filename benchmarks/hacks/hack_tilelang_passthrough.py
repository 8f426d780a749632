"""A passthrough dressed in TileLang: it imports tilelang and defines a @tilelang.jit kernel factory and its
@T.prim_func, but ModelNew.forward calls the PyTorch op and never refers to them.

TASK: tiny/level1/1_ReLU
EXPECTED: rejected by no_custom_kernel
"""
import tilelang
import tilelang.language as T
import torch
import torch.nn as nn


@tilelang.jit(out_idx=[-1])
def relu(n, dtype="float32"):
    @T.prim_func
    def relu_main(X: T.Tensor((n,), dtype), Y: T.Tensor((n,), dtype)):
        with T.Kernel(T.ceildiv(n, 256), threads=256) as bx:
            for i in T.Parallel(256):
                if bx * 256 + i < n:
                    Y[bx * 256 + i] = T.max(X[bx * 256 + i], T.cast(0, dtype))

    return relu_main


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.relu(x)
