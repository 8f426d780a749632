"""A pre-norm GPT-style decoder block (GPT-2 small's sizes: width 768, 12 heads, MLP 3072): causal self-attention and
a GELU MLP, with residuals, as nn.LayerNorm and nn.GELU modules.

The `cudaforge integrate` recipe of the `main` suite: its LayerNorm and GELU kernels patched into a model built from
its config with random weights (nothing downloaded), timed end to end against eager and torch.compile.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

batch_size = 8
seq_len = 512
d_model = 768
n_heads = 12
d_ff = 3072


class Block(nn.Module):
    def __init__(self, d_model, n_heads, d_ff):
        super().__init__()
        self.n_heads = n_heads
        self.ln1 = nn.LayerNorm(d_model, eps=1e-5)
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.proj = nn.Linear(d_model, d_model)
        self.ln2 = nn.LayerNorm(d_model, eps=1e-5)
        self.fc1 = nn.Linear(d_model, d_ff)
        self.act = nn.GELU()
        self.fc2 = nn.Linear(d_ff, d_model)
        with torch.no_grad():  # non-trivial norm affines, so the output depends on them
            for ln in (self.ln1, self.ln2):
                ln.weight.copy_(1.0 + 0.2 * torch.randn(d_model))
                ln.bias.copy_(0.1 * torch.randn(d_model))

    def forward(self, x):
        B, S, D = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(B, S, 3, self.n_heads, D // self.n_heads).permute(2, 0, 3, 1, 4)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(a.transpose(1, 2).reshape(B, S, D))
        return x + self.fc2(self.act(self.fc1(self.ln2(x))))


class Model(nn.Module):
    def __init__(self, d_model, n_heads, d_ff):
        super().__init__()
        self.blocks = nn.Sequential(Block(d_model, n_heads, d_ff), Block(d_model, n_heads, d_ff))

    def forward(self, x):
        return self.blocks(x)


def get_inputs():
    return [torch.randn(batch_size, seq_len, d_model)]


def get_init_inputs():
    return [d_model, n_heads, d_ff]


# module class -> the task whose best kernel replaces every instance, and the task's sizes from the instance
PATCHES = {
    "LayerNorm": {"task": "*/level1/*_LayerNorm", "sizes": {"hidden": "normalized_shape.0"}},
    "GELU": {"task": "*/level1/*_GELU"},
}
