"""Sandboxes for untrusted code (candidates, and the compiler runs on their sources).

The trusted side describes a sandbox (``Sandbox``: a private writable scratch directory, what may
be read, which device nodes may be opened, rlimits, quotas) and starts a program in it
(``Sandbox.start``). ``cudaforge.proc.sandbox.launch`` applies it. The wall: new pid, mount, network and IPC
namespaces (as root, or through an unprivileged user namespace); a minimal root file system holding only
what the sandbox may read, its scratch folder, a private /tmp, /dev and /proc (``cudaforge.proc.sandbox.rootfs``);
an unprivileged uid, never 0 (as root, a uid of its own per sandbox); no capability, ``no_new_privs``; a
seccomp filter (``cudaforge.proc.sandbox.seccomp``). Further layers: Landlock (read-only everything it may read,
write only the scratch folder, no TCP, no signals or abstract sockets outside), cgroup limits on tasks and
memory, a size quota on the scratch folder (a tmpfs of its own, as root), rlimits; and an init that kills
every process of the sandbox when the program ends or the trusted side goes away.

Modes (``eval.sandbox``): ``auto`` and ``required`` refuse to run anything when a part of the wall is missing
(the status says which); under ``auto`` the caller may allow a weak sandbox instead (``allow_weak``, from
``eval.allow_weak_sandbox``): it then runs with what this machine offers and its status says ``weak``; ``off``
runs the program in a plain new session (tests of the unsandboxed behaviour only). docs/evaluation.md
("Threat model") says what holds where.

Stdlib only: importable where torch is not.
"""

from __future__ import annotations

import enum
import json
import os
import secrets
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

from cudaforge.paths import PACKAGE_DIR, PROJECT_ROOT
from cudaforge.proc.sandbox.environment import sandbox_env
from cudaforge.proc.sandbox.scratch import new_scratch, release_scratch, scratch_quota
from cudaforge.vendors import current

SANDBOX_UIDS = range(1_500_000_000, 1_500_000_000 + (1 << 24))
"""When the trusted side is root, each sandbox runs as a uid of its own drawn from here (and the same gid): no
other process on the machine has it, so no limit counted per uid (processes, keyrings) is shared."""


def fresh_uid() -> int:
    """An unprivileged uid for one sandbox (see :data:`SANDBOX_UIDS`)."""
    return SANDBOX_UIDS[secrets.randbelow(len(SANDBOX_UIDS))]


class SandboxMode(str, enum.Enum):
    """How strictly candidates are sandboxed (``eval.sandbox``)."""

    required = "required"
    auto = "auto"
    off = "off"


class SandboxRefused(RuntimeError):
    """``mode=required`` and a protection is not available here; the message says which."""


def _package_root() -> str:
    """The folder that holds the ``cudaforge`` package (a checkout's root, or site-packages): on PYTHONPATH."""
    return str(PROJECT_ROOT)


def _package_dir() -> str:
    """The ``cudaforge`` package itself: what a sandbox may read of it (not the rest of a checkout)."""
    return str(PACKAGE_DIR)


ETC_FILES = (
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
    "/etc/passwd",
    "/etc/group",
    "/etc/nsswitch.conf",
    "/etc/localtime",
    "/etc/alternatives",
    "/etc/os-release",
    "/etc/debian_version",
    "/etc/host.conf",
    "/etc/hosts",
    "/etc/mime.types",
    "/etc/nvidia",
    "/etc/OpenCL",
    "/etc/vulkan",
    "/etc/gai.conf",
    "/etc/timezone",
)
"""What of /etc a Python, torch, Triton or compiler process reads; the rest of /etc (shadow, ssh keys,
credentials some tools keep there) stays unreadable."""


def _toolchain_dirs() -> set[str]:
    """Every directory on PATH but those in a home folder (``~/.cargo/bin``: a home is no toolchain), the folder of
    each compiler found there, and the prefix of each (``/opt/gcc`` for ``/opt/gcc/bin/g++``: its headers and
    helpers), except a home directory as a prefix."""
    path = [d for d in os.environ.get("PATH", "").split(os.pathsep) if d and os.path.isdir(d)]
    bins = {d for d in path if not any(_inside(os.path.realpath(d), h) for h in ("/root", "/home"))}
    for found in [shutil.which(t) for t in ("gcc", "g++", "cc", "c++", "cpp", "ld", "as", "ninja")] + [
        current().compiler(None)
    ]:
        if found:  # a compiler a home folder holds is bound, its own folder only
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
    paths = {
        sys.prefix,
        sys.base_prefix,
        sys.exec_prefix,
        os.path.dirname(os.path.realpath(sys.executable)),
        _package_dir(),
        "/usr",
        "/lib",
        "/lib64",
        "/lib32",
        "/bin",
        "/sbin",
        "/proc",
        "/sys",
        *ETC_FILES,
        *current().toolkit_roots(),
        *_toolchain_dirs(),
    }
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        paths.add(sysconfig.get_paths().get(key, ""))
    cwd = os.path.realpath(os.getcwd())  # on sys.path under ``python -m``: a verifier's holds its payload.json
    paths.update(p for p in sys.path if p and os.path.isdir(p) and os.path.realpath(p) != cwd)
    return sorted(p for p in paths if p and os.path.exists(p) and not _hidden(os.path.realpath(p)))


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def _hidden(path: str) -> bool:
    """Whether ``path`` stays out of a sandbox although the interpreter would look there: anything in the temporary
    folder (the verifiers' working folders, other evaluations' scratch), or a part of a source checkout that holds
    this package (its tests, run directories, caches). The interpreter's own folders (a virtualenv may sit in a
    checkout or in /tmp) and the package itself are never hidden."""
    keep = [os.path.realpath(p) for p in (sys.prefix, sys.base_prefix, sys.exec_prefix, _package_dir())]
    if any(_inside(path, k) for k in keep):
        return False
    checkout = os.path.realpath(_package_root())
    is_checkout = (Path(checkout) / "pyproject.toml").exists() or (Path(checkout) / ".git").exists()
    around = [os.path.realpath(tempfile.gettempdir())] + ([checkout] if is_checkout else [])
    return any(_inside(path, a) for a in around)


def default_device_paths() -> list[str]:
    """Device nodes a candidate may open: the null/zero/random devices and the GPU vendor's (``/dev/nvidia*``)."""
    nodes = ["/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom"]
    return [n for n in nodes if os.path.exists(n)] + current().device_nodes()


@dataclass
class Sandbox:
    """One sandbox's description; ``start`` runs a program in it."""

    mode: SandboxMode = SandboxMode.auto
    scratch: str = ""
    """The private writable directory (made by ``start`` when empty: :func:`new_scratch`, with the quota below)."""
    read: list[str] = field(default_factory=default_read_paths)
    """Hierarchies the program may read and execute (nothing else is in its root)."""
    write: list[str] = field(default_factory=list)
    """Extra hierarchies it may write, beside ``scratch``."""
    devices: list[str] = field(default_factory=default_device_paths)
    """Device nodes it may open read-write (with their ioctls)."""
    uid: int | None = None
    """The uid to run as when started by root (None: a fresh one, :func:`fresh_uid`); never 0."""
    own_uid: bool = False
    """Whether ``uid`` was drawn for this sandbox alone (set by ``start``; a compiler's sandbox shares its
    candidate's): then, without cgroups, ``kill`` can tell its end by its uid's processes."""
    cpu_seconds: int = 3600
    """RLIMIT_CPU of the program (all its threads)."""
    file_bytes: int = 256 << 20
    """RLIMIT_FSIZE: the largest file it may write (a write past it kills it with SIGXFSZ)."""
    processes: int = 4096
    """Tasks (processes and threads) it may have at once (a pids cgroup; RLIMIT_NPROC as well)."""
    nproc_limit: bool = True
    """Set RLIMIT_NPROC too. It counts every process of the uid, so a sandbox sharing its uid with another (the
    compiler runs as the candidate's uid, to read its scratch folder) sets none: the candidate's processes must not
    stop the compiler's forks (a red-team attack cached a failed build under an honest candidate's key that way)."""
    open_files: int = 4096
    """RLIMIT_NOFILE."""
    memory_bytes: int = 16 << 30
    """Memory its processes may hold together (a memory cgroup; 0: no limit); past it the kernel's OOM killer
    ends one of them, nothing outside."""
    scratch_bytes: int = 2 << 30
    """Size quota of the scratch folder made by ``start`` and of its private /tmp (each; 0: none)."""
    scratch_files: int = 50_000
    """Entries (files and folders) each of the two may hold."""
    namespaces: bool = True
    """New pid, network, mount and IPC namespaces (False: without them; the wall is then missing)."""
    allow_weak: bool = False
    """Under ``auto``: run even where a part of the wall is missing (the status says ``weak``); never under
    ``required``."""
    landlock_skip: tuple[str, ...] = ()
    """Classes of Landlock rights left unhandled (``net``, ``scopes``, ``ioctl``); empty in every real use."""

    def spec(self, control_fd: int | None, status_fd: int | None) -> dict[str, Any]:
        """The launcher's spec (JSON-serialisable)."""
        rlimits = {
            "cpu": self.cpu_seconds,
            "fsize": self.file_bytes,
            "nofile": self.open_files,
            "core": 0,
            **({"nproc": self.processes} if self.nproc_limit else {}),
        }
        uid = self.uid if self.uid else fresh_uid()
        self.own_uid = self.own_uid or not self.uid  # drawn here: no other sandbox runs as it
        self.uid = uid
        return {
            "mode": self.mode.value,
            "scratch": self.scratch,
            "read": self.read,
            "list": [_package_root()],  # on PYTHONPATH: Python lists it to find the package bound below it
            "write": [self.scratch, *self.write],
            "devices": self.devices,
            "uid": uid,
            "gid": uid,
            "uid_must_read": [os.path.realpath(sys.executable), _package_dir(), sys.prefix, *self.read_needed()],
            "rlimits": rlimits,
            "pids_max": self.processes,
            "memory_bytes": self.memory_bytes,
            "tmp_bytes": self.scratch_bytes or (1 << 30),
            "tmp_files": self.scratch_files or 100_000,
            "namespaces": self.namespaces,
            "allow_weak": self.allow_weak,
            "control_fd": control_fd,
            "status_fd": status_fd,
            "parent_pid": os.getpid(),
            "landlock_skip": list(self.landlock_skip),
        }

    @staticmethod
    def read_needed() -> list[str]:
        """Paths the sandbox uid must be able to read for the program to start at all."""
        import importlib.util

        needed = []
        for name in ("torch", "numpy"):
            spec = importlib.util.find_spec(name)
            if spec and spec.origin:
                needed.append(os.path.dirname(spec.origin))
        return needed

    def start(
        self,
        argv: list[str],
        *,
        env: dict[str, str],
        pass_fds: tuple[int, ...] = (),
        stdout: Any = subprocess.DEVNULL,
        stderr: Any = subprocess.DEVNULL,
        stdin: Any = subprocess.DEVNULL,
    ) -> SandboxedProcess:
        """Start ``argv`` in this sandbox (``mode=off``: in a plain new session). Never blocks on the program."""
        if not self.scratch:
            self.scratch = new_scratch("sbx", self.scratch_bytes, self.scratch_files)
        env = sandbox_env(env)
        if self.mode is SandboxMode.off:
            proc = subprocess.Popen(
                argv,
                env=env,
                cwd=self.scratch,
                pass_fds=pass_fds,
                stdin=stdin,
                stdout=stdout,
                stderr=stderr,
                start_new_session=True,
            )
            return SandboxedProcess(
                proc,
                None,
                None,
                self,
                {"ok": True, "mode": "off", "missing": ["sandbox: off"], "namespaces": [], "notes": []},
            )
        control_parent, control_child = socket.socketpair()
        status_r, status_w = os.pipe()
        spec = self.spec(control_child.fileno(), status_w)
        # -P: the scratch (its working folder, which the program inside may have written) is never on the launcher's
        # sys.path; -s: nor is a user site under $HOME, which may be that scratch too (a compiler's HOME is its build
        # folder, reused by its next run). The launcher runs as root until it drops to the sandbox's uid, and chdirs
        # to the scratch itself
        from cudaforge.proc.sandbox.launch import SPEC_ENV

        # the spec in the environment: the init's command line is anyone's to read in the sandbox (/proc/1/cmdline)
        cmd = [sys.executable, "-s", "-P", "-m", "cudaforge.proc.sandbox.launch", "--", *argv]
        launcher_env = {
            **env,
            "PYTHONPATH": os.pathsep.join(p for p in (_package_root(), env.get("PYTHONPATH")) if p),
            SPEC_ENV: json.dumps(spec),
        }
        try:
            proc = subprocess.Popen(
                cmd,
                env=launcher_env,
                cwd="/",
                stdin=stdin,
                stdout=stdout,
                stderr=stderr,
                pass_fds=(control_child.fileno(), status_w, *pass_fds),
                start_new_session=True,
            )
        finally:
            control_child.close()
            os.close(status_w)
        return SandboxedProcess(proc, control_parent, status_r, self)


class SandboxedProcess:
    """A program running in a sandbox, seen from the trusted side."""

    def __init__(
        self,
        proc: subprocess.Popen[bytes],
        control: socket.socket | None,
        status_fd: int | None,
        sandbox: Sandbox,
        status: dict[str, Any] | None = None,
    ) -> None:
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
            self._status = {
                "ok": False,
                "missing": ["the launcher reported nothing (it died before the program ran)"],
                "namespaces": [],
                "notes": [],
            }
        if not isinstance(self._status, dict):
            self._status = {
                "ok": False,
                "missing": ["the launcher's report is not an object"],
                "namespaces": [],
                "notes": [],
            }
        self._status["scratch_quota"] = scratch_quota(self.sandbox.scratch)
        if self._status["scratch_quota"] is None and self.sandbox.scratch_bytes:
            self._status.setdefault("notes", []).append("no size quota on the scratch folder (a tmpfs needs root)")
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

    def kill(self) -> bool:
        """End the sandbox now: every process in it dies (the init dies with the outer launcher). True when no
        process of it is left as far as this side can see: the launcher reaped and each of the sandbox's cgroups
        gone (a cgroup goes once its last process is reaped), or, with no cgroup, no live process of the sandbox's
        own uid (as root); False when one outlived the wait (a process stuck in the kernel), so its files are not to
        be read as final. Where a cgroup lingers, every process left in it is killed through ``cgroup.kill``. Not
        root and without cgroups, only the launcher's end is seen (the pid namespace's teardown can lag it)."""
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        if self.control is not None:
            self.control.close()
            self.control = None
        dead = True
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            dead = False
        if self._status_fd is not None:
            os.close(self._status_fd)
            self._status_fd = None
        cgroups = [
            c
            for c in (self._status or {}).get("cgroups") or []  # the launcher removes them unless killed with it
            if isinstance(c, str) and c.startswith("/sys/fs/cgroup/") and os.path.basename(c).startswith(SANDBOX_CGROUP)
        ]
        deadline = time.monotonic() + KILL_WAIT_S
        for cgroup in cgroups:
            dead = _remove_cgroup(cgroup, deadline) and dead
        uid = self.sandbox.uid  # (with no cgroup to go by, below: the sandbox's own uid)
        if not cgroups and os.geteuid() == 0 and self.sandbox.own_uid and uid is not None and uid in SANDBOX_UIDS:
            dead = _uid_gone(uid, deadline) and dead  # (the pid namespace dies after its init)
        return dead

    def cleanup(self) -> None:
        """Kill the sandbox and remove its scratch directory (a folder of :func:`new_scratch`'s; any other, such as a
        build folder of the cache, is the caller's)."""
        self.kill()
        release_scratch(self.sandbox.scratch)


KILL_WAIT_S = 5.0
"""How long ``kill`` waits for the sandbox's last process to go after the launcher's end; the wait ends as soon as
it goes (the evaluation's whole tail, a worker's CUDA context going away in it, took 0.085-0.092 s on an H100 on a
1.6 GB task: docs/results/2026-12-05_h100b.md, call 3; a larger context takes longer)."""
SANDBOX_CGROUP = "cudaforge-sandbox-"
"""The prefix of every cgroup a sandbox's launcher makes."""


def _uid_gone(uid: int, deadline: float) -> bool:
    """Whether no live process (zombies aside) runs as ``uid``, polled every 5 ms until ``deadline``."""
    while True:
        alive = False
        for name in os.listdir("/proc"):
            if not name.isdigit():
                continue
            try:  # a process names itself (comm: any bytes, a newline included): bytes, and the kernel's own lines
                with open(f"/proc/{name}/status", "rb") as handle:  # come after its Name line, so the last one wins
                    fields = dict(line.split(b":", 1) for line in handle if b":" in line)
                state, uids = fields.get(b"State", b"").strip(), (fields.get(b"Uid") or b"").split()
            except OSError:
                continue  # gone meanwhile
            if state.startswith(b"Z") or not uids:
                continue
            if uids[0] == str(uid).encode():
                alive = True
                break
        if not alive:
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.005)


def _remove_cgroup(cgroup: str, deadline: float) -> bool:
    """Remove a sandbox's cgroup, which goes once its last process is reaped (soon after the kill), polling every
    2 ms until ``deadline`` (the evaluation's tail waits here: 20 ms steps cost it 40-80 ms); after the first refusal,
    every process still in it is killed (``cgroup.kill``). True once it is gone."""
    killed = False
    while True:
        try:
            os.rmdir(cgroup)
            return True
        except FileNotFoundError:
            return True
        except OSError:
            if not killed:
                killed = True
                try:
                    with open(os.path.join(cgroup, "cgroup.kill"), "w") as handle:
                        handle.write("1")
                except OSError:
                    pass  # an older kernel without cgroup.kill: the kill of the process group stands
            if time.monotonic() > deadline:
                return False
            time.sleep(0.002)


def describe(status: dict[str, Any]) -> str:
    """One line for a result's fingerprint or a log: what held, and what did not."""
    if status.get("mode") == "off":
        return "no sandbox (eval.sandbox=off)"
    uid = status.get("uid")
    parts = ["uid 0" if uid == 0 else "an unprivileged uid", f"capabilities {status.get('capabilities', '?')}"]
    if status.get("namespaces"):
        parts.append("namespaces " + "+".join(status["namespaces"]))
    if status.get("rootfs"):
        parts.append(f"{status['rootfs']} root")
    if status.get("seccomp"):
        parts.append("seccomp")
    if status.get("landlock"):
        parts.append(f"Landlock ABI {status['landlock'].get('abi')}")
    if status.get("pids_max"):
        parts.append(f"at most {status['pids_max']} tasks")
    if status.get("memory_max"):
        parts.append(f"{status['memory_max'] / (1 << 30):.1f} GiB of memory")
    if status.get("scratch_quota"):
        parts.append(f"scratch {status['scratch_quota']}")
    text = ("WEAK (eval.allow_weak_sandbox): " if status.get("weak") else "") + ", ".join(parts)
    if status.get("missing"):
        text += "; missing: " + "; ".join(status["missing"])
    return text
