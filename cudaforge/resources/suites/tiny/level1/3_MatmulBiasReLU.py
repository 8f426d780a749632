"""Small linear layer (x @ W^T + b) followed by a ReLU epilogue."""
import torch
import torch.nn as nn

batch_size = 256
in_features = 256
out_features = 256


class Model(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        return torch.relu(self.linear(x))


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features]


INPUT_VARIANTS = ("heavy_tail", "shape2", "small")


def get_inputs_variant(name: str) -> list:
    if name == "heavy_tail":
        # normal scaled by a log-normal factor: rare large magnitudes of both signs
        return [torch.randn(batch_size, in_features) * torch.exp(torch.randn(batch_size, in_features))]
    if name == "shape2":
        # batch that is not a multiple of typical tile sizes
        return [torch.randn(129, in_features)]
    if name == "small":
        return [torch.randn(64, in_features)]
    raise ValueError(f"unknown input variant: {name!r}")
