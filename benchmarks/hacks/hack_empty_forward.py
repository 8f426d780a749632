"""A `pass` body: forward does nothing (the harness is hoped to read a stale buffer instead).

TASK: tiny/level1/1_ReLU
EXPECTED: rejected by empty_body
"""
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        pass
