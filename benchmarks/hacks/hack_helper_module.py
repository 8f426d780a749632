"""A module of its own, written at import into the working directory (the worker's scratch) and imported from
there: the ReLU is a plain `torch.relu`, run in a thread, in code the candidate's text only holds as a string.
The Triton kernel only copies the result. The static guards cannot read `helper.py`, so writing it, putting its
folder on `sys.path` and importing a module no package provides are each findings.

TASK: tiny/level1/1_ReLU
EXPECTED: rejected by dynamic_code
CONFIG: torch_ops=strict
"""
import os
import sys

import torch
import torch.nn as nn
import triton
import triton.language as tl

HELPER = '''
import threading

import torch


def relu(x):
    box = {}
    worker = threading.Thread(target=lambda: box.setdefault("y", torch.relu(x)))
    worker.start()
    worker.join()
    return box["y"]
'''

with open("helper.py", "w") as f:
    f.write(HELPER)
sys.path.insert(0, os.getcwd())

import helper  # noqa: E402


@triton.jit
def copy_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        y = helper.relu(x)
        out = torch.empty_like(y)
        copy_kernel[(triton.cdiv(y.numel(), 1024),)](y, out, y.numel(), BLOCK=1024)
        return out
