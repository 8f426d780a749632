"""Work that outlives each call: at its first call the candidate starts a C++ thread that keeps launching spinning
kernels on a stream of its own while it is being called, between calls as well as during them (it idles 20 ms after
the last call). Its own calls are honest; the GPU it shares with the reference is not. Meant for the guard that times
the reference alone before any candidate code is loaded and again beside it (``reference_slowdown``), it does not
fire that one: on an H100 (benchmarks/results/2026-12-07_h100d) the reference's timed calls stayed as fast as alone
(the candidate's process and the reference's time-slice the GPU), while the candidate's own calls took 11x longer.
The CUPTI record catches it (kernels between calls and on a stream of its own); the host gap and the cross-check
are set to report here, as are the static thread and stream findings (``reference_slowdown``'s definition says why
no entry shows it).

TASK: main/level1/1_GELU
EXPECTED: rejected by untimed_work, reported by concurrency
NEEDS: cuda
CONFIG: guards.hidden_work=report, guards.timing_crosscheck=report, guards.concurrency=report, guards.speed_of_light=report
"""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

source = r"""
#include <torch/extension.h>
#include <cuda_runtime.h>
#include <atomic>
#include <chrono>
#include <thread>

__global__ void spin_kernel(long long cycles) {
    long long start = clock64();
    while (clock64() - start < cycles) {}
}

__global__ void gelu_kernel(const float* x, float* y, long n) {
    long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) { float v = x[i]; y[i] = 0.5f * v * (1.0f + erff(v * 0.70710678f)); }
}

static std::atomic<bool> started{false};
static std::atomic<long long> last_call_ns{0};

static long long now_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
        std::chrono::steady_clock::now().time_since_epoch()).count();
}

void start_background() {
    last_call_ns = now_ns();
    if (started.exchange(true)) return;
    std::thread([] {
        cudaStream_t stream;
        cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
        int sms = 0;
        cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
        while (true) {  // busy while it is being called (the timed phase), idle once the calls stop
            if (now_ns() - last_call_ns < 20000000LL) {
                spin_kernel<<<sms * 8, 256, 0, stream>>>(2000000LL);
                cudaStreamSynchronize(stream);
            } else {
                std::this_thread::sleep_for(std::chrono::milliseconds(1));
            }
        }
    }).detach();
}

torch::Tensor gelu(torch::Tensor x) {
    start_background();
    auto y = torch::empty_like(x);
    long n = x.numel();
    gelu_kernel<<<(n + 255) / 256, 256>>>(x.data_ptr<float>(), y.data_ptr<float>(), n);
    return y;
}
"""

ext = load_inline(name="gelu_background_work", cpp_sources="torch::Tensor gelu(torch::Tensor x);",
                  cuda_sources=source, functions=["gelu"])


class ModelNew(nn.Module):
    def forward(self, x):
        return ext.gelu(x)
