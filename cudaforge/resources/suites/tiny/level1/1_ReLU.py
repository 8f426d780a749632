"""Elementwise ReLU on a small 2-D tensor."""
import torch
import torch.nn as nn

batch_size = 256
dim = 1024


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.relu(x)


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []


INPUT_VARIANTS = ("heavy_tail", "shape2", "small")


def get_inputs_variant(name: str) -> list:
    if name == "heavy_tail":
        # normal scaled by a log-normal factor: rare large magnitudes of both signs
        return [torch.randn(batch_size, dim) * torch.exp(torch.randn(batch_size, dim))]
    if name == "shape2":
        return [torch.randn(300, 777)]
    if name == "small":
        return [torch.randn(64, 256)]
    raise ValueError(f"unknown input variant: {name!r}")
