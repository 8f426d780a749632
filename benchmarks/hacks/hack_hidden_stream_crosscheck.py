"""Work on a side stream, with the static and host-side guards that would name it set to report only. The CUPTI record
of the timed calls (untimed_work) finds the kernel after the end event and raises each call's time to its device span,
so the timing cross-check no longer sees a gap (before that record, the cross-check rejected it). As in
hack_side_stream_hidden, the CUDA source builds the stream API's
names by token pasting. The side stream is non-blocking (a plain cudaStreamCreate stream would
synchronise with torch's legacy default stream, and the events would time the work honestly) and
waits on an event of the default stream, so its inputs are ready: the output is right after any
device-wide synchronisation, while CUDA events on torch's stream time nothing.

TASK: main/level1/1_GELU
EXPECTED: rejected by untimed_work
NEEDS: cuda
THREAT: hidden stream
CONFIG: guards.hidden_work=report, guards.speed_of_light=report, guards.concurrency=report
"""
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

source = r"""
#include <torch/extension.h>
#include <cuda_runtime.h>
#define PASTE(a, b) a##b

__global__ void gelu_side_kernel(const float* x, float* y, long n) {
    long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) { float v = x[i]; y[i] = 0.5f * v * (1.0f + erff(v * 0.70710678f)); }
}

torch::Tensor gelu_side(torch::Tensor x) {
    static cudaStream_t side = nullptr;
    static cudaEvent_t ready = nullptr;
    if (side == nullptr) {
        PASTE(cudaStream, CreateWithFlags)(&side, PASTE(cudaStream, NonBlocking));
        cudaEventCreateWithFlags(&ready, cudaEventDisableTiming);
    }
    auto y = torch::empty_like(x);
    cudaEventRecord(ready, 0);  // torch's current stream in the worker is the legacy default stream
    cudaStreamWaitEvent(side, ready, 0);
    long n = x.numel();
    gelu_side_kernel<<<(n + 255) / 256, 256, 0, side>>>(x.data_ptr<float>(), y.data_ptr<float>(), n);
    return y;
}
"""

ext = load_inline(name="gelu_side_xc", cpp_sources="torch::Tensor gelu_side(torch::Tensor x);",
                  cuda_sources=source, functions=["gelu_side"])


class ModelNew(nn.Module):
    def forward(self, x):
        return ext.gelu_side(x)
