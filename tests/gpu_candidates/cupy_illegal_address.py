"""A real kernel that writes through a bad pointer: an illegal memory access (CuPy/NVRTC)."""
import cupy as cp
import numpy as np
import torch
import torch.nn as nn

_kernel = cp.RawKernel(r'''
extern "C" __global__ void bad_store(float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float* wild = (float*)0x10;
    if (i < n) wild[i * 4096] = 1.0f;
}
''', "bad_store")


class ModelNew(nn.Module):
    def forward(self, x):
        out = torch.empty_like(x)
        n = x.numel()
        with cp.cuda.ExternalStream(torch.cuda.current_stream().cuda_stream):
            _kernel(((n + 255) // 256,), (256,), (np.uint64(out.data_ptr()), np.int32(n)))
        torch.cuda.synchronize()
        return out
