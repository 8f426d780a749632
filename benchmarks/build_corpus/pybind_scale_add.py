"""Build corpus, style pybind: scale_add. Task tiny/level1/1_ReLU."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CUDA_SRC = r'''#include <torch/extension.h>

__global__ void scale_add_kernel(const float* __restrict__ x, float* __restrict__ y, int64_t n) {
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) { float v = x[i]; y[i] = fmaxf(v * 1.0f + 0.0f, 0.f); }
}

torch::Tensor scale_add_cuda(torch::Tensor x) {
    auto y = torch::empty_like(x);
    int64_t n = x.numel();
    const int threads = 256;
    const int64_t blocks = (n + threads - 1) / threads;
    scale_add_kernel<<<blocks, threads>>>(x.data_ptr<float>(), y.data_ptr<float>(), n);
    return y;
}
'''

CPP_SRC = r'''#include <torch/extension.h>
torch::Tensor scale_add_cuda(torch::Tensor x);

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
    m.def("scale_add_cuda", &scale_add_cuda, "scale_add (CUDA)");
}
'''

scale_add_module = load_inline(name="scale_add_pybind", cpp_sources=[CPP_SRC], cuda_sources=[CUDA_SRC], extra_cuda_cflags=["-O3"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self, *args):
        super().__init__()

    def forward(self, x):
        return scale_add_module.scale_add_cuda(x.contiguous())
