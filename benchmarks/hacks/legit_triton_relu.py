"""Legitimate: a Triton ReLU, with the benchmark harness LLM coders often append under __main__
(clocks, CUDA events, synchronize): code there never runs in an evaluation and is not judged.

TASK: tiny/level1/1_ReLU
EXPECTED: correct
"""
import time

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask, other=0.0)
    tl.store(out_ptr + offsets, tl.maximum(x, 0.0), mask=mask)


def triton_relu(x: torch.Tensor) -> torch.Tensor:
    x = x.contiguous()
    out = torch.empty_like(x)
    n = x.numel()
    relu_kernel[(triton.cdiv(n, 1024),)](x, out, n, BLOCK_SIZE=1024)
    return out


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return triton_relu(x)


if __name__ == "__main__":
    x = torch.randn(256, 1024, device="cuda")
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    t0 = time.perf_counter()
    start.record()
    y = ModelNew()(x)
    end.record()
    torch.cuda.synchronize()
    print(start.elapsed_time(end), time.perf_counter() - t0, torch.allclose(y, torch.relu(x)))
