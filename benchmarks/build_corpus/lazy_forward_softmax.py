"""Build corpus, style lazy_forward: softmax. Task tiny/level1/2_Softmax. The extension is built on the first forward call."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

SOFTMAX_CUDA = r'''#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>

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
    softmax_kernel<<<rows, 256, 256 * sizeof(float), at::cuda::getCurrentCUDAStream()>>>(x.data_ptr<float>(), y.data_ptr<float>(), rows, cols);
    return y;
}
'''
SOFTMAX_CPP = "torch::Tensor softmax_cuda(torch::Tensor x);"


class ModelNew(nn.Module):
    def __init__(self, *args):
        super().__init__()
        self._ext = None

    def forward(self, x):
        if self._ext is None:
            self._ext = load_inline(name="softmax_lazy", cpp_sources=SOFTMAX_CPP, cuda_sources=SOFTMAX_CUDA,
                                    functions=["softmax_cuda"], with_cuda=True)
        return self._ext.softmax_cuda(x.contiguous())
