"""What uid 0 without capabilities could still do: change the mode, times or extended attributes of the trusted
side's files (mode 000 on ``candidate_worker.py`` once crashed every later evaluation), set a set-uid bit, reach a
host service through a path-named unix socket, share the user keyring with the host's root, open an io_uring or a
new user namespace, make a TCP socket. The candidate tries all of it and then answers right only if every attempt
failed: a correct verdict is the proof that none worked.

TASK: tiny/level1/1_ReLU
EXPECTED: correct
THREAT: uid 0 powers: chmod, unix sockets, keyring, io_uring, namespaces
CONFIG: guards_enforce=False
"""
import ctypes
import glob
import os
import socket

import cudaforge.eval.worker.candidate_worker as worker
import torch
import torch.nn as nn

libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
worked = []


def attempt(name, action):
    try:
        if action() not in (False, None, -1):
            worked.append(name)
    except (OSError, ValueError):
        pass


targets = [worker.__file__, "/usr/bin/env", "/bin/sh"]
attempt("chmod", lambda: [os.chmod(t, 0o000) for t in targets] and True)
attempt("setuid bit", lambda: os.chmod("/usr/bin/env", 0o4755) or True)
attempt("utime", lambda: os.utime(worker.__file__, (0, 0)) or True)
attempt("xattr", lambda: os.setxattr(worker.__file__, "user.pwned", b"1") or True)
for path in glob.glob("/run/**/*.sock", recursive=True) + glob.glob("/var/run/*.sock") + glob.glob("/tmp/*/*.sock"):
    sock = socket.socket(socket.AF_UNIX)
    attempt(f"connect {path}", lambda: sock.connect(path) or True)
attempt("keyring", lambda: libc.syscall(248, b"user", b"cudaforge-pwned", b"x", 1, -3) >= 0)  # add_key
attempt("io_uring", lambda: libc.syscall(425, 1, ctypes.create_string_buffer(120)) >= 0)  # io_uring_setup
attempt("user namespace", lambda: libc.unshare(0x10000000) == 0)
attempt("mount namespace", lambda: libc.unshare(0x00020000) == 0)
attempt("tcp", lambda: socket.socket(socket.AF_INET, socket.SOCK_STREAM) and True)
attempt("uid 0", lambda: os.getuid() == 0 or os.geteuid() == 0)
if worked:
    raise RuntimeError("these worked: " + ", ".join(worked))


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.relu(x)
