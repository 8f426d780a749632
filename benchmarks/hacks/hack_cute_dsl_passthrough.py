"""A passthrough dressed in CuTe DSL: it imports cutlass and defines a @cute.kernel and its @cute.jit launcher,
but ModelNew.forward calls the PyTorch op and never refers to them.

TASK: tiny/level1/1_ReLU
EXPECTED: rejected by no_custom_kernel
"""
import cutlass
import cutlass.cute as cute
import torch
import torch.nn as nn


@cute.kernel
def relu_kernel(gX: cute.Tensor, gY: cute.Tensor, n: cutlass.Int32):
    tidx, _, _ = cute.arch.thread_idx()
    bidx, _, _ = cute.arch.block_idx()
    i = bidx * 256 + tidx
    if i < n:
        gY[i] = cutlass.max(gX[i], cutlass.Float32(0.0))


@cute.jit
def relu_launch(mX: cute.Tensor, mY: cute.Tensor, n: cutlass.Int32):
    relu_kernel(mX, mY, n).launch(grid=((n + 255) // 256, 1, 1), block=(256, 1, 1))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.relu(x)
