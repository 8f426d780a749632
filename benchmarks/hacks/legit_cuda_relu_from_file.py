"""Legitimate: a CUDA ReLU whose source is written to a `.cu` file in a temporary folder and built with
`torch.utils.cpp_extension.load`, as file-based extensions are. Writing a CUDA source, under a name the guards can
read, is no dynamic code: it goes through the build path like `load_inline`.

TASK: tiny/level1/1_ReLU
EXPECTED: correct
NEEDS: cuda
"""
import os
import tempfile

import torch.nn as nn
from torch.utils.cpp_extension import load

CUDA_SOURCE = r"""
#include <torch/extension.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAStream.h>

__global__ void relu_kernel(const float* __restrict__ x, float* __restrict__ y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = fmaxf(x[i], 0.0f);
}

torch::Tensor relu_forward(torch::Tensor x) {
    TORCH_CHECK(x.is_cuda() && x.is_contiguous() && x.scalar_type() == torch::kFloat32);
    auto y = torch::empty_like(x);
    int n = x.numel();
    auto stream = c10::cuda::getCurrentCUDAStream();
    relu_kernel<<<(n + 255) / 256, 256, 0, stream>>>(x.data_ptr<float>(), y.data_ptr<float>(), n);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return y;
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("relu_forward", &relu_forward); }
"""


def _write_source(build_dir):
    os.makedirs(build_dir, exist_ok=True)
    path = os.path.join(build_dir, "relu_kernel.cu")
    with open(path, "w") as f:
        f.write(CUDA_SOURCE)
    return path


ext = load(name="legit_relu_from_file_ext", sources=[_write_source(tempfile.mkdtemp())], extra_cuda_cflags=["-O3"])


class ModelNew(nn.Module):
    def forward(self, x):
        return ext.relu_forward(x.contiguous())
