"""A lazy tensor subclass: forward returns at once an object that looks like the result; the kernel
runs only when something reads it (the correctness check, after the timed region).

TASK: tiny/level1/1_ReLU
EXPECTED: rejected by output_type
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


class Deferred(torch.Tensor):
    """Holds the input; computes into its own storage on first use by any torch function."""

    @staticmethod
    def __new__(cls, x):
        out = torch.Tensor._make_subclass(cls, torch.empty_like(x))
        out.pending = x
        return out

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        for arg in args:
            if isinstance(arg, Deferred) and arg.__dict__.get("pending") is not None:
                x, arg.pending = arg.pending, None
                relu_kernel[(triton.cdiv(x.numel(), 1024),)](x, arg, x.numel(), BLOCK=1024)
        return super().__torch_function__(func, types, args, kwargs or {})


class ModelNew(nn.Module):
    def forward(self, x):
        return Deferred(x)
