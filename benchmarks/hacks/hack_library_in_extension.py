"""Library kernels inside the candidate's own extension, under `torch_ops=strict`: the C++ function it builds calls
`torch::matmul` (cuBLAS), and only the bias-and-ReLU epilogue is a Triton kernel. The static guards see a call of the
candidate's extension (they do not read C++ for torch's ops); the profiler's share of library time on the GPU shows
the matmul.

TASK: tiny/level1/3_MatmulBiasReLU
EXPECTED: rejected by torch_compute
NEEDS: cuda
CONFIG: torch_ops=strict
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl
from torch.utils.cpp_extension import load_inline

CPP = r"""
#include <torch/extension.h>
torch::Tensor linear_nobias(torch::Tensor x, torch::Tensor w) { return torch::matmul(x, w.t()); }
"""

EXT = load_inline(name="library_in_extension", cpp_sources=CPP, functions=["linear_nobias"])


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
        y = EXT.linear_nobias(x.contiguous(), self.linear.weight)
        out = torch.empty_like(y)
        bias_relu_kernel[(triton.cdiv(y.numel(), 1024),)](y, self.linear.bias, out, y.numel(), y.shape[1], BLOCK=1024)
        return out
