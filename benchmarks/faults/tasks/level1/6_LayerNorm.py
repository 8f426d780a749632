"""LayerNorm over the last dimension with its affine parameters (built as ones and zeros)."""

import torch
import torch.nn as nn

batch_size = 32
dim = 512


class Model(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.ln = nn.LayerNorm(dim)

    def forward(self, x):
        return self.ln(x)


def get_inputs():
    return [torch.rand(batch_size, dim)]


def get_init_inputs():
    return [dim]
