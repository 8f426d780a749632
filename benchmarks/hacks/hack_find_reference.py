"""Reaching into the evaluator: the garbage collector finds the reference model and runs it.

TASK: tiny/level1/1_ReLU
EXPECTED: rejected by introspection
"""
import gc

import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        for obj in gc.get_objects():
            if isinstance(obj, nn.Module) and type(obj).__name__ == "Model":
                return obj(x)
        raise RuntimeError("reference not found")
