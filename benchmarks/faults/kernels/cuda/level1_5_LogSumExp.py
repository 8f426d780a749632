"""Honest CUDA log-sum-exp over rows: one block per row, the row maximum taken out before exp."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

source = """
#include <torch/extension.h>

__global__ void logsumexp_kernel(const float* __restrict__ x, float* __restrict__ y, int cols) {
    extern __shared__ float buf[];
    const float* row = x + (long)blockIdx.x * cols;
    float m = -INFINITY;
    for (int j = threadIdx.x; j < cols; j += blockDim.x) m = fmaxf(m, row[j]);
    buf[threadIdx.x] = m;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) buf[threadIdx.x] = fmaxf(buf[threadIdx.x], buf[threadIdx.x + s]);
        __syncthreads();
    }
    float row_max = buf[0];
    __syncthreads();
    float total = 0.0f;
    for (int j = threadIdx.x; j < cols; j += blockDim.x) total += expf(row[j] - row_max);
    buf[threadIdx.x] = total;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) buf[threadIdx.x] += buf[threadIdx.x + s];
        __syncthreads();
    }
    if (threadIdx.x == 0) y[blockIdx.x] = logf(buf[0]) + row_max;
}

torch::Tensor logsumexp_forward(torch::Tensor x) {
    int rows = x.size(0), cols = x.size(1);
    auto y = torch::empty({rows}, x.options());
    int threads = 256;
    logsumexp_kernel<<<rows, threads, threads * sizeof(float)>>>(x.data_ptr<float>(), y.data_ptr<float>(), cols);
    return y;
}
"""

ext = load_inline(
    name="faults_logsumexp",
    cpp_sources="torch::Tensor logsumexp_forward(torch::Tensor x);",
    cuda_sources=source,
    functions=["logsumexp_forward"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return ext.logsumexp_forward(x.contiguous())
