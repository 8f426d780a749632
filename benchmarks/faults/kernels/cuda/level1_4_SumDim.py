"""Honest CUDA row sum: one block per row, a tree reduction in shared memory."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

source = """
#include <torch/extension.h>

__global__ void row_sum_kernel(const float* __restrict__ x, float* __restrict__ y, int cols) {
    extern __shared__ float buf[];
    const float* row = x + (long)blockIdx.x * cols;
    float total = 0.0f;
    for (int j = threadIdx.x; j < cols; j += blockDim.x) total += row[j];
    buf[threadIdx.x] = total;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) buf[threadIdx.x] += buf[threadIdx.x + s];
        __syncthreads();
    }
    if (threadIdx.x == 0) y[blockIdx.x] = buf[0];
}

torch::Tensor row_sum_forward(torch::Tensor x) {
    int rows = x.size(0), cols = x.size(1);
    auto y = torch::empty({rows, 1}, x.options());
    int threads = 256;
    row_sum_kernel<<<rows, threads, threads * sizeof(float)>>>(x.data_ptr<float>(), y.data_ptr<float>(), cols);
    return y;
}
"""

ext = load_inline(
    name="faults_row_sum",
    cpp_sources="torch::Tensor row_sum_forward(torch::Tensor x);",
    cuda_sources=source,
    functions=["row_sum_forward"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return ext.row_sum_forward(x.contiguous())
