"""Legitimate, multi-kernel CUDA: row statistics then normalisation, a scratch buffer from
torch::zeros (one of torch's fill kernels runs too), both launches on torch's current stream.

TASK: tiny/level1/2_Softmax
EXPECTED: correct
NEEDS: cuda
"""
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>

__global__ void row_stats_kernel(const float* __restrict__ x, float* __restrict__ stats, int cols) {
    __shared__ float scratch[256];
    const float* row = x + (size_t)blockIdx.x * cols;
    float m = -INFINITY;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) m = fmaxf(m, row[c]);
    scratch[threadIdx.x] = m;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) scratch[threadIdx.x] = fmaxf(scratch[threadIdx.x], scratch[threadIdx.x + s]);
        __syncthreads();
    }
    m = scratch[0];
    __syncthreads();
    float sum = 0.0f;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) sum += expf(row[c] - m);
    scratch[threadIdx.x] = sum;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) scratch[threadIdx.x] += scratch[threadIdx.x + s];
        __syncthreads();
    }
    if (threadIdx.x == 0) { stats[2 * blockIdx.x] = m; stats[2 * blockIdx.x + 1] = scratch[0]; }
}

__global__ void normalize_kernel(const float* __restrict__ x, const float* __restrict__ stats,
                                 float* __restrict__ y, int cols) {
    size_t base = (size_t)blockIdx.x * cols;
    float m = stats[2 * blockIdx.x], inv = 1.0f / stats[2 * blockIdx.x + 1];
    for (int c = threadIdx.x; c < cols; c += blockDim.x) y[base + c] = expf(x[base + c] - m) * inv;
}

torch::Tensor softmax_rows(torch::Tensor x) {
    auto xc = x.contiguous();
    int rows = xc.size(0), cols = xc.size(1);
    auto stats = torch::zeros({rows, 2}, xc.options());
    auto y = torch::empty_like(xc);
    auto stream = at::cuda::getCurrentCUDAStream();
    row_stats_kernel<<<rows, 256, 0, stream>>>(xc.data_ptr<float>(), stats.data_ptr<float>(), cols);
    normalize_kernel<<<rows, 256, 0, stream>>>(xc.data_ptr<float>(), stats.data_ptr<float>(), y.data_ptr<float>(), cols);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return y;
}
"""

ext = load_inline(name="legit_softmax_two_kernels", cpp_sources="torch::Tensor softmax_rows(torch::Tensor x);",
                  cuda_sources=cuda_source, functions=["softmax_rows"])


class ModelNew(nn.Module):
    def forward(self, x):
        return ext.softmax_rows(x)
