"""PyTorch passthrough: ModelNew calls the same PyTorch op as the reference and writes no kernel.

TASK: tiny/level1/1_ReLU
EXPECTED: rejected by no_custom_kernel
"""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.relu(x)
