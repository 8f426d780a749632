"""Finding the reference through frames and the garbage collector (reached as ``os.sys._getframe`` and
``os.sys.modules["gc"]``) to call it; without it, a constant. The reference lives in another process.

TASK: tiny/level1/1_ReLU
EXPECTED: incorrect
THREAT: reference found through frames or gc
CONFIG: guards_enforce=False
"""
import os

import torch
import torch.nn as nn


def find_reference():
    frame = os.sys._getframe(1)
    while frame is not None:
        for value in list(frame.f_locals.values()):
            if isinstance(value, nn.Module) and type(value).__name__ == "Model":
                return value
        frame = frame.f_back
    for obj in os.sys.modules["gc"].get_objects():
        if isinstance(obj, nn.Module) and type(obj).__name__ == "Model":
            return obj
    return None


class ModelNew(nn.Module):
    def forward(self, x):
        reference = find_reference()
        return reference(x) if reference is not None else torch.zeros_like(x)
