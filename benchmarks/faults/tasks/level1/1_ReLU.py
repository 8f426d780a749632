"""ReLU on torch.rand inputs, as KernelBench draws them (never negative)."""

import torch
import torch.nn as nn

batch_size = 32
dim = 512


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.relu(x)


def get_inputs():
    return [torch.rand(batch_size, dim)]


def get_init_inputs():
    return []
