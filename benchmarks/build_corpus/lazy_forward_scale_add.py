"""Build corpus, style lazy_forward: scale_add. Task tiny/level1/1_ReLU. The extension is built on the first forward call."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

SCALE_ADD_CUDA = r'''#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>

template <typename scalar_t>
__global__ void scale_add_kernel(const scalar_t* __restrict__ x, scalar_t* __restrict__ y, int64_t n) {
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) { float v = (float)x[i]; y[i] = fmaxf(v * 1.0f + 0.0f, 0.f); }
}

torch::Tensor scale_add_cuda(torch::Tensor x) {
    auto y = torch::empty_like(x);
    int64_t n = x.numel();
    const int threads = 256;
    const int64_t blocks = (n + threads - 1) / threads;
    AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "scale_add", [&] { scale_add_kernel<scalar_t><<<blocks, threads, 0, at::cuda::getCurrentCUDAStream()>>>(x.data_ptr<scalar_t>(), y.data_ptr<scalar_t>(), n); });
    return y;
}
'''
SCALE_ADD_CPP = "torch::Tensor scale_add_cuda(torch::Tensor x);"


class ModelNew(nn.Module):
    def __init__(self, *args):
        super().__init__()
        self._ext = None

    def forward(self, x):
        if self._ext is None:
            self._ext = load_inline(name="scale_add_lazy", cpp_sources=SCALE_ADD_CPP, cuda_sources=SCALE_ADD_CUDA,
                                    functions=["scale_add_cuda"], with_cuda=True)
        return self._ext.scale_add_cuda(x.contiguous())
