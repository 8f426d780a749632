"""Honest CUDA linear + scale + ReLU: a tiled fp32 matmul (16x16 tiles in shared memory) with the bias, the scale and
the ReLU in its epilogue."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

source = """
#include <torch/extension.h>
#define TILE 16

__global__ void linear_scale_relu_kernel(const float* __restrict__ x, const float* __restrict__ w,
                                         const float* __restrict__ bias, const float* __restrict__ scale,
                                         float* __restrict__ y, int M, int N, int K) {
    __shared__ float xs[TILE][TILE];
    __shared__ float ws[TILE][TILE];
    int row = blockIdx.y * TILE + threadIdx.y;
    int col = blockIdx.x * TILE + threadIdx.x;
    float acc = 0.0f;
    for (int k0 = 0; k0 < K; k0 += TILE) {
        int kx = k0 + threadIdx.x;
        int kw = k0 + threadIdx.y;
        xs[threadIdx.y][threadIdx.x] = (row < M && kx < K) ? x[(long)row * K + kx] : 0.0f;
        ws[threadIdx.y][threadIdx.x] = (col < N && kw < K) ? w[(long)col * K + kw] : 0.0f;
        __syncthreads();
        for (int k = 0; k < TILE; ++k) acc += xs[threadIdx.y][k] * ws[k][threadIdx.x];
        __syncthreads();
    }
    if (row < M && col < N) {
        float v = (acc + bias[col]) * scale[col];
        y[(long)row * N + col] = v > 0.0f ? v : 0.0f;
    }
}

torch::Tensor linear_scale_relu(torch::Tensor x, torch::Tensor w, torch::Tensor bias, torch::Tensor scale) {
    int M = x.size(0), K = x.size(1), N = w.size(0);
    auto y = torch::empty({M, N}, x.options());
    dim3 threads(TILE, TILE);
    dim3 blocks((N + TILE - 1) / TILE, (M + TILE - 1) / TILE);
    linear_scale_relu_kernel<<<blocks, threads>>>(x.data_ptr<float>(), w.data_ptr<float>(), bias.data_ptr<float>(),
                                                  scale.data_ptr<float>(), y.data_ptr<float>(), M, N, K);
    return y;
}
"""

ext = load_inline(
    name="faults_linear_scale_relu",
    cpp_sources="torch::Tensor linear_scale_relu(torch::Tensor x, torch::Tensor w, torch::Tensor bias, torch::Tensor scale);",
    cuda_sources=source,
    functions=["linear_scale_relu"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.scale = nn.Parameter(torch.ones(out_features))

    def forward(self, x):
        return ext.linear_scale_relu(x.contiguous(), self.linear.weight.contiguous(), self.linear.bias, self.scale)
