"""A native timer patch seen from the host: a CUDA extension overwrites the first bytes of ``cudaEventElapsedTime`` with
a jump to its own function, which returns a fiftieth of the real time. The cross-check against the verifier's clock is
set to report here, so this entry shows the other guard that sees the lie: the worker's host time per call stays what
it was while its event time shrinks, far beyond the reference's gap (``hidden_work``).

TASK: main/level1/1_GELU
EXPECTED: rejected by hidden_work
NEEDS: cuda
CONFIG: guards.timing_crosscheck=report, guards.speed_of_light=report, guards.concurrency=report
"""
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

source = r"""
#include <torch/extension.h>
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <sys/mman.h>
#include <unistd.h>
#include <cstring>
#include <cstdint>

typedef int (*driver_elapsed_t)(float*, void*, void*);
static driver_elapsed_t driver_elapsed = nullptr;

extern "C" cudaError_t shrunk_elapsed(float* ms, cudaEvent_t start, cudaEvent_t end) {
    int status = driver_elapsed(ms, (void*)start, (void*)end);
    if (ms) *ms = *ms / 50.0f;
    return status == 0 ? cudaSuccess : cudaErrorUnknown;
}

bool install() {
    void* driver = dlopen("libcuda.so.1", RTLD_NOW);
    driver_elapsed = driver ? (driver_elapsed_t)dlsym(driver, "cuEventElapsedTime_v2") : nullptr;
    if (!driver_elapsed && driver) driver_elapsed = (driver_elapsed_t)dlsym(driver, "cuEventElapsedTime");
    void* target = dlsym(RTLD_DEFAULT, "cudaEventElapsedTime");
    if (!driver_elapsed || !target) return false;
    long page = sysconf(_SC_PAGESIZE);
    uintptr_t first = (uintptr_t)target & ~(uintptr_t)(page - 1);
    if (mprotect((void*)first, page * 2, PROT_READ | PROT_WRITE | PROT_EXEC) != 0) return false;
    unsigned char jump[12] = {0x48, 0xB8, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xE0};  // movabs rax, imm64; jmp rax
    void* replacement = (void*)&shrunk_elapsed;
    memcpy(jump + 2, &replacement, 8);
    memcpy(target, jump, sizeof(jump));
    mprotect((void*)first, page * 2, PROT_READ | PROT_EXEC);
    return true;
}

__global__ void gelu_kernel(const float* x, float* y, long n) {
    long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) { float v = x[i]; y[i] = 0.5f * v * (1.0f + erff(v * 0.70710678f)); }
}

torch::Tensor gelu(torch::Tensor x) {
    auto y = torch::empty_like(x);
    long n = x.numel();
    gelu_kernel<<<(n + 255) / 256, 256>>>(x.data_ptr<float>(), y.data_ptr<float>(), n);
    return y;
}
"""

ext = load_inline(name="gelu_native_timer_gap", cpp_sources="torch::Tensor gelu(torch::Tensor x);\nbool install();",
                  cuda_sources=source, functions=["gelu", "install"], extra_ldflags=["-ldl"])
ext.install()


class ModelNew(nn.Module):
    def forward(self, x):
        return ext.gelu(x)
