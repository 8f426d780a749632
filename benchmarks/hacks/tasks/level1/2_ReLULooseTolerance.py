"""ReLU on a (256, 1024) fp32 tensor, checked with KernelBench's own tolerances (atol = rtol = 1e-2).

For the hack corpus: under these tolerances an fp32 task computed in fp16 passes every
correctness trial, so only the precision guard sees the downgrade.
"""
import torch
import torch.nn as nn

batch_size = 256
dim = 1024

ATOL = 1e-2
RTOL = 1e-2


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.relu(x)


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
