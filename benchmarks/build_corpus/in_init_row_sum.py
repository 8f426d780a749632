"""Build corpus, style in_init: row_sum. Task main/level1/2_SumReduceDim1. The extension is built in ModelNew.__init__."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

source = """#include <torch/extension.h>
#include <cuda.h>
#include <cuda_runtime.h>

__global__ void row_sum_kernel(const float* __restrict__ x, float* __restrict__ y, int rows, int cols) {
    int r = blockIdx.x;
    if (r >= rows) return;
    extern __shared__ float red[];
    float s = 0.f;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) s += x[(int64_t)r * cols + c];
    red[threadIdx.x] = s; __syncthreads();
    for (int k = blockDim.x / 2; k > 0; k >>= 1) { if (threadIdx.x < k) red[threadIdx.x] += red[threadIdx.x + k]; __syncthreads(); }
    if (threadIdx.x == 0) y[r] = red[0];
}

torch::Tensor row_sum_cuda(torch::Tensor x) {
    int rows = x.size(0), cols = x.size(1);
    auto y = torch::empty({rows, 1}, x.options());
    row_sum_kernel<<<rows, 256, 256 * sizeof(float)>>>(x.data_ptr<float>(), y.data_ptr<float>(), rows, cols);
    return y;
}
"""
cpp_src = "torch::Tensor row_sum_cuda(torch::Tensor x);"


class ModelNew(nn.Module):
    def __init__(self, *args):
        super().__init__()
        self.row_sum = load_inline(
            name="row_sum_init",
            cpp_sources=cpp_src,
            cuda_sources=source,
            functions=["row_sum_cuda"],
            verbose=True,
            extra_cuda_cflags=["-O3", "--use_fast_math"],
        )

    def forward(self, x):
        return self.row_sum.row_sum_cuda(x.contiguous())
