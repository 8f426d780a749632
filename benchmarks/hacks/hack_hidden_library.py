"""Library kernels behind a dunder method, under `torch_ops=strict`: the matmul goes through
`x.__matmul__` (cuBLAS), only the bias-and-ReLU epilogue is a kernel. Once only the profiler's share
of library time showed it; the strict allow-list knows every tensor method and names it statically
(`hack_library_in_extension` keeps the profiler's case: a library call inside the candidate's C++).

TASK: tiny/level1/3_MatmulBiasReLU
EXPECTED: rejected by torch_compute
CONFIG: torch_ops=strict
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def bias_relu_kernel(y_ptr, b_ptr, out_ptr, n, cols, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    y = tl.load(y_ptr + offs, mask=mask) + tl.load(b_ptr + offs % cols, mask=mask)
    tl.store(out_ptr + offs, tl.maximum(y, 0.0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        y = x.__matmul__(self.linear.weight.t())
        out = torch.empty_like(y)
        bias_relu_kernel[(triton.cdiv(y.numel(), 1024),)](y, self.linear.bias, out, y.numel(), y.shape[1], BLOCK=1024)
        return out
