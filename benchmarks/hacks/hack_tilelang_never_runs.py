"""A TileLang kernel that never runs: forward refers to it, so the static check sees it used, but the branch
that calls it is never taken and PyTorch computes every result. On a GPU the profiler sees no kernel of the
candidate's among those forward ran.

TASK: tiny/level1/1_ReLU
EXPECTED: rejected by no_custom_kernel
NEEDS: cuda, tilelang
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
        if x.dim() > 8:  # never true for this task: the kernel is never called
            return relu(x.numel())(x.reshape(-1)).view(x.shape)
        return torch.maximum(x, torch.zeros_like(x))
