"""Build corpus, style pybind: row_sum. Task main/level1/2_SumReduceDim1."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CUDA_SRC = r'''#include <torch/extension.h>

__global__ void row_sum_kernel(const float* __restrict__ x, float* __restrict__ y, int rows, int cols) {
    int r = blockIdx.x;
    if (r >= rows) return;
    extern __shared__ float red[];
    float s = 0.f;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) s += x[(int64_t)r * cols + c];
    red[threadIdx.x] = s; __syncthreads();
    for (int k = blockDim.x / 2; k > 0; k >>= 1) { if (threadIdx.x < k) red[threadIdx.x] += red[threadIdx.x + k]; __syncthreads(); }
    if (threadIdx.x == 0) y[r] = red[0];
}

torch::Tensor row_sum_cuda(torch::Tensor x) {
    int rows = x.size(0), cols = x.size(1);
    auto y = torch::empty({rows, 1}, x.options());
    row_sum_kernel<<<rows, 256, 256 * sizeof(float)>>>(x.data_ptr<float>(), y.data_ptr<float>(), rows, cols);
    return y;
}
'''

CPP_SRC = r'''#include <torch/extension.h>
torch::Tensor row_sum_cuda(torch::Tensor x);

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
    m.def("row_sum_cuda", &row_sum_cuda, "row_sum (CUDA)");
}
'''

row_sum_module = load_inline(name="row_sum_pybind", cpp_sources=[CPP_SRC], cuda_sources=[CUDA_SRC], extra_cuda_cflags=["-O3"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self, *args):
        super().__init__()

    def forward(self, x):
        return row_sum_module.row_sum_cuda(x.contiguous())
