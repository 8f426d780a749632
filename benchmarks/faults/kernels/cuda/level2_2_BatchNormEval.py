"""Honest CUDA BatchNorm (eval mode): one thread per element, the feature's running statistics and affine
parameters read per element."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

source = """
#include <torch/extension.h>

__global__ void batchnorm_kernel(const float* __restrict__ x, const float* __restrict__ mean,
                                 const float* __restrict__ var, const float* __restrict__ w,
                                 const float* __restrict__ b, float* __restrict__ y, int n, int features, float eps) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        int f = i % features;
        y[i] = (x[i] - mean[f]) * rsqrtf(var[f] + eps) * w[f] + b[f];
    }
}

torch::Tensor batchnorm_forward(torch::Tensor x, torch::Tensor mean, torch::Tensor var, torch::Tensor w,
                                torch::Tensor b, double eps) {
    auto y = torch::empty_like(x);
    int n = x.numel();
    int threads = 256;
    int blocks = (n + threads - 1) / threads;
    batchnorm_kernel<<<blocks, threads>>>(x.data_ptr<float>(), mean.data_ptr<float>(), var.data_ptr<float>(),
                                          w.data_ptr<float>(), b.data_ptr<float>(), y.data_ptr<float>(), n,
                                          x.size(1), (float)eps);
    return y;
}
"""

ext = load_inline(
    name="faults_batchnorm",
    cpp_sources="torch::Tensor batchnorm_forward(torch::Tensor x, torch::Tensor mean, torch::Tensor var, torch::Tensor w, torch::Tensor b, double eps);",
    cuda_sources=source,
    functions=["batchnorm_forward"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.bn = nn.BatchNorm1d(features)

    def forward(self, x):
        bn = self.bn
        return ext.batchnorm_forward(x.contiguous(), bn.running_mean, bn.running_var, bn.weight, bn.bias, bn.eps)
