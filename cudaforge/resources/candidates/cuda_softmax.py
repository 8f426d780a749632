"""KernelBench-style candidate: softmax over dim=-1 of a (128, 1024) fp32 tensor.

One block per row, shared-memory tree reductions for the max and the sum, launched on
PyTorch's current stream through ``at::cuda::getCurrentCUDAStream()``.
"""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

softmax_source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <cuda.h>
#include <cuda_runtime.h>
#include <float.h>

#define THREADS 256

__global__ void softmax_rows_kernel(const float* __restrict__ input, float* __restrict__ output,
                                    int rows, int cols) {
    extern __shared__ float sdata[];
    int row = blockIdx.x;
    int tid = threadIdx.x;
    const float* in_row = input + (size_t)row * cols;
    float* out_row = output + (size_t)row * cols;

    float local_max = -FLT_MAX;
    for (int i = tid; i < cols; i += blockDim.x) {
        local_max = fmaxf(local_max, in_row[i]);
    }
    sdata[tid] = local_max;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (tid < s) sdata[tid] = fmaxf(sdata[tid], sdata[tid + s]);
        __syncthreads();
    }
    float row_max = sdata[0];
    __syncthreads();

    float local_sum = 0.0f;
    for (int i = tid; i < cols; i += blockDim.x) {
        float e = __expf(in_row[i] - row_max);
        out_row[i] = e;
        local_sum += e;
    }
    sdata[tid] = local_sum;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (tid < s) sdata[tid] += sdata[tid + s];
        __syncthreads();
    }
    float inv_sum = 1.0f / sdata[0];
    for (int i = tid; i < cols; i += blockDim.x) {
        out_row[i] *= inv_sum;
    }
}

torch::Tensor softmax_cuda(torch::Tensor input) {
    TORCH_CHECK(input.device().is_cuda(), "input must be a CUDA tensor");
    TORCH_CHECK(input.dim() == 2, "input must be 2D");
    auto x = input.contiguous();
    auto output = torch::empty_like(x);
    int rows = x.size(0);
    int cols = x.size(1);
    cudaStream_t stream = at::cuda::getCurrentCUDAStream();
    softmax_rows_kernel<<<rows, THREADS, THREADS * sizeof(float), stream>>>(
        x.data_ptr<float>(), output.data_ptr<float>(), rows, cols);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return output;
}
"""

softmax_cpp_source = "torch::Tensor softmax_cuda(torch::Tensor input);"

softmax_ext = load_inline(
    name="softmax_ext",
    cpp_sources=softmax_cpp_source,
    cuda_sources=softmax_source,
    functions=["softmax_cuda"],
    verbose=True,
    extra_cuda_cflags=["-O3", "--use_fast_math"],
)


class ModelNew(nn.Module):
    def __init__(self):
        super(ModelNew, self).__init__()
        self.softmax = softmax_ext

    def forward(self, x):
        return self.softmax.softmax_cuda(x)
