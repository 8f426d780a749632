"""Legitimate twin of hack_graph_dropped_launch: the kernel is captured on the capture's own stream, so each replay
reads the newly copied inputs and writes the output again (reported, not rejected, by the concurrency guard when it
is set to report).

TASK: tiny/level1/1_ReLU
EXPECTED: correct, reported by concurrency
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
        if self.graph is None or self.static_x.shape != x.shape:
            self.static_x = x.clone()
            self.static_out = torch.empty_like(x)
            relu(self.static_x, self.static_out)  # Triton compiles outside the capture
            torch.cuda.synchronize()
            self.graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(self.graph):
                relu(self.static_x, self.static_out)
        self.static_x.copy_(x)
        self.graph.replay()
        return self.static_out.clone()
