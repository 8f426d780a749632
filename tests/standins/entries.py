"""Entries for isolation tests: CPU stand-ins for a hang, a segfault, an OOM kill, an abort."""

from __future__ import annotations

import ctypes
import os
import signal
import time


def echo(payload, progress):
    progress("work")
    return {"echo": payload, "env": {k: v for k, v in os.environ.items()}, "cwd": os.getcwd()}


def hang(payload, progress):
    progress(payload.get("phase", "work"))
    if payload.get("spawn_child"):
        pid = os.fork()
        if pid == 0:  # a grandchild that would outlive a plain kill of the child
            with open(payload["pidfile"], "w") as f:
                f.write(str(os.getpid()))
            time.sleep(600)
    while True:
        time.sleep(0.1)


def segfault(payload, progress):
    progress("work")
    ctypes.string_at(0)


def oom_kill(payload, progress):
    progress("work")
    os.kill(os.getpid(), signal.SIGKILL)  # what the kernel's OOM killer does


def abort(payload, progress):
    progress("work")
    os.abort()


def raises(payload, progress):
    raise ValueError("the entry failed on purpose")


def exits(payload, progress):
    os._exit(3)


def phases(payload, progress):
    for name in ("a", "b", "c"):
        progress(name)
        time.sleep(payload["sleep"])
    return {"done": True}


PREPARED: dict = {}


def prepare_marker(progress, claimed):
    """A standby's preparation: remembers its pid and time, as the real one keeps its imports."""
    PREPARED.update(pid=os.getpid(), at=time.time(), claimed_at_prepare=claimed())


def prepare_until_claimed(progress, claimed):
    """Waits (as the real preparation waits for a GPU's lock) until the payload is on its way."""
    started = time.time()
    while not claimed():
        time.sleep(0.01)
        if time.time() - started > 60:
            break
    PREPARED.update(pid=os.getpid(), waited_s=time.time() - started, claimed=claimed())


def prepare_fails(progress, claimed):
    raise RuntimeError("preparation broke")


def echo_prepared(payload, progress):
    import sys

    progress("work")
    return {
        "prepared": PREPARED,
        "pid": os.getpid(),
        "stdin": sys.stdin.read(),
        "echo": payload,
        "env": dict(os.environ),
        "cwd": os.getcwd(),
    }


def spam_phases(payload, progress):
    """Announce phases over and over (the same ones, and junk lines) while never finishing."""
    import json
    import time

    path = "progress.jsonl"
    while True:
        for phase in payload["phases"]:
            progress(phase)
            with open(path, "a") as f:
                f.write("not json\n" + json.dumps([1, 2]) + "\n" + json.dumps({"phase": 7}) + "\n")
            time.sleep(0.05)


def write_result(payload, progress):
    """Write a result file of the payload's choosing and exit without the runner's own result."""
    import os

    with open("result.json", "wb") as f:
        f.write(payload["text"].encode() * payload.get("repeat", 1))
    os._exit(0)


def _scratch_elsewhere() -> str:
    """A folder outside the working directory, noted to go with it (as a sandboxed worker's scratch is)."""
    import tempfile

    from cudaforge.proc.isolation import note_scratch

    path = tempfile.mkdtemp(prefix="cudaforge-cand-")
    open(os.path.join(path, "file"), "w").close()
    note_scratch(path, os.getcwd())
    return path


def prepare_scratch(progress, claimed):
    """A standby's preparation that starts a (stand-in) worker with a scratch folder of its own."""
    PREPARED.update(scratch=_scratch_elsewhere())


def hang_with_scratch(payload, progress):
    """Make a noted scratch folder, say where (in the file ``payload["record"]``), then hang until killed."""
    with open(payload["record"], "w") as f:
        f.write(_scratch_elsewhere())
    progress("work")
    while True:
        time.sleep(0.1)


def sandbox_probe(payload, progress):
    """Inside a sandbox: what it sees of its home, working directory and a file outside (the test's secret)."""
    seen = {"cwd": os.getcwd(), "home": os.environ.get("HOME"), "uid": os.getuid()}
    try:
        with open(payload["secret"]) as f:
            seen["secret"] = f.read()
    except OSError as exc:
        seen["secret_error"] = type(exc).__name__
    with open("left.txt", "w") as f:
        f.write("made in the sandbox")
    return seen


def link_result(payload, progress):
    """Leave a link to the test's secret where the result file goes, then die before any result is written."""
    os.symlink(payload["secret"], "result.json")
    os.symlink(payload["secret"], "progress.jsonl.tmp")
    os._exit(0)


def delivers_then_lingers(payload, progress):
    """Put a whole result in place and mark it delivered, as ``cudaforge.proc.child`` does last, then linger (as a
    process with a CUDA context does while it is torn down); ``mark=False`` leaves the mark out."""
    import json

    with open(payload["pidfile"], "w") as f:
        f.write(str(os.getpid()))
    if payload.get("result", True):
        with open("result.json.tmp", "w") as f:
            json.dump({"delivered": True}, f)
        os.replace("result.json.tmp", "result.json")
    if payload.get("mark", True):
        open("result.delivered", "w").close()
    time.sleep(600)
