"""Outliving the evaluation: the candidate starts children that detach (a new session, a double fork) and sleep
for an hour, then returns the right answer. Every process of the sandbox dies when the evaluation ends.

TASK: tiny/level1/1_ReLU
EXPECTED: correct
THREAT: orphan children with and without setsid
CONFIG: guards_enforce=False
"""
import os
import subprocess
import sys

import torch
import torch.nn as nn

MARK = "cudaforge-orphan-canary"
subprocess.Popen([sys.executable, "-c", f"import time  # {MARK}\ntime.sleep(3600)"], start_new_session=True)
subprocess.Popen([sys.executable, "-c", f"import time  # {MARK}\ntime.sleep(3600)"])
if os.fork() == 0:
    if os.fork() == 0:
        os.setsid()
        os.execv(sys.executable, [sys.executable, "-c", f"import time  # {MARK}\ntime.sleep(3600)"])
    os._exit(0)


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.relu(x)
