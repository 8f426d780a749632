"""Taking the machine's memory: the candidate allocates and touches far more host memory than its limit (6 GiB were
once kept with no limit at all, beside the verifier and the run's parent). The memory cgroup (its limit shrunk
here) ends the candidate's process, and only it: the verdict is ``crashed``, the evaluator goes on.

TASK: tiny/level1/1_ReLU
EXPECTED: crashed
THREAT: memory limit
CONFIG: guards_enforce=False, sandbox_memory_gb=0.75
"""
import torch
import torch.nn as nn

hoard = []
for _ in range(24):  # 3 GiB, touched page by page
    block = bytearray(128 << 20)
    block[::4096] = b"\1" * len(block[::4096])
    hoard.append(block)


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.relu(x)
