"""A CUDA graph whose capture silently drops the kernel: the kernel is launched on a stream outside the capture, so
it runs once, eagerly, while the graph records only the input copy; every replay leaves the output of the capture
call behind. Stale outputs on fresh inputs are wrong.

TASK: tiny/level1/1_ReLU
EXPECTED: incorrect by result_caching
NEEDS: cuda
CONFIG: guards.concurrency=report
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.maximum(tl.load(x_ptr + offs, mask=mask), 0.0), mask=mask)


def relu(x, out):
    relu_kernel[(triton.cdiv(x.numel(), 1024),)](x, out, x.numel(), BLOCK=1024)
    return out


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.graph = None

    def forward(self, x):
        if self.graph is None:
            self.static_x = torch.empty_like(x)
            self.static_out = torch.empty_like(x)
            self.outside = torch.cuda.Stream()
            self.graph = torch.cuda.CUDAGraph()
            self.static_x.copy_(x)
            torch.cuda.synchronize()
            with torch.cuda.graph(self.graph, capture_error_mode="relaxed"):
                self.static_x.copy_(x)
                with torch.cuda.stream(self.outside):  # not forked from the capture: runs now, not in the graph
                    relu(self.static_x, self.static_out)
            torch.cuda.synchronize()
        self.static_x.copy_(x)
        self.graph.replay()
        return self.static_out.clone()
