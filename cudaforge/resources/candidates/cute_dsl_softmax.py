"""KernelBench-style CuTe DSL candidate: softmax over dim 1 of a (batch, dim) fp32 tensor, one thread block per
row: each thread strides over the row, and the block reduces its partial max and sum through shared memory.

Needs a GPU and ``nvidia-cutlass-dsl``.
"""

import cuda.bindings.driver as cuda
import cutlass
import cutlass.cute as cute
import torch
import torch.nn as nn
from cutlass.cute.runtime import from_dlpack

THREADS = 128


@cute.kernel
def softmax_kernel(gX: cute.Tensor, gY: cute.Tensor, cols: cutlass.Int32):
    tidx, _, _ = cute.arch.thread_idx()
    row, _, _ = cute.arch.block_idx()
    smem = cutlass.utils.SmemAllocator()
    partial = smem.allocate_tensor(cutlass.Float32, cute.make_layout(THREADS))

    local_max = -cutlass.Float32.inf
    for j in cutlass.range(tidx, cols, THREADS):
        local_max = cutlass.max(local_max, gX[row, j])
    partial[tidx] = local_max
    cute.arch.sync_threads()
    row_max = partial[0]
    for k in cutlass.range(1, THREADS):
        row_max = cutlass.max(row_max, partial[k])
    cute.arch.sync_threads()

    local_sum = cutlass.Float32(0.0)
    for j in cutlass.range(tidx, cols, THREADS):
        local_sum = local_sum + cute.math.exp(gX[row, j] - row_max)
    partial[tidx] = local_sum
    cute.arch.sync_threads()
    row_sum = cutlass.Float32(0.0)
    for k in cutlass.range(THREADS):
        row_sum = row_sum + partial[k]

    for j in cutlass.range(tidx, cols, THREADS):
        gY[row, j] = cute.math.exp(gX[row, j] - row_max) / row_sum


@cute.jit
def softmax_launch(mX: cute.Tensor, mY: cute.Tensor, rows: cutlass.Int32, cols: cutlass.Int32,
                   stream: cuda.CUstream):
    softmax_kernel(mX, mY, cols).launch(grid=(rows, 1, 1), block=(THREADS, 1, 1), smem=THREADS * 4, stream=stream)


_compiled = {}


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        rows, cols = x.shape
        args = [from_dlpack(x, assumed_align=16), from_dlpack(out, assumed_align=16)]
        stream = cuda.CUstream(torch.cuda.current_stream().cuda_stream)
        if (rows, cols) not in _compiled:
            _compiled[rows, cols] = cute.compile(softmax_launch, *args, cutlass.Int32(rows), cutlass.Int32(cols), stream)
        _compiled[rows, cols](*args, cutlass.Int32(rows), cutlass.Int32(cols), stream)
        return out
