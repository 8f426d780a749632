"""KernelBench-style candidate with a deliberate compile error (for the Judge's trimmed log).

The kernel assigns to an undeclared variable ``outt`` and passes a ``float*`` where an ``int``
is expected: nvcc reports both with file:line, while the C++ binding itself is fine.
"""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_source = """
#include <torch/extension.h>

__global__ void relu_kernel(const float* x, float* out, int size) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx < size) {
        outt[idx] = fmaxf(x[idx], 0.0f);
    }
}

torch::Tensor relu_cuda(torch::Tensor x) {
    auto out = torch::empty_like(x);
    int size = x.numel();
    relu_kernel<<<(size + 255) / 256, 256>>>(x.data_ptr<float>(), out.data_ptr<float>(), out.data_ptr<float>());
    return out;
}
"""

cpp_source = "torch::Tensor relu_cuda(torch::Tensor x);"

relu_ext = load_inline(
    name="relu_ext",
    cpp_sources=cpp_source,
    cuda_sources=cuda_source,
    functions=["relu_cuda"],
    verbose=True,
)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.relu_ext = relu_ext

    def forward(self, x):
        return self.relu_ext.relu_cuda(x)
