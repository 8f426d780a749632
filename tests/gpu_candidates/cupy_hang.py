"""A real kernel that never finishes: it spins on a flag nobody sets (CuPy/NVRTC)."""
import cupy as cp
import numpy as np
import torch
import torch.nn as nn

_kernel = cp.RawKernel(r'''
extern "C" __global__ void spin(volatile int* flag, float* out) {
    while (flag[0] == 0) { }
    out[0] = 1.0f;
}
''', "spin")


class ModelNew(nn.Module):
    def forward(self, x):
        flag = torch.zeros(1, dtype=torch.int32, device=x.device)
        out = torch.empty_like(x)
        with cp.cuda.ExternalStream(torch.cuda.current_stream().cuda_stream):
            _kernel((1,), (1,), (np.uint64(flag.data_ptr()), np.uint64(out.data_ptr())))
        torch.cuda.synchronize()
        return out
