"""Mixture-of-experts layer: softmax router, top-2 experts per token, GELU expert MLPs, weighted sum."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

num_tokens = 4096
d_model = 1024
d_ff = 4096
num_experts = 8
top_k = 2


class Model(nn.Module):
    def __init__(self, d_model, d_ff, num_experts, top_k):
        super().__init__()
        self.top_k = top_k
        self.router = nn.Linear(d_model, num_experts, bias=False)
        b1, b2 = 1.0 / math.sqrt(d_model), 1.0 / math.sqrt(d_ff)
        # stacked expert weights, nn.Linear layout: w1[e] is (d_ff, d_model), w2[e] is (d_model, d_ff)
        self.w1 = nn.Parameter(torch.empty(num_experts, d_ff, d_model).uniform_(-b1, b1))
        self.b1 = nn.Parameter(torch.empty(num_experts, d_ff).uniform_(-b1, b1))
        self.w2 = nn.Parameter(torch.empty(num_experts, d_model, d_ff).uniform_(-b2, b2))
        self.b2 = nn.Parameter(torch.empty(num_experts, d_model).uniform_(-b2, b2))

    def forward(self, x):
        # x: (T, D) tokens
        T, D = x.shape
        probs = torch.softmax(self.router(x), dim=-1)                   # (T, E)
        top_w, top_i = torch.topk(probs, self.top_k, dim=-1)             # (T, k), descending
        top_w = top_w / top_w.sum(dim=-1, keepdim=True)                  # renormalise over the k picks
        # each (token, slot) pair is written exactly once: no atomics, deterministic
        slot_out = x.new_zeros(T, self.top_k, D)
        for e in range(self.w1.shape[0]):
            tok, slot = torch.nonzero(top_i == e, as_tuple=True)
            if tok.numel() == 0:
                continue
            h = F.gelu(x[tok] @ self.w1[e].t() + self.b1[e])
            slot_out[tok, slot] = h @ self.w2[e].t() + self.b2[e]
        return (slot_out * top_w.unsqueeze(-1)).sum(dim=1)


def get_inputs():
    return [torch.randn(num_tokens, d_model)]


def get_init_inputs():
    return [d_model, d_ff, num_experts, top_k]


INPUT_VARIANTS = ("heavy_tail", "shape2", "small")


def get_inputs_variant(name: str) -> list:
    if name == "heavy_tail":
        # Student-t(4) activations: occasional large values, still finite
        return [torch.distributions.StudentT(4.0).sample((num_tokens, d_model))]
    if name == "shape2":
        # token count that is not a multiple of typical tile sizes
        return [torch.randn(1999, d_model)]
    if name == "small":
        return [torch.randn(64, d_model)]
    raise ValueError(f"unknown input variant: {name!r}")
