"""KernelBench-style candidate: relu(x @ W.T + b) for ``Model(in_features, out_features)``.

A tiled shared-memory GEMM with the bias add and ReLU fused in the epilogue. The weights live
in an ``nn.Linear`` called ``linear`` so the reference's state dict copies over unchanged.
Uses ``AT_DISPATCH_FLOATING_TYPES``, ``c10::cuda::CUDAGuard`` and the current stream.
"""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

fused_source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>

#define TILE 16

template <typename scalar_t>
__global__ void linear_bias_relu_kernel(const scalar_t* __restrict__ x,
                                        const scalar_t* __restrict__ w,
                                        const scalar_t* __restrict__ b,
                                        scalar_t* __restrict__ y,
                                        int M, int N, int K) {
    __shared__ scalar_t xs[TILE][TILE];
    __shared__ scalar_t ws[TILE][TILE + 1];
    int row = blockIdx.y * TILE + threadIdx.y;   // index into M
    int col = blockIdx.x * TILE + threadIdx.x;   // index into N
    scalar_t acc = 0;
    for (int t = 0; t < (K + TILE - 1) / TILE; ++t) {
        int kx = t * TILE + threadIdx.x;
        int kw = t * TILE + threadIdx.y;
        xs[threadIdx.y][threadIdx.x] = (row < M && kx < K) ? x[row * K + kx] : scalar_t(0);
        int wrow = blockIdx.x * TILE + threadIdx.x;
        ws[threadIdx.y][threadIdx.x] = (wrow < N && kw < K) ? w[wrow * K + kw] : scalar_t(0);
        __syncthreads();
        #pragma unroll
        for (int k = 0; k < TILE; ++k) {
            acc += xs[threadIdx.y][k] * ws[k][threadIdx.x];
        }
        __syncthreads();
    }
    if (row < M && col < N) {
        scalar_t v = acc + b[col];
        y[row * N + col] = v > scalar_t(0) ? v : scalar_t(0);
    }
}

torch::Tensor linear_bias_relu(torch::Tensor x, torch::Tensor weight, torch::Tensor bias) {
    TORCH_CHECK(x.is_cuda() && weight.is_cuda() && bias.is_cuda(), "all inputs must be CUDA tensors");
    TORCH_CHECK(x.dim() == 2 && weight.dim() == 2, "x and weight must be 2D");
    TORCH_CHECK(x.size(1) == weight.size(1), "in_features mismatch");
    const c10::cuda::CUDAGuard device_guard(x.device());
    auto xc = x.contiguous();
    auto wc = weight.contiguous();
    auto bc = bias.contiguous();
    const int M = xc.size(0);
    const int K = xc.size(1);
    const int N = wc.size(0);
    auto y = torch::empty({M, N}, xc.options());
    dim3 threads(TILE, TILE);
    dim3 blocks((N + TILE - 1) / TILE, (M + TILE - 1) / TILE);
    auto stream = at::cuda::getCurrentCUDAStream();
    AT_DISPATCH_FLOATING_TYPES(xc.scalar_type(), "linear_bias_relu", ([&] {
        linear_bias_relu_kernel<scalar_t><<<blocks, threads, 0, stream>>>(
            xc.data_ptr<scalar_t>(), wc.data_ptr<scalar_t>(), bc.data_ptr<scalar_t>(),
            y.data_ptr<scalar_t>(), M, N, K);
    }));
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return y;
}
"""

fused_cpp_source = """
torch::Tensor linear_bias_relu(torch::Tensor x, torch::Tensor weight, torch::Tensor bias);
"""

fused_linear_relu = load_inline(
    name="fused_linear_relu",
    cpp_sources=fused_cpp_source,
    cuda_sources=fused_source,
    functions=["linear_bias_relu"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super(ModelNew, self).__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.fused = fused_linear_relu

    def forward(self, x):
        return self.fused.linear_bias_relu(x, self.linear.weight, self.linear.bias)
