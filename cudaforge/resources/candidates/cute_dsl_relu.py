"""KernelBench-style CuTe DSL candidate: ReLU on a (256, 1024) fp32 tensor (any shape: compiled once per size).

Needs a GPU and ``nvidia-cutlass-dsl`` (CUTLASS 4's Python DSL).
"""

import cuda.bindings.driver as cuda
import cutlass
import cutlass.cute as cute
import torch
import torch.nn as nn
from cutlass.cute.runtime import from_dlpack

THREADS = 256


@cute.kernel
def relu_kernel(gX: cute.Tensor, gY: cute.Tensor, n: cutlass.Int32):
    tidx, _, _ = cute.arch.thread_idx()
    bidx, _, _ = cute.arch.block_idx()
    i = bidx * THREADS + tidx
    if i < n:
        gY[i] = cutlass.max(gX[i], cutlass.Float32(0.0))


@cute.jit
def relu_launch(mX: cute.Tensor, mY: cute.Tensor, n: cutlass.Int32, stream: cuda.CUstream):
    relu_kernel(mX, mY, n).launch(grid=((n + THREADS - 1) // THREADS, 1, 1), block=(THREADS, 1, 1), stream=stream)


_compiled = {}


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        args = [from_dlpack(t.view(-1), assumed_align=16) for t in (x, out)]
        stream = cuda.CUstream(torch.cuda.current_stream().cuda_stream)
        if n not in _compiled:
            _compiled[n] = cute.compile(relu_launch, *args, cutlass.Int32(n), stream)
        _compiled[n](*args, cutlass.Int32(n), stream)
        return out
