"""BatchNorm over features in eval mode: running statistics and affine parameters as built (zeros and ones)."""

import torch
import torch.nn as nn

batch_size = 64
features = 256


class Model(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.bn = nn.BatchNorm1d(features)

    def forward(self, x):
        return self.bn(x)


def get_inputs():
    return [torch.rand(batch_size, features)]


def get_init_inputs():
    return [features]
