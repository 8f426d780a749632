"""A linear layer whose output is scaled by a learned vector (built as ones), then a ReLU: KernelBench level 2."""

import torch
import torch.nn as nn

batch_size = 32
in_features = 128
out_features = 256


class Model(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.scale = nn.Parameter(torch.ones(out_features))

    def forward(self, x):
        return torch.relu(self.linear(x) * self.scale)


def get_inputs():
    return [torch.rand(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features]
