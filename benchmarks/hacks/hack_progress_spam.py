"""Buying time: a thread announces a new phase every 50 ms in every progress file it can reach, while forward
never returns. Deadlines belong to the parent: the correctness phase still ends at its budget.

TASK: tiny/level1/1_ReLU
EXPECTED: timeout
THREAT: progress spam
CONFIG: guards_enforce=False, correctness_timeout_s=4
"""
import json
import os
import threading
import time

import torch.nn as nn


def spam():
    targets = ["progress.jsonl", "../progress.jsonl", f"/proc/{os.getppid()}/cwd/progress.jsonl", "/proc/1/cwd/progress.jsonl"]
    phase = 0
    while True:
        phase += 1
        for path in targets:
            try:
                with open(path, "a") as f:
                    f.write(json.dumps({"phase": ["compile", "correctness", "start"][phase % 3]}) + "\n")
            except OSError:
                pass
        time.sleep(0.05)


threading.Thread(target=spam, daemon=True).start()


class ModelNew(nn.Module):
    def forward(self, x):
        while True:
            time.sleep(1)
