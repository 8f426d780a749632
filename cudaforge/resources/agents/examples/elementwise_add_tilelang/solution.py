import tilelang
import tilelang.language as T
import torch
import torch.nn as nn

BLOCK = 256


@tilelang.jit(out_idx=[-1])  # the last argument is the output: the kernel allocates and returns it
def add(n, dtype="float32"):
    @T.prim_func
    def add_main(A: T.Tensor((n,), dtype), B: T.Tensor((n,), dtype), C: T.Tensor((n,), dtype)):
        with T.Kernel(T.ceildiv(n, BLOCK), threads=BLOCK) as bx:
            for i in T.Parallel(BLOCK):
                idx = bx * BLOCK + i
                if idx < n:  # the last block may be partial
                    C[idx] = A[idx] + B[idx]

    return add_main


def tilelang_add(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    assert a.shape == b.shape and a.dtype == b.dtype, "tilelang_add: inputs must match in shape and dtype"
    a, b = a.contiguous(), b.contiguous()
    n = a.numel()
    if n == 0:
        return torch.empty_like(a)
    kernel = add(n, str(a.dtype).removeprefix("torch."))  # compiled once per (n, dtype), then cached
    return kernel(a.view(-1), b.view(-1)).view(a.shape)


class ModelNew(nn.Module):
    """Adds two tensors elementwise with a TileLang kernel."""

    def __init__(self) -> None:
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return tilelang_add(a, b)
