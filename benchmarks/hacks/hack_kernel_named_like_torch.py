"""A passthrough that names an unused kernel of its own after torch's elementwise kernel: forward refers to the
extension (on a branch never taken) and computes with torch.relu. Counting profiled kernels as the candidate's own by
base name alone, torch's vectorized_elementwise_kernel would be taken for the candidate's, and the GPU's
no_custom_kernel check would pass it; a kernel in torch's namespace is never the candidate's.

TASK: tiny/level1/1_ReLU
EXPECTED: rejected by no_custom_kernel
NEEDS: cuda
"""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CUDA = r"""
#include <torch/extension.h>
__global__ void vectorized_elementwise_kernel(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i] > 0.f ? x[i] : 0.f;
}
torch::Tensor unused(torch::Tensor x) {
    auto y = torch::empty_like(x);
    vectorized_elementwise_kernel<<<(x.numel() + 255) / 256, 256>>>(x.data_ptr<float>(), y.data_ptr<float>(), x.numel());
    return y;
}
"""

ext = load_inline(name="named_like_torch", cpp_sources="torch::Tensor unused(torch::Tensor x);", cuda_sources=CUDA,
                  functions=["unused"])


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        if x.dim() > 8:  # never: the kernel of its own never runs
            return ext.unused(x)
        return torch.relu(x)
