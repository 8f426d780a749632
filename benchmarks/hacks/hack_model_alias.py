"""`ModelNew = Model`: the reference copied into the candidate and renamed.

TASK: tiny/level1/1_ReLU
EXPECTED: rejected by reference
"""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.relu(x)


ModelNew = Model
