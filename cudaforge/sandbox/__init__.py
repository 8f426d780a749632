"""Sandboxes for untrusted code (candidates, and the compiler runs on their sources).

The trusted side describes a sandbox (``Sandbox``: a private writable scratch directory, what may
be read, which device nodes may be opened, the uid to run as, rlimits) and starts a program in it
(``Sandbox.start``). ``cudaforge.sandbox.launch`` applies it: new pid, network, mount and IPC
namespaces (as root, or through an unprivileged user namespace), a private /proc, an unprivileged
uid where that uid can run the interpreter (else uid 0 with no capability at all), ``no_new_privs``,
Landlock (read-only everything it needs, write only the scratch directory, no TCP, no signals or
abstract sockets outside), rlimits and a process-count limit, and an init that kills every process
of the sandbox when the program ends or the trusted side goes away.

Modes (``eval.sandbox``): ``required`` refuses to run anything when a protection is missing;
``auto`` applies what this machine offers and says what it could not (``SandboxedProcess.status``,
recorded in each result's fingerprint); ``off`` runs the program in a plain new session (tests of
the unsandboxed behaviour only). docs/evaluation.md ("Threat model") says what holds where.

Stdlib only: importable where torch is not.
"""

from __future__ import annotations

import enum
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import sysconfig
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cudaforge.vendor import current

SANDBOX_UID = 65534
"""The unprivileged uid (``nobody``) candidates run as when the trusted side is root."""


class SandboxMode(str, enum.Enum):
    """How strictly candidates are sandboxed (``eval.sandbox``)."""

    required = "required"
    auto = "auto"
    off = "off"


class SandboxRefused(RuntimeError):
    """``mode=required`` and a protection is not available here; the message says which."""


def _package_root() -> str:
    return str(Path(__file__).resolve().parents[2])


ETC_FILES = ("/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/passwd", "/etc/group",
             "/etc/nsswitch.conf", "/etc/localtime", "/etc/alternatives", "/etc/os-release", "/etc/debian_version",
             "/etc/host.conf", "/etc/hosts", "/etc/mime.types", "/etc/nvidia", "/etc/OpenCL", "/etc/vulkan",
             "/etc/gai.conf", "/etc/timezone")  # fmt: skip
"""What of /etc a Python, torch, Triton or compiler process reads; the rest of /etc (shadow, ssh keys,
credentials some tools keep there) stays unreadable."""


def _toolchain_dirs() -> set[str]:
    """Every directory on PATH, and the prefix of each compiler found there (``/opt/gcc`` for
    ``/opt/gcc/bin/g++``: its headers and helpers), except a home directory as a prefix."""
    bins = {d for d in os.environ.get("PATH", "").split(os.pathsep) if d and os.path.isdir(d)}
    for found in [shutil.which(t) for t in ("gcc", "g++", "cc", "c++", "cpp", "ld", "as", "ninja")] + [current().compiler(None)]:
        if found:
            bins.add(str(Path(os.path.realpath(found)).parent))
    dirs = set(bins)
    for directory in bins:  # /opt/gcc/bin -> /opt/gcc: the compiler's own headers (seen on an H200 image)
        real = Path(os.path.realpath(directory))
        prefix = str(real.parent)
        if real.name == "bin" and prefix not in ("/", "/root", "/home") and not prefix.startswith(("/home/", "/root/")):
            dirs.add(prefix)
    return dirs


def default_read_paths() -> list[str]:
    """What a candidate or a compiler needs to read: the interpreter and its packages, this package,
    system libraries and compilers, the CUDA toolkit and driver, /proc and /sys (for device discovery)."""
    paths = {sys.prefix, sys.base_prefix, sys.exec_prefix, os.path.dirname(os.path.realpath(sys.executable)),
             _package_root(), "/usr", "/lib", "/lib64", "/lib32", "/bin", "/sbin", "/proc", "/sys", *ETC_FILES,
             *current().toolkit_roots(), *_toolchain_dirs()}  # fmt: skip
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        paths.add(sysconfig.get_paths().get(key, ""))
    paths.update(p for p in sys.path if p and os.path.isdir(p) and os.path.realpath(p) != tempfile.gettempdir())
    return sorted(p for p in paths if p and os.path.exists(p))


def default_device_paths() -> list[str]:
    """Device nodes a candidate may open: the null/zero/random devices and the GPU vendor's (``/dev/nvidia*``)."""
    nodes = ["/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom"]
    return [n for n in nodes if os.path.exists(n)] + current().device_nodes()


@dataclass
class Sandbox:
    """One sandbox's description; ``start`` runs a program in it."""

    mode: SandboxMode = SandboxMode.auto
    scratch: str = ""
    """The private writable directory (made and chowned by ``start`` when empty: a fresh temp dir)."""
    read: list[str] = field(default_factory=default_read_paths)
    """Hierarchies the program may read and execute (nothing else)."""
    write: list[str] = field(default_factory=list)
    """Extra hierarchies it may write, beside ``scratch``."""
    devices: list[str] = field(default_factory=default_device_paths)
    """Device nodes it may open read-write (with their ioctls)."""
    uid: int | None = SANDBOX_UID
    """The uid to run as when started by root (None: stay uid 0, without capabilities)."""
    cpu_seconds: int = 3600
    """RLIMIT_CPU of the program (all its threads)."""
    file_bytes: int = 256 << 20
    """RLIMIT_FSIZE: the largest file it may write (a write past it kills it with SIGXFSZ)."""
    processes: int = 4096
    """Tasks (processes and threads) it may have at once (a pids cgroup; RLIMIT_NPROC as well for a non-root uid)."""
    open_files: int = 4096
    """RLIMIT_NOFILE."""
    namespaces: bool = True
    """New pid, network, mount and IPC namespaces (False: without them, and said so in the status)."""
    landlock_skip: tuple[str, ...] = ()
    """Classes of Landlock rights left unhandled (``net``, ``scopes``, ``ioctl``); empty in every real use."""

    def spec(self, control_fd: int | None, status_fd: int | None) -> dict[str, Any]:
        """The launcher's spec (JSON-serialisable)."""
        rlimits = {"cpu": self.cpu_seconds, "fsize": self.file_bytes, "nofile": self.open_files, "core": 0}
        if os.geteuid() != 0 or self.uid is not None:
            rlimits["nproc"] = self.processes
        return {
            "mode": self.mode.value, "scratch": self.scratch, "read": self.read,
            "write": [self.scratch, *self.write], "devices": self.devices,
            "uid": self.uid, "gid": self.uid, "uid_must_read": [os.path.realpath(sys.executable), _package_root(),
                                                               sys.prefix, *self.read_needed()],
            "rlimits": rlimits, "pids_max": self.processes, "namespaces": self.namespaces,
            "control_fd": control_fd, "status_fd": status_fd, "parent_pid": os.getpid(),
            "landlock_skip": list(self.landlock_skip),
        }  # fmt: skip

    @staticmethod
    def read_needed() -> list[str]:
        """Paths the sandbox uid must be able to read for a switch of uid to be worth it."""
        import importlib.util

        needed = []
        for name in ("torch", "numpy"):
            spec = importlib.util.find_spec(name)
            if spec and spec.origin:
                needed.append(os.path.dirname(spec.origin))
        return needed

    def start(self, argv: list[str], *, env: dict[str, str], pass_fds: tuple[int, ...] = (),
              stdout: Any = subprocess.DEVNULL, stderr: Any = subprocess.DEVNULL,
              stdin: Any = subprocess.DEVNULL) -> "SandboxedProcess":
        """Start ``argv`` in this sandbox (``mode=off``: in a plain new session). Never blocks on the program."""
        if not self.scratch:
            self.scratch = tempfile.mkdtemp(prefix="cudaforge-sbx-")
        if self.mode is SandboxMode.off:
            proc = subprocess.Popen(argv, env=env, cwd=self.scratch, pass_fds=pass_fds, stdin=stdin, stdout=stdout,
                                    stderr=stderr, start_new_session=True)  # fmt: skip
            return SandboxedProcess(proc, None, None, self, {"ok": True, "mode": "off", "missing": ["sandbox: off"],
                                                             "namespaces": [], "notes": []})  # fmt: skip
        control_parent, control_child = socket.socketpair()
        status_r, status_w = os.pipe()
        spec = self.spec(control_child.fileno(), status_w)
        cmd = [sys.executable, "-m", "cudaforge.sandbox.launch", json.dumps(spec), "--", *argv]
        launcher_env = {**env, "PYTHONPATH": os.pathsep.join(p for p in (_package_root(), env.get("PYTHONPATH")) if p)}
        try:
            proc = subprocess.Popen(cmd, env=launcher_env, cwd=self.scratch, stdin=stdin, stdout=stdout, stderr=stderr,
                                    pass_fds=(control_child.fileno(), status_w, *pass_fds), start_new_session=True)  # fmt: skip
        finally:
            control_child.close()
            os.close(status_w)
        return SandboxedProcess(proc, control_parent, status_r, self)


class SandboxedProcess:
    """A program running in a sandbox, seen from the trusted side."""

    def __init__(self, proc: subprocess.Popen, control: socket.socket | None, status_fd: int | None,
                 sandbox: Sandbox, status: dict[str, Any] | None = None) -> None:
        self.proc, self.control, self.sandbox = proc, control, sandbox
        self._status_fd = status_fd
        self._status = status
        self._stopped = False

    @property
    def pid(self) -> int:
        """The launcher's pid (its process group holds the outer launcher)."""
        return self.proc.pid

    def status(self, timeout_s: float = 30.0) -> dict[str, Any]:
        """What the launcher applied: ``{ok, uid, capabilities, namespaces, landlock, rlimits, pids_max, kill_all,
        missing, notes}``; waits for it (at most ``timeout_s``). ``ok`` is False when ``mode=required`` refused."""
        if self._status is not None:
            return self._status
        deadline = time.monotonic() + timeout_s
        data = b""
        assert self._status_fd is not None
        os.set_blocking(self._status_fd, False)
        while b"\n" not in data and time.monotonic() < deadline and len(data) < 65536:
            import select

            ready, _, _ = select.select([self._status_fd], [], [], max(0.0, deadline - time.monotonic()))
            if not ready:
                break
            chunk = os.read(self._status_fd, 65536)
            if not chunk:
                break
            data += chunk
        os.close(self._status_fd)
        self._status_fd = None
        try:
            self._status = json.loads(data.split(b"\n")[0].decode())
        except (ValueError, UnicodeDecodeError):
            self._status = {"ok": False, "missing": ["the launcher reported nothing (it died before the program ran)"],
                            "namespaces": [], "notes": []}  # fmt: skip
        return self._status

    def _control(self, request: bytes, answer: bytes, timeout_s: float) -> bool:
        if self.control is None:
            return False
        try:
            self.control.settimeout(timeout_s)
            self.control.sendall(request)
            return self.control.recv(1) == answer
        except OSError:
            return False

    def stop(self, timeout_s: float = 5.0) -> bool:
        """SIGSTOP every process of the sandbox (through its init); True once done."""
        self._stopped = self._control(b"S", b"s", timeout_s)
        return self._stopped

    def cont(self, timeout_s: float = 5.0) -> bool:
        """SIGCONT every process of the sandbox; True once done."""
        ok = self._control(b"C", b"c", timeout_s)
        self._stopped = self._stopped and not ok
        return ok

    def alive(self) -> bool:
        """Whether the sandbox is still running."""
        return self.proc.poll() is None

    def kill(self) -> None:
        """End the sandbox now: every process in it dies (the init dies with the outer launcher)."""
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        if self.control is not None:
            self.control.close()
            self.control = None
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass
        if self._status_fd is not None:
            os.close(self._status_fd)
            self._status_fd = None

    def cleanup(self) -> None:
        """Kill the sandbox and remove its scratch directory."""
        self.kill()
        shutil.rmtree(self.sandbox.scratch, ignore_errors=True)


def describe(status: dict[str, Any]) -> str:
    """One line for a result's fingerprint or a log: what held, and what did not."""
    if status.get("mode") == "off":
        return "no sandbox (eval.sandbox=off)"
    parts = [f"uid {status.get('uid')}", f"capabilities {status.get('capabilities', '?')}"]
    if status.get("namespaces"):
        parts.append("namespaces " + "+".join(status["namespaces"]))
    if status.get("landlock"):
        parts.append(f"Landlock ABI {status['landlock'].get('abi')}")
    if status.get("pids_max"):
        parts.append(f"at most {status['pids_max']} tasks")
    text = ", ".join(parts)
    if status.get("missing"):
        text += "; missing: " + "; ".join(status["missing"])
    return text
