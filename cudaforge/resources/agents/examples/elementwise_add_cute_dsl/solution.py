import cuda.bindings.driver as cuda
import cutlass
import cutlass.cute as cute
import torch
import torch.nn as nn
from cutlass.cute.runtime import from_dlpack

THREADS = 256


@cute.kernel
def add_kernel(gA: cute.Tensor, gB: cute.Tensor, gC: cute.Tensor, n: cutlass.Int32):
    tidx, _, _ = cute.arch.thread_idx()
    bidx, _, _ = cute.arch.block_idx()
    i = bidx * THREADS + tidx
    if i < n:  # the last block may be partial
        gC[i] = gA[i] + gB[i]


@cute.jit
def add_launch(mA: cute.Tensor, mB: cute.Tensor, mC: cute.Tensor, n: cutlass.Int32, stream: cuda.CUstream):
    add_kernel(mA, mB, mC, n).launch(grid=((n + THREADS - 1) // THREADS, 1, 1), block=(THREADS, 1, 1), stream=stream)


_compiled = {}  # (dtype, number of elements) -> the compiled host function


def cute_add(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    assert a.shape == b.shape and a.dtype == b.dtype, "cute_add: inputs must match in shape and dtype"
    a, b = a.contiguous(), b.contiguous()
    out = torch.empty_like(a)
    n = out.numel()
    if n == 0:
        return out
    args = [from_dlpack(t.view(-1), assumed_align=16) for t in (a, b, out)]
    stream = cuda.CUstream(torch.cuda.current_stream().cuda_stream)  # launch on torch's current stream
    key = (a.dtype, n)
    if key not in _compiled:
        _compiled[key] = cute.compile(add_launch, *args, cutlass.Int32(n), stream)
    _compiled[key](*args, cutlass.Int32(n), stream)
    return out


class ModelNew(nn.Module):
    """Adds two tensors elementwise with a CuTe DSL kernel."""

    def __init__(self) -> None:
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return cute_add(a, b)
