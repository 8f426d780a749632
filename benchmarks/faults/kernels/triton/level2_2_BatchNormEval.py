"""Honest Triton BatchNorm (eval mode): every element normalised by its feature's running statistics, then the affine
parameters."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def batchnorm_kernel(x_ptr, mean_ptr, var_ptr, w_ptr, b_ptr, y_ptr, n_elements, n_features, eps, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n_elements
    f = offs % n_features
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    mean = tl.load(mean_ptr + f, mask=mask, other=0.0)
    var = tl.load(var_ptr + f, mask=mask, other=1.0)
    w = tl.load(w_ptr + f, mask=mask, other=0.0)
    b = tl.load(b_ptr + f, mask=mask, other=0.0)
    y = (x - mean) / tl.sqrt(var + eps) * w + b
    tl.store(y_ptr + offs, y, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.bn = nn.BatchNorm1d(features)

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        n = x.numel()
        bn = self.bn
        batchnorm_kernel[(triton.cdiv(n, 1024),)](
            x, bn.running_mean, bn.running_var, bn.weight, bn.bias, y, n, x.shape[1], bn.eps, BLOCK=1024
        )
        return y
