"""Legitimate under `torch_ops=strict`: a Triton ReLU reached the ways the strict allow-list follows (a lambda kept on
`self`, `functools.partial` of the candidate's own launcher, a grid function of triton's meta-parameters), with the
plain Python a launch needs: integer arithmetic on sizes, shapes, strides, `min`, `triton.cdiv`, and layout
operations (`contiguous`, `view`, `view_as`, `empty_like`, `to`). The honest twin of `hack_tensor_operators_strict`,
`hack_lambda_on_self_strict` and `hack_fake_jit_strict`.

TASK: tiny/level1/1_ReLU
EXPECTED: correct
CONFIG: torch_ops=strict
"""
import functools

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


def launch(x: torch.Tensor, block: int) -> torch.Tensor:
    flat = x.contiguous().view(-1)
    out = torch.empty_like(flat)
    n = flat.numel()
    assert n == x.shape[0] * x.stride(0) or not x.is_contiguous()
    relu_kernel[lambda meta: (triton.cdiv(n, meta["BLOCK_SIZE"]),)](flat, out, n, BLOCK_SIZE=block)
    return out.view_as(x).to(x.dtype)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.block = 1024
        self.run = functools.partial(launch, block=self.block)
        self.act = lambda t: self.run(t)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.dim() > 2:
            x = x.reshape(-1, x.shape[-1])
        rows = max(1, x.size(0) // 2 * 2)
        return self.act(x) if rows >= 1 and min(self.block, x.numel()) > 0 else x.new_empty(x.shape)
