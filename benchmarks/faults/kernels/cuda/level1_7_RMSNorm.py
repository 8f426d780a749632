"""Honest CUDA RMSNorm: one block per row, the mean square reduced in shared memory, then the scale."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

source = """
#include <torch/extension.h>

__global__ void rmsnorm_kernel(const float* __restrict__ x, const float* __restrict__ w, float* __restrict__ y,
                               int cols, float eps) {
    extern __shared__ float buf[];
    const float* row = x + (long)blockIdx.x * cols;
    float* out = y + (long)blockIdx.x * cols;
    float q = 0.0f;
    for (int j = threadIdx.x; j < cols; j += blockDim.x) q += row[j] * row[j];
    buf[threadIdx.x] = q;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) buf[threadIdx.x] += buf[threadIdx.x + s];
        __syncthreads();
    }
    float rstd = rsqrtf(buf[0] / cols + eps);
    for (int j = threadIdx.x; j < cols; j += blockDim.x) out[j] = row[j] * rstd * w[j];
}

torch::Tensor rmsnorm_forward(torch::Tensor x, torch::Tensor w, double eps) {
    auto y = torch::empty_like(x);
    int rows = x.size(0), cols = x.size(1);
    int threads = 256;
    rmsnorm_kernel<<<rows, threads, threads * sizeof(float)>>>(
        x.data_ptr<float>(), w.data_ptr<float>(), y.data_ptr<float>(), cols, (float)eps);
    return y;
}
"""

ext = load_inline(
    name="faults_rmsnorm",
    cpp_sources="torch::Tensor rmsnorm_forward(torch::Tensor x, torch::Tensor w, double eps);",
    cuda_sources=source,
    functions=["rmsnorm_forward"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, dim, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return ext.rmsnorm_forward(x.contiguous(), self.weight, self.eps)
