"""RMSNorm over the last dimension: x * rsqrt(mean(x^2) + eps) * weight."""
import torch
import torch.nn as nn

batch_size = 32768
hidden = 4096


class Model(nn.Module):
    def __init__(self, hidden, eps):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(1.0 + 0.2 * torch.randn(hidden))

    def forward(self, x):
        rms_inv = torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + self.eps)
        return x * rms_inv * self.weight


def get_inputs():
    return [torch.randn(batch_size, hidden)]


def get_init_inputs():
    return [hidden, 1e-6]


INPUT_VARIANTS = ("heavy_tail", "shape2", "small")


def get_inputs_variant(name: str) -> list:
    if name == "heavy_tail":
        # normal scaled by a log-normal factor: rare large magnitudes of both signs
        return [torch.randn(batch_size, hidden) * torch.exp(torch.randn(batch_size, hidden))]
    if name == "shape2":
        # 3-D input with odd leading dimensions
        return [torch.randn(5, 3001, hidden)]
    if name == "small":
        return [torch.randn(256, hidden)]
    raise ValueError(f"unknown input variant: {name!r}")
