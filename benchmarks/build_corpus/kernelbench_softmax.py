"""Build corpus, style kernelbench: softmax. Task tiny/level1/2_Softmax."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_source = r'''#include <torch/extension.h>
#include <cuda_runtime.h>

__global__ void softmax_kernel(const float* __restrict__ x, float* __restrict__ y, int rows, int cols) {
    int r = blockIdx.x;
    if (r >= rows) return;
    extern __shared__ float red[];
    const float* xr = x + (int64_t)r * cols;
    float m = -INFINITY;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) m = fmaxf(m, xr[c]);
    red[threadIdx.x] = m; __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) { if (threadIdx.x < s) red[threadIdx.x] = fmaxf(red[threadIdx.x], red[threadIdx.x + s]); __syncthreads(); }
    m = red[0]; __syncthreads();
    float sum = 0.f;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) sum += expf(xr[c] - m);
    red[threadIdx.x] = sum; __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) { if (threadIdx.x < s) red[threadIdx.x] += red[threadIdx.x + s]; __syncthreads(); }
    sum = red[0];
    for (int c = threadIdx.x; c < cols; c += blockDim.x) y[(int64_t)r * cols + c] = expf(xr[c] - m) / sum;
}

torch::Tensor softmax_cuda(torch::Tensor x) {
    auto y = torch::empty_like(x);
    int rows = x.size(0), cols = x.size(1);
    softmax_kernel<<<rows, 256, 256 * sizeof(float)>>>(x.data_ptr<float>(), y.data_ptr<float>(), rows, cols);
    return y;
}
'''

cpp_source = "torch::Tensor softmax_cuda(torch::Tensor x);"

ext = load_inline(
    name="softmax_ext",
    cpp_sources=cpp_source,
    cuda_sources=cuda_source,
    functions=["softmax_cuda"],
    verbose=False,
    extra_cflags=[""],
    extra_ldflags=[""],
)


class ModelNew(nn.Module):
    def __init__(self, *args):
        super().__init__()
        self.ext = ext

    def forward(self, x):
        return self.ext.softmax_cuda(x.contiguous())
