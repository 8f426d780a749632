"""KernelBench-style TileLang candidate: relu(x @ W^T + b) for the tiny suite's MatmulBiasReLU, one fused kernel:
64x64 output tiles, K staged through shared memory in a software pipeline, the bias and the ReLU applied to the
fp32 accumulator before the store. Compiled once per (M, N, K).

The products are summed in fp32 on the CUDA cores (``T.gemm`` on fp32 operands would use TF32 tensor cores, outside
the fp32 tolerance). Needs a GPU and ``tilelang``.
"""

import tilelang
import tilelang.language as T
import torch
import torch.nn as nn


@tilelang.jit(out_idx=[-1])
def linear_relu(M, N, K, block_M=64, block_N=64, block_K=32, dtype="float32"):
    @T.prim_func
    def linear_relu_main(
        X: T.Tensor((M, K), dtype),
        W: T.Tensor((N, K), dtype),
        Bias: T.Tensor((N,), dtype),
        Y: T.Tensor((M, N), dtype),
    ):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=256) as (bx, by):
            X_s = T.alloc_shared((block_M, block_K), dtype)
            W_s = T.alloc_shared((block_N, block_K), dtype)
            acc = T.alloc_fragment((block_M, block_N), "float32")
            T.clear(acc)
            for ko in T.Pipelined(T.ceildiv(K, block_K), num_stages=2):
                T.copy(X[by * block_M, ko * block_K], X_s)
                T.copy(W[bx * block_N, ko * block_K], W_s)
                for k in T.serial(block_K):
                    for i, j in T.Parallel(block_M, block_N):
                        acc[i, j] += X_s[i, k] * W_s[j, k]
            for i, j in T.Parallel(block_M, block_N):
                acc[i, j] = T.max(acc[i, j] + Bias[bx * block_N + j], T.cast(0, "float32"))
            T.copy(acc, Y[by * block_M, bx * block_N])

    return linear_relu_main


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)  # same parameters (and seed) as the reference

    def forward(self, x):
        x = x.contiguous()
        w, b = self.linear.weight.contiguous(), self.linear.bias.contiguous()
        m, k = x.shape
        kernel = linear_relu(m, w.shape[0], k)
        return kernel(x, w, b)
