"""An L2 persistence window left set across calls: the candidate reserves the L2's persisting part and marks its
input's addresses persisting on its stream, hoping that what the next call reads (the evaluator writes the next
inputs to the same place) is still in the L2 after the flush. The verifier resets persisting lines before every
timed call, so the window buys nothing there: the candidate times like its twin without the window
(tests/test_gpu_eval.py compares the two). Back to back, in the timing cross-check's batch, nothing resets the
lines it left persisting, and its own next calls slow down (H200, 2026-12-02: 2.6 ms per timed call, 5.5 ms per
call back to back): the cross-check rejects it, which is the right answer for a kernel whose calls slow each other.

TASK: main/level1/3_Softmax
EXPECTED: rejected by timing_crosscheck
NEEDS: cuda
THREAT: L2 persistence window
CONFIG: guards.concurrency=report
"""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

source = r"""
#include <torch/extension.h>
#include <cuda_runtime.h>

__global__ void softmax_rows(const float* x, float* y, int cols) {
    const float* row = x + (long)blockIdx.x * cols;
    float* out = y + (long)blockIdx.x * cols;
    __shared__ float red[32];
    float m = -INFINITY;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) m = fmaxf(m, row[c]);
    for (int o = 16; o > 0; o /= 2) m = fmaxf(m, __shfl_xor_sync(0xffffffff, m, o));
    if (threadIdx.x % 32 == 0) red[threadIdx.x / 32] = m;
    __syncthreads();
    if (threadIdx.x < 32) {
        m = threadIdx.x < blockDim.x / 32 ? red[threadIdx.x] : -INFINITY;
        for (int o = 16; o > 0; o /= 2) m = fmaxf(m, __shfl_xor_sync(0xffffffff, m, o));
        if (threadIdx.x == 0) red[0] = m;
    }
    __syncthreads();
    m = red[0];
    __syncthreads();
    float s = 0.f;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) s += __expf(row[c] - m);
    for (int o = 16; o > 0; o /= 2) s += __shfl_xor_sync(0xffffffff, s, o);
    if (threadIdx.x % 32 == 0) red[threadIdx.x / 32] = s;
    __syncthreads();
    if (threadIdx.x < 32) {
        s = threadIdx.x < blockDim.x / 32 ? red[threadIdx.x] : 0.f;
        for (int o = 16; o > 0; o /= 2) s += __shfl_xor_sync(0xffffffff, s, o);
        if (threadIdx.x == 0) red[0] = s;
    }
    __syncthreads();
    float inv = 1.f / red[0];
    for (int c = threadIdx.x; c < cols; c += blockDim.x) out[c] = __expf(row[c] - m) * inv;
}

torch::Tensor softmax(torch::Tensor x, bool persist) {
    auto y = torch::empty_like(x);
    if (persist) {
        static bool reserved = false;
        static cudaDeviceProp prop;  // queried once: cudaGetDeviceProperties costs milliseconds of host time
        if (!reserved) {
            int device = 0;
            cudaGetDevice(&device);
            cudaGetDeviceProperties(&prop, device);
            cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, prop.persistingL2CacheMaxSize);
            reserved = true;
        }
        cudaStreamAttrValue attr = {};
        attr.accessPolicyWindow.base_ptr = x.data_ptr();
        attr.accessPolicyWindow.num_bytes = std::min((size_t)prop.accessPolicyMaxWindowSize, (size_t)x.nbytes());
        attr.accessPolicyWindow.hitRatio = 1.0f;
        attr.accessPolicyWindow.hitProp = cudaAccessPropertyPersisting;
        attr.accessPolicyWindow.missProp = cudaAccessPropertyStreaming;
        cudaStreamSetAttribute(0, cudaStreamAttributeAccessPolicyWindow, &attr);
    }
    softmax_rows<<<x.size(0), 256>>>(x.data_ptr<float>(), y.data_ptr<float>(), (int)x.size(1));
    return y;
}
"""

ext = load_inline(name="softmax_l2_window", cpp_sources="torch::Tensor softmax(torch::Tensor x, bool persist);",
                  cuda_sources=source, functions=["softmax"])
PERSIST = True


class ModelNew(nn.Module):
    def forward(self, x):
        return ext.softmax(x, PERSIST)
