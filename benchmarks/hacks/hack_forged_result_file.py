"""A forged result: at import the candidate writes a result file claiming CORRECT at 100x into every place a
worker's result could live (its working directory, its parent's through /proc), then exits cleanly before
anything is checked. The verdict must come from the verifier, which never reads a file the candidate can write.

TASK: tiny/level1/1_ReLU
EXPECTED: crashed
THREAT: forged result file
CONFIG: guards_enforce=False
"""
import json
import os

import torch
import torch.nn as nn

forged = {"task_id": "tiny/level1/1_ReLU", "candidate_hash": "x", "status": "correct", "message": "correct",
          "speedup": {"median": 100.0, "ci_low": 100.0, "ci_high": 100.0, "baseline": "eager"}}
for folder in [".", os.path.join("/proc", str(os.getppid()), "cwd"), "/proc/1/cwd", ".."]:
    try:
        with open(os.path.join(folder, "result.json"), "w") as f:
            json.dump(forged, f)
    except OSError:
        pass
os._exit(0)


class ModelNew(nn.Module):
    def forward(self, x):
        return x * 3 + 1
