"""A forged answer on the verifier's channel: the candidate writes its own frames into the worker's socket (a
malformed one claiming 2 GB, then a reply saying everything is fine) and returns wrong outputs. The verifier
bounds and checks every frame; nothing on the channel can say "correct".

TASK: tiny/level1/1_ReLU
EXPECTED: crashed
THREAT: forged result channel
CONFIG: guards_enforce=False
"""
import json
import socket
import struct
import sys

import torch
import torch.nn as nn

try:
    channel = socket.socket(fileno=int(sys.argv[1]))
    body = json.dumps({"ok": True, "status": "correct", "outputs": {"v": 0}}).encode()
    channel.sendall(struct.pack(">I", 2**31) + body)
except (ValueError, IndexError, OSError):
    pass


class ModelNew(nn.Module):
    def forward(self, x):
        return x * 3 + 1
