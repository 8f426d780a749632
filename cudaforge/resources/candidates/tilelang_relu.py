"""KernelBench-style TileLang candidate: ReLU on a (256, 1024) fp32 tensor (any shape: compiled once per size).

Needs a GPU and ``tilelang``.
"""

import tilelang
import tilelang.language as T
import torch
import torch.nn as nn

BLOCK = 256


@tilelang.jit(out_idx=[-1])
def relu(n, dtype="float32"):
    @T.prim_func
    def relu_main(X: T.Tensor((n,), dtype), Y: T.Tensor((n,), dtype)):
        with T.Kernel(T.ceildiv(n, BLOCK), threads=BLOCK) as bx:
            for i in T.Parallel(BLOCK):
                idx = bx * BLOCK + i
                if idx < n:
                    Y[idx] = T.max(X[idx], T.cast(0, dtype))

    return relu_main


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        return relu(x.numel())(x.view(-1)).view(x.shape)
