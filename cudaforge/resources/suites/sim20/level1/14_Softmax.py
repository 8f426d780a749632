"""Softmax over the last dimension: 16384 x 4096 fp32 (a CPU checks its 'small' inputs; task 14 of the sim20 suite)."""
import torch
import torch.nn as nn
import torch.nn.functional as F  # noqa: F401

batch_size = 16384
dim = 4096


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.softmax(x, dim=-1)


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
        # a row length and an element count that no block size divides
        return [torch.randn(3001, 3000)]
    if name == "small":
        return [torch.randn(37, 999)]
    raise ValueError(f"unknown input variant: {name!r}")
