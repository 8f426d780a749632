"""Legitimate: the fused Triton matmul, bias and ReLU reading its own parameters with `getattr` and literal names
(`getattr(self, "linear")`, `getattr(linear, "weight")`): attributes the guards can name, and not PyTorch compute.

TASK: tiny/level1/3_MatmulBiasReLU
EXPECTED: correct
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def matmul_bias_relu_kernel(a_ptr, w_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_wn, stride_wk,
                            stride_cm, stride_cn, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pid_m, pid_n = tl.program_id(0), tl.program_id(1)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, K, BK):
        rk = k0 + tl.arange(0, BK)
        a = tl.load(a_ptr + rm[:, None] * stride_am + rk[None, :] * stride_ak,
                    mask=(rm[:, None] < M) & (rk[None, :] < K), other=0.0)
        w = tl.load(w_ptr + rn[None, :] * stride_wn + rk[:, None] * stride_wk,
                    mask=(rn[None, :] < N) & (rk[:, None] < K), other=0.0)
        acc += tl.dot(a, w, input_precision="ieee")
    acc += tl.load(b_ptr + rn, mask=rn < N, other=0.0)[None, :]
    acc = tl.maximum(acc, 0.0)
    tl.store(c_ptr + rm[:, None] * stride_cm + rn[None, :] * stride_cn, acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        linear = getattr(self, "linear")
        w, b = getattr(linear, "weight"), getattr(linear, "bias")
        M, K = x.shape
        N = w.shape[0]
        out = torch.empty((M, N), device=x.device, dtype=x.dtype)
        grid = (triton.cdiv(M, 64), triton.cdiv(N, 64))
        matmul_bias_relu_kernel[grid](x, w, b, out, M, N, K, x.stride(0), x.stride(1), w.stride(0), w.stride(1),
                                      out.stride(0), out.stride(1), BM=64, BN=64, BK=32)
        return out
