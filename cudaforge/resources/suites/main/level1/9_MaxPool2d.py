"""2-D max pooling, 3x3 window, stride 2, padding 1 (overlapping windows)."""
import torch
import torch.nn as nn

batch_size = 64
channels = 128
height = 224
width = 224


class Model(nn.Module):
    def __init__(self, kernel_size, stride, padding):
        super().__init__()
        self.pool = nn.MaxPool2d(kernel_size, stride=stride, padding=padding)

    def forward(self, x):
        return self.pool(x)


def get_inputs():
    return [torch.randn(batch_size, channels, height, width)]


def get_init_inputs():
    return [3, 2, 1]


INPUT_VARIANTS = ("heavy_tail", "shape2", "small")


def get_inputs_variant(name: str) -> list:
    if name == "heavy_tail":
        # normal scaled by a log-normal factor: rare large magnitudes of both signs
        shape = (batch_size, channels, height, width)
        return [torch.randn(shape) * torch.exp(torch.randn(shape))]
    if name == "shape2":
        # odd spatial sizes exercise the padded border windows
        return [torch.randn(9, 77, 113, 97)]
    if name == "small":
        return [torch.randn(4, 16, 56, 56)]
    raise ValueError(f"unknown input variant: {name!r}")
