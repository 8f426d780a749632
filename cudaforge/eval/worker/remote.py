"""The trusted side's handle on one sandboxed candidate worker (``cudaforge.eval.worker.candidate_worker``).

``CandidateProcess`` starts the worker in a sandbox (``cudaforge.proc.sandbox``) with a private scratch
directory, talks to it over a ``Channel`` with a deadline on every request, serves its build
requests (the trusted side compiles, in a compiler sandbox, and writes the cache), and ends it:
``close()`` kills every process of the sandbox whatever happened. Anything the worker sends is
checked here before it is used; a worker that times out, dies or breaks the protocol raises
``WorkerFailure`` with a status and a message the Judge can read, never anything else.
"""

from __future__ import annotations

import os
import socket
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from cudaforge.eval.worker.channel import Channel, ChannelError
from cudaforge.languages import jit_cache_env
from cudaforge.paths import PROJECT_ROOT
from cudaforge.proc.isolation import describe_exit, scrubbed_env, tail
from cudaforge.proc.sandbox import Sandbox, SandboxedProcess, SandboxMode, describe
from cudaforge.proc.sandbox.scratch import new_scratch
from cudaforge.vendors import pin_env

LOG_CAP = 64 << 20
"""The largest stdout or stderr file the worker may write (RLIMIT_FSIZE; past it the worker dies)."""
WORKER_STATUSES = {
    "runtime_error",
    "compile_error",
    "invalid",
    "unsupported",
    "compiled",
    "incorrect",
    "crashed",
    "timeout",
    "rejected",
}
"""Statuses a worker may report for a failure (never ``correct``: only the verifier finds that)."""


WALL_MISSING = "this machine cannot give the candidate the sandbox's wall"
"""What a worker's failure says when its sandbox could not be built (the words only: the evaluator decides on
``WorkerFailure.wall_missing``, which no reply of a worker can set)."""


class WorkerFailure(Exception):
    """The worker failed a request: ``status`` (an EvalStatus value) and ``message``. ``wall_missing``: its sandbox
    could not be built (set by ``wait_hello`` from the sandbox's own status, before any candidate code exists)."""

    def __init__(self, status: str, message: str, *, wall_missing: bool = False) -> None:
        super().__init__(message)
        self.status, self.message, self.wall_missing = status, message, wall_missing


class CandidateProcess:
    """One sandboxed worker: started at construction, ended by ``close``."""

    def __init__(
        self,
        *,
        device: str,
        mode: SandboxMode,
        logs_dir: str,
        env: dict[str, str] | None = None,
        cpu_seconds: int = 3600,
        namespaces: bool = True,
        allow_weak: bool = False,
        memory_bytes: int = 16 << 30,
        scratch_bytes: int = 2 << 30,
        scratch_files: int = 50_000,
    ) -> None:
        """``device``: ``cuda`` (the GPU that ``CUDA_VISIBLE_DEVICES`` names) or ``cpu``; ``logs_dir``: a
        directory of the trusted side's, for the worker's stdout and stderr; the rest: the sandbox's
        (``cudaforge.proc.sandbox.Sandbox``)."""
        self.device, self.mode = device, SandboxMode(mode)
        self.scratch = new_scratch("cand", scratch_bytes if self.mode is not SandboxMode.off else 0, scratch_files)
        self.logs = Path(logs_dir)
        ours, theirs = socket.socketpair()
        s = self.scratch
        child_env = scrubbed_env(
            {
                "HOME": s,
                "TMPDIR": s,
                "XDG_CACHE_HOME": f"{s}/.cache",
                **jit_cache_env(s),
                "TORCH_EXTENSIONS_DIR": f"{s}/torch_extensions",
                "CUDA_CACHE_PATH": f"{s}/.nv",
                "PYTHONUNBUFFERED": "1",
                "TORCHINDUCTOR_CACHE_DIR": f"{s}/torchinductor",  # torch sets it in the trusted process: not that one
                "PYTHONDONTWRITEBYTECODE": "1",
                "CUDAFORGE_WORKER_DEVICE": device,
                "PYTHONSAFEPATH": "1",  # its working folder (the scratch it writes) is not where imports are found
                "USER": "cudaforge",
                "LOGNAME": "cudaforge",  # its uid has no entry in /etc/passwd
                "PYTHONPATH": os.pathsep.join(p for p in (str(PROJECT_ROOT), os.environ.get("PYTHONPATH")) if p),
                **(env or {}),
            }
        )
        if device == "cpu":
            child_env.update(pin_env(None))
        self.sandbox = Sandbox(
            mode=self.mode,
            scratch=self.scratch,
            cpu_seconds=cpu_seconds,
            file_bytes=LOG_CAP,
            namespaces=namespaces,
            allow_weak=allow_weak,
            memory_bytes=memory_bytes,
            scratch_bytes=scratch_bytes,
            scratch_files=scratch_files,
        )
        with (self.logs / "worker_stdout.log").open("wb") as out, (self.logs / "worker_stderr.log").open("wb") as err:
            self.process: SandboxedProcess = self.sandbox.start(
                [sys.executable, "-P", "-m", "cudaforge.eval.worker.candidate_worker", str(theirs.fileno())],
                env=child_env,
                pass_fds=(theirs.fileno(),),
                stdout=out,
                stderr=err,
            )
        theirs.close()
        self.channel = Channel(ours)
        self.hello: dict[str, Any] = {}
        self.rtt_s = 0.0
        self.builds: list[Any] = []
        """The BuildRecords of the builds served to this worker (the trusted side's own logs)."""

    # -- state -------------------------------------------------------------------------------

    def sandbox_status(self, timeout_s: float = 30.0) -> dict[str, Any]:
        """What the sandbox applied (``cudaforge.proc.sandbox.SandboxedProcess.status``)."""
        return self.process.status(timeout_s)

    def sandbox_line(self) -> str:
        """One line: what held and what did not."""
        return describe(self.sandbox_status())

    def exit_reason(self) -> str:
        """Why the worker is gone, with the end of its stderr."""
        try:
            code = self.process.proc.wait(timeout=5)
        except Exception:  # noqa: BLE001
            code = None
        text = describe_exit(code, who="the worker", sandboxed=True, gone="the worker stopped answering")
        stderr = tail(self.logs / "worker_stderr.log").strip()
        if stderr:
            text += "\nlast lines of its stderr:\n" + "\n".join(stderr.splitlines()[-10:])
        return text

    # -- requests ----------------------------------------------------------------------------

    def wait_hello(self, timeout_s: float) -> dict[str, Any]:
        """Wait for the worker's start-up; measure the channel's round trip before any candidate code exists."""
        status = self.sandbox_status(timeout_s)
        if not status.get("ok"):
            how = (
                "eval.sandbox=required"
                if self.mode is SandboxMode.required
                else "eval.sandbox=auto without eval.allow_weak_sandbox=true"
            )
            raise WorkerFailure(
                "unsupported",
                f"{how}, and {WALL_MISSING}: " + "; ".join(status.get("missing", [])),
                wall_missing=True,
            )
        try:
            message, _ = self.channel.recv(timeout_s)
        except ChannelError as exc:
            raise self._failure(exc, "starting the worker") from None
        if message.get("op") != "hello":
            raise WorkerFailure("crashed", "the worker did not start as expected")
        self.hello = message
        trips = []
        for _ in range(5):
            started = time.perf_counter()
            self.request({"op": "ping"}, timeout_s=10.0)
            trips.append(time.perf_counter() - started)
        self.rtt_s = min(trips)
        return message

    def _failure(self, exc: ChannelError, what: str) -> WorkerFailure:
        if exc.kind == "timeout":
            return WorkerFailure("timeout", f"{what} ran past its deadline; the sandbox was killed")
        if exc.kind == "protocol":
            return WorkerFailure("crashed", f"{what}: the worker broke the protocol ({exc}); the sandbox was killed")
        return WorkerFailure("crashed", f"{what}: {self.exit_reason()}")

    def request(
        self,
        message: dict[str, Any],
        *,
        timeout_s: float,
        fds: tuple[int, ...] = (),
        on_build: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
    ) -> dict[str, Any]:
        """Send one request; its reply (``ok`` true), or WorkerFailure. Build requests in between go to
        ``on_build`` (refused without it). ``timeout_s`` bounds the whole request, builds included."""
        what = {
            "load": "importing the candidate",
            "model": "building ModelNew",
            "call": "a call of ModelNew",
            "timed": "a timed call",
            "batch": "the timing cross-check",
            "prebuild": "compiling its JIT kernels ahead",
        }.get(str(message.get("op")), "a request")
        deadline = time.monotonic() + timeout_s
        try:
            self.channel.send(message, fds)
            while True:
                reply, _ = self.channel.recv(deadline - time.monotonic())
                if reply.get("op") == "build":
                    inputs = reply.get("inputs")
                    answer = (
                        on_build(inputs)
                        if on_build and isinstance(inputs, dict)
                        else {"status": "crashed", "error": "builds are not served here"}
                    )
                    self.channel.send(answer)
                    continue
                break
        except ChannelError as exc:
            self.close()
            raise self._failure(exc, what) from None
        if reply.get("ok") is True:
            return reply
        status = reply.get("status")
        status = status if isinstance(status, str) and status in WORKER_STATUSES else "runtime_error"
        message_text = reply.get("message")
        raise WorkerFailure(status, str(message_text)[:20000] if message_text is not None else f"{what} failed")

    def close(self) -> None:
        """End the worker and everything it started; remove its scratch directory."""
        try:
            if self.process.alive():
                self.channel.send({"op": "exit"})
        except ChannelError:
            pass
        self.channel.close()
        self.process.cleanup()

    def stop(self) -> bool:
        """Freeze every process of the sandbox (while the reference is timed)."""
        return self.process.stop()

    def cont(self) -> bool:
        """Let them run again."""
        return self.process.cont()
