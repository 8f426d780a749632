"""Filling the disk: the candidate writes as much as it can into its scratch folder and its /tmp, in big files and in
many small ones (2.4 GB once went through; a Triton cache of 240 MB was kept). Under the quota (shrunk here to
keep the test short) every write past it fails with "No space left on device"; the candidate answers right only if
the quota held for both folders.

TASK: tiny/level1/1_ReLU
EXPECTED: correct
THREAT: scratch and /tmp quotas
CONFIG: guards_enforce=False, sandbox_scratch_gb=0.05, sandbox_scratch_files=500
"""
import errno
import os

import torch
import torch.nn as nn

held = []
for folder in (".", "/tmp"):
    stopped = False
    try:
        with open(os.path.join(folder, "big"), "wb") as f:
            for _ in range(200):  # 200 MB, four times the quota
                f.write(b"\0" * (1 << 20))
    except OSError as exc:
        stopped = exc.errno in (errno.ENOSPC, errno.EDQUOT)
    try:
        os.remove(os.path.join(folder, "big"))
    except OSError:
        pass
    files_stopped = False
    try:
        for i in range(5000):  # ten times the entries allowed
            open(os.path.join(folder, f"f{i}"), "w").close()
    except OSError as exc:
        files_stopped = exc.errno in (errno.ENOSPC, errno.EDQUOT)
    held.append(stopped and files_stopped)
if not all(held):
    raise RuntimeError(f"a quota did not hold: scratch, /tmp = {held}")


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.relu(x)
