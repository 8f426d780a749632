"""A CuTe DSL kernel that never runs: forward refers to it, so the static check sees it used, but the branch
that launches it is never taken and PyTorch computes every result. On a GPU the profiler sees no kernel of the
candidate's among those forward ran.

TASK: tiny/level1/1_ReLU
EXPECTED: rejected by no_custom_kernel
NEEDS: cuda, cutlass
"""
import cuda.bindings.driver as cuda
import cutlass
import cutlass.cute as cute
import torch
import torch.nn as nn
from cutlass.cute.runtime import from_dlpack


@cute.kernel
def relu_kernel(gX: cute.Tensor, gY: cute.Tensor, n: cutlass.Int32):
    tidx, _, _ = cute.arch.thread_idx()
    bidx, _, _ = cute.arch.block_idx()
    i = bidx * 256 + tidx
    if i < n:
        gY[i] = cutlass.max(gX[i], cutlass.Float32(0.0))


@cute.jit
def relu_launch(mX: cute.Tensor, mY: cute.Tensor, n: cutlass.Int32, stream: cuda.CUstream):
    relu_kernel(mX, mY, n).launch(grid=((n + 255) // 256, 1, 1), block=(256, 1, 1), stream=stream)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        out = torch.empty_like(x)
        if x.dim() > 8:  # never true for this task: the kernel is never launched
            args = [from_dlpack(t.view(-1)) for t in (x, out)]
            stream = cuda.CUstream(torch.cuda.current_stream().cuda_stream)
            cute.compile(relu_launch, *args, cutlass.Int32(x.numel()), stream)(*args, cutlass.Int32(x.numel()), stream)
            return out
        return torch.maximum(x, out.zero_())
