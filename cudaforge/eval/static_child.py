"""The static analysis of a candidate in a child process, with a deadline and a memory cap.

The parent never parses a candidate itself: a crafted text can make the parse and the guards' walks slow and
large (a 5.7 MB candidate held them 123 s at 1.7 GB). A helper process (``python -m
cudaforge.eval.static_child MODULE:FUNCTION``, started on first use) imports the analysis once and forks one
child per candidate; the child caps its address space (RLIMIT_AS) and CPU time, analyses, and writes its report
to a pipe; the helper kills it at the deadline and reads at most ``MAX_REPORT`` bytes of it. The parent keeps one
idle helper per caller that ran at once (a batch evaluates in threads), talks to each with a deadline of its
own, and replaces one that fails. Whatever the candidate is, :func:`analyse` returns the child's report or raises
:class:`AnalysisFailed` with one line; the parent's memory and time are never the candidate's. A normal
candidate costs about 5-10 ms more than an analysis in the parent's own process (a helper's start, about 0.1-0.25
s, once per concurrent caller).

Frames on the helper's pipes: a 4-byte big-endian length, then that many bytes of JSON.
"""

from __future__ import annotations

import atexit
import importlib
import json
import os
import resource
import select
import signal
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from typing import Any, BinaryIO

from cudaforge.paths import PROJECT_ROOT
from cudaforge.proc.text import loads_plain

MAX_REPORT = 32 << 20
"""The most bytes of report the helper reads from a child (past it the child is killed and the analysis failed)."""
HELPER_GRACE_S = 10.0
"""How much longer than the analysis's own deadline the parent waits for the helper's answer."""
MAX_IDLE_HELPERS = 8
"""Idle helpers kept for the next analyses; more are ended when they finish."""


class AnalysisFailed(Exception):
    """The analysis did not give a report: ``kind`` is ``deadline``, ``memory``, ``died`` (the child, by a signal or
    without a word) or ``helper`` (the helper process failed)."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


# ------------------------------------------------------------------------------ the parent's side


class _Helper:
    """One helper process of ``entry`` and its pipes (used by one caller at a time)."""

    def __init__(self, entry: str) -> None:
        root = str(PROJECT_ROOT)
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p)}
        # stderr is dropped: compiling a candidate prints its SyntaxWarnings there, as many as it likes
        self.proc = subprocess.Popen(
            [sys.executable, "-P", "-m", "cudaforge.eval.static_child", entry],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
        )

    def ask(self, request: bytes, timeout_s: float) -> dict[str, Any]:
        """Send one request (a frame's body) and wait at most ``timeout_s`` for its answer (AnalysisFailed
        ``helper`` otherwise)."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        try:
            self.proc.stdin.write(struct.pack(">I", len(request)) + request)
            self.proc.stdin.flush()
            reply = _read_frame(self.proc.stdout.fileno(), time.monotonic() + timeout_s, MAX_REPORT + 4096)
        except (OSError, ValueError) as exc:
            raise AnalysisFailed("helper", f"the static analysis helper failed ({exc})"[:300]) from None
        if not isinstance(reply, dict):
            raise AnalysisFailed("helper", "the static analysis helper ended without an answer")
        return reply

    def close(self) -> None:
        """End the helper (its stdin closed; killed if it does not go)."""
        try:
            if self.proc.stdin is not None:
                self.proc.stdin.close()
            self.proc.wait(timeout=2)
        except (OSError, subprocess.TimeoutExpired):
            self.proc.kill()
            self.proc.wait()
        if self.proc.stdout is not None:
            self.proc.stdout.close()


_IDLE: dict[tuple[str, int], list[_Helper]] = {}
"""Idle helpers, by the analysis they run and the process that started them (a copy forked from this process
starts its own: two processes on one helper's pipes would mix their frames)."""
_IDLE_LOCK = threading.Lock()


def _ask(entry: str, request: bytes, timeout_s: float) -> dict[str, Any]:
    """One request to an idle helper of ``entry`` (or a new one); the helper goes back to the idle ones, or is ended
    if it failed (AnalysisFailed ``helper``)."""
    key = (entry, os.getpid())
    with _IDLE_LOCK:
        idle = _IDLE.setdefault(key, [])
        helper = idle.pop() if idle else None
    if helper is None or helper.proc.poll() is not None:
        helper = _Helper(entry)
    try:
        reply = helper.ask(request, timeout_s + HELPER_GRACE_S)
    except AnalysisFailed:
        helper.proc.kill()
        helper.close()
        raise
    with _IDLE_LOCK:
        keep = len(_IDLE[key]) < MAX_IDLE_HELPERS
        if keep:
            _IDLE[key].append(helper)
    if not keep:
        helper.close()
    return reply


def analyse(entry: str, request: dict[str, Any], timeout_s: float) -> dict[str, Any]:
    """Run the analysis ``entry`` (``module:function``, called with the ``source``, ``cfg`` and
    ``reference_source`` of ``request``, returning a JSON-able dict) in a child with a deadline of ``timeout_s``
    and the address space ``request["memory_bytes"]``; its report, or
    AnalysisFailed. A helper that fails is replaced and asked once more (that failure is not the candidate's); the
    child's own failures are final, and an exception the analysis raised is raised here as RuntimeError."""
    data = json.dumps({**request, "timeout_s": timeout_s}).encode()  # TypeError here, before any helper is taken
    try:
        reply = _ask(entry, data, timeout_s)
    except AnalysisFailed:
        reply = _ask(entry, data, timeout_s)
    if "report" in reply:
        report: dict[str, Any] = reply["report"]
        return report
    if reply.get("failed") == "raised":
        raise RuntimeError(f"the static analysis raised {reply.get('message')}"[:2000])
    raise AnalysisFailed(str(reply.get("failed"))[:20], str(reply.get("message"))[:500])


@atexit.register
def _close_helpers() -> None:
    with _IDLE_LOCK:
        helpers = [helper for (_, pid), idle in _IDLE.items() if pid == os.getpid() for helper in idle]
        _IDLE.clear()
    for helper in helpers:
        helper.close()


# ------------------------------------------------------------------------------ frames


def _write_frame(stream: BinaryIO, value: Any) -> None:
    data = json.dumps(value).encode()
    stream.write(struct.pack(">I", len(data)) + data)
    stream.flush()


def _read_exactly(fd: int, n: int, deadline: float | None) -> bytes | None:
    """``n`` bytes from ``fd`` before ``deadline`` (None: no deadline); None at end of file; ValueError at the
    deadline."""
    chunks, got = [], 0
    while got < n:
        left = None if deadline is None else deadline - time.monotonic()
        if left is not None and (left <= 0 or not select.select([fd], [], [], left)[0]):
            raise ValueError("no answer before the deadline")
        data = os.read(fd, min(n - got, 1 << 20))
        if not data:
            return None
        chunks.append(data)
        got += len(data)
    return b"".join(chunks)


def _read_frame(fd: int, deadline: float | None, limit: int) -> Any:
    """One frame's JSON value; None when the other side closed before one began; ValueError when it is larger than
    ``limit`` bytes, not JSON, cut short, or late."""
    header = _read_exactly(fd, 4, deadline)
    if header is None:
        return None
    (size,) = struct.unpack(">I", header)
    if size > limit:
        raise ValueError(f"a frame of {size} bytes")
    body = _read_exactly(fd, size, deadline)
    if body is None:
        raise ValueError("a frame cut short")
    return json.loads(body)


# ------------------------------------------------------------------------------ the helper's side


def _child(analysis: Callable[..., dict[str, Any]], request: dict[str, Any], out: int) -> None:
    """In the forked child: cap this process, analyse, write the answer to ``out``, exit. Never returns."""
    code = 0
    try:
        devnull = os.open(os.devnull, os.O_RDWR)
        os.dup2(devnull, 0)  # the helper's pipes to the parent are not the child's to read or write
        os.dup2(devnull, 1)
        _lower(resource.RLIMIT_AS, int(request["memory_bytes"]))
        _lower(resource.RLIMIT_CPU, int(request["timeout_s"]) + 2)  # a backstop to the helper's deadline
        try:
            answer: dict[str, Any] = {
                "report": analysis(request["source"], request["cfg"], request["reference_source"])
            }
        except MemoryError:
            answer = {"failed": "memory", "message": "out of memory"}
        except Exception as exc:  # noqa: BLE001 - a fault of the analysis itself, said as such to the parent
            answer = {"failed": "raised", "message": f"{type(exc).__name__}: {exc}"[:2000]}
        data = json.dumps(answer).encode()
        if len(data) > MAX_REPORT:
            data = json.dumps({"failed": "died", "message": f"a report of {len(data):,} bytes"}).encode()
        view = memoryview(data)
        while view:
            view = view[os.write(out, view) :]
    except BaseException:  # noqa: BLE001 - out of memory while answering, or worse: the helper sees no answer
        code = 1
    os._exit(code)


def _lower(which: int, value: int) -> None:
    """Lower the soft limit ``which`` of this process to ``value`` (to its hard limit where that is lower)."""
    _, hard = resource.getrlimit(which)
    resource.setrlimit(which, (value if hard == resource.RLIM_INFINITY else min(value, hard), hard))


def _run_child(analysis: Callable[..., dict[str, Any]], request: dict[str, Any]) -> dict[str, Any]:
    """Fork a child for one request; its answer, or why there is none."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_end)
        _child(analysis, request, write_end)
    os.close(write_end)
    deadline = time.monotonic() + float(request["timeout_s"])
    chunks, got, late = [], 0, False
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([read_end], [], [], left)[0]:
                late = True
                break
            data = os.read(read_end, 1 << 20)
            if not data:
                break
            chunks.append(data)
            got += len(data)
            if got > MAX_REPORT:
                break
    finally:
        os.close(read_end)
        if late or got > MAX_REPORT:
            os.kill(pid, signal.SIGKILL)
        _, status = os.waitpid(pid, 0)
    if late:
        return {"failed": "deadline", "message": f"ran past its deadline of {request['timeout_s']} s"}
    try:
        answer = loads_plain(b"".join(chunks)) if got <= MAX_REPORT else None
    except (ValueError, RecursionError):
        answer = None
    if isinstance(answer, dict):
        return answer
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        named: dict[int, str] = {
            signal.SIGXCPU: "its CPU-time limit",
            signal.SIGKILL: "SIGKILL",
            signal.SIGSEGV: "SIGSEGV",
        }
        why = named.get(sig)
        return {"failed": "died", "message": f"died of {why or f'signal {sig}'}"}
    return {"failed": "died", "message": "ended without a report (often: out of memory while writing it)"}


def serve(entry: str, stdin: BinaryIO, stdout: BinaryIO) -> None:
    """The helper's loop: the analysis ``entry`` imported once, then for each request one child forked and one
    answer written, until ``stdin`` closes."""
    module, _, name = entry.partition(":")
    analysis = getattr(importlib.import_module(module), name)
    while True:
        request = _read_frame(stdin.fileno(), None, 1 << 30)
        if request is None:
            return
        _write_frame(stdout, _run_child(analysis, request))


if __name__ == "__main__":
    serve(sys.argv[1], sys.stdin.buffer, sys.stdout.buffer)
