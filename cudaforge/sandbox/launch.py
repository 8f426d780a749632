"""The sandbox launcher: ``python -m cudaforge.sandbox.launch SPEC_JSON -- PROGRAM ARG...``.

Trusted code, stdlib only, run by the trusted side (``cudaforge.sandbox.Sandbox``) in a new session.
It applies what the spec asks for, reports what it applied on the spec's status descriptor (one JSON
line), and executes PROGRAM as the sandboxed worker. Three processes:

* the **outer** launcher (outside any new namespace): dies with its parent (``PR_SET_PDEATHSIG``),
  waits for the init and exits with the worker's status;
* the **init**: pid 1 of a new pid namespace when namespaces are available (then its death kills
  every process in the namespace), else a child subreaper; it mounts a private /proc, serves the
  trusted side's stop/continue requests on the control descriptor (``S``/``C``, answered ``s``/``c``:
  every process of the sandbox is stopped or continued) and, when the worker exits or the control
  descriptor closes, kills every remaining process of the sandbox and exits;
* the **worker**: a new session; rlimits; an unprivileged uid where that uid can run the interpreter,
  else root without any capability; ``no_new_privs``; Landlock; then ``exec``.

Under ``mode=required`` any protection that cannot be applied makes the worker exit with code 97
before executing anything, its status saying which.
"""

from __future__ import annotations

import json
import os
import select
import signal
import sys
import time
from typing import Any

from cudaforge.sandbox import linux

REFUSED_EXIT = 97
"""The worker's exit code when ``mode=required`` and a protection is missing."""


def _write_status(fd: int | None, status: dict[str, Any]) -> None:
    if fd is None:
        return
    try:
        os.write(fd, (json.dumps(status) + "\n").encode())
    except OSError:
        pass


def _uid_can_run(uid: int, gid: int, paths: list[str]) -> tuple[bool, str]:
    """Whether ``uid`` can read and search every path in ``paths`` (tried in a throw-away child)."""
    pid = os.fork()
    if pid == 0:
        code = 0
        try:
            os.setgroups([])
            os.setresgid(gid, gid, gid)
            os.setresuid(uid, uid, uid)
            for i, path in enumerate(paths):
                if not os.access(path, os.R_OK | (os.X_OK if os.path.isdir(path) or i == 0 else 0)):
                    code = 10 + min(i, 100)
                    break
        except OSError:
            code = 2
        os._exit(code)
    _, status = os.waitpid(pid, 0)
    code = os.waitstatus_to_exitcode(status)
    if code == 0:
        return True, ""
    if code >= 10:
        return False, f"uid {uid} cannot read {paths[code - 10]}"
    return False, f"cannot switch to uid {uid}"


def _pids_cgroup(limit: int) -> tuple[str | None, str]:
    """A pids cgroup (v2 or v1) holding at most ``limit`` tasks; (its directory, "") or (None, why not)."""
    candidates = []
    if os.path.exists("/sys/fs/cgroup/cgroup.controllers"):
        try:
            if "pids" in open("/sys/fs/cgroup/cgroup.subtree_control").read().split():
                candidates.append("/sys/fs/cgroup")
        except OSError:
            pass
    candidates.append("/sys/fs/cgroup/pids")
    for base in candidates:
        if not os.path.isdir(base):
            continue
        path = os.path.join(base, f"cudaforge-sandbox-{os.getpid()}-{time.monotonic_ns()}")
        try:
            os.mkdir(path)
            with open(os.path.join(path, "pids.max"), "w") as f:
                f.write(str(limit))
            return path, ""
        except OSError as exc:
            try:
                os.rmdir(path)
            except OSError:
                pass
            why = f"{base}: {exc.strerror}"
            continue
    return None, locals().get("why", "no pids cgroup controller")


def _join_cgroup(path: str) -> None:
    with open(os.path.join(path, "cgroup.procs"), "w") as f:
        f.write(str(os.getpid()))


def _children() -> list[int]:
    pids: list[int] = []
    try:
        for tid in os.listdir("/proc/self/task"):
            with open(f"/proc/self/task/{tid}/children") as f:
                pids += [int(p) for p in f.read().split()]
    except OSError:
        pass
    return pids


class _Init:
    """The init of one sandbox: signals for everything in it, reaping, and the end of it."""

    def __init__(self, in_namespace: bool, control_fd: int | None) -> None:
        self.in_namespace, self.control_fd = in_namespace, control_fd
        self.worker = 0

    def signal_all(self, sig: int) -> None:
        """``sig`` to every process of the sandbox but the init."""
        if self.in_namespace:
            try:
                os.kill(-1, sig)
            except OSError:
                pass
            return
        own = os.getpgid(0)
        for pid in {self.worker, *_children()}:
            try:
                pgid = os.getpgid(pid)
                if pgid != own:
                    os.killpg(pgid, sig)
                else:
                    os.kill(pid, sig)
            except OSError:
                pass

    def kill_everything(self) -> None:
        """SIGKILL every process of the sandbox and reap them all."""
        for _ in range(1000):
            self.signal_all(signal.SIGKILL)
            for pid in _children():
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
            try:
                while True:
                    pid, _ = os.waitpid(-1, os.WNOHANG)
                    if pid == 0:
                        time.sleep(0.001)
                        break
            except ChildProcessError:
                return

    def serve(self) -> int:
        """Serve stop/continue requests until the worker exits; return its exit code."""
        wake_r, wake_w = os.pipe()
        os.set_blocking(wake_w, False)
        signal.set_wakeup_fd(wake_w)
        signal.signal(signal.SIGCHLD, lambda *_: None)
        fds = [wake_r] + ([self.control_fd] if self.control_fd is not None else [])
        code = None
        while code is None:
            try:
                while True:
                    pid, status = os.waitpid(-1, os.WNOHANG)
                    if pid == 0:
                        break
                    if pid == self.worker:
                        code = os.waitstatus_to_exitcode(status)
            except ChildProcessError:
                code = code if code is not None else 1
            if code is not None:
                break
            ready, _, _ = select.select(fds, [], [], 1.0)
            if wake_r in ready:
                os.read(wake_r, 4096)
            if self.control_fd is not None and self.control_fd in ready:
                data = os.read(self.control_fd, 64)
                if not data:  # the trusted side is gone: end the sandbox
                    code = 128 + signal.SIGKILL
                    break
                for byte in data:
                    if byte == ord("S"):
                        self.signal_all(signal.SIGSTOP)
                        os.write(self.control_fd, b"s")
                    elif byte == ord("C"):
                        self.signal_all(signal.SIGCONT)
                        os.write(self.control_fd, b"c")
        self.kill_everything()
        return code


def _worker(spec: dict[str, Any], argv: list[str], status: dict[str, Any]) -> None:
    """Apply the worker's protections and exec ``argv`` (never returns)."""
    required = spec.get("mode") == "required"
    missing: list[str] = status["missing"]
    status_fd, control_fd = spec.get("status_fd"), spec.get("control_fd")
    try:
        os.setsid()
        if control_fd is not None:
            os.close(control_fd)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        signal.set_wakeup_fd(-1)
        os.chdir(spec["scratch"])
        try:
            status["rlimits"] = linux.set_rlimits(spec.get("rlimits", {}))
        except (OSError, ValueError) as exc:
            missing.append(f"rlimits: {exc}")
        uid = spec.get("uid")
        if os.geteuid() == 0:
            if uid is not None and status.get("uid_ok"):
                gid = spec.get("gid", uid)
                os.setgroups([])
                os.setresgid(gid, gid, gid)
                os.setresuid(uid, uid, uid)  # every capability goes with uid 0
                status["uid"] = uid
            else:
                status["uid"] = 0
            linux.drop_all_capabilities()
            status["capabilities"] = "none" if linux.effective_capabilities() == 0 else "some left"
            if status["capabilities"] != "none":
                missing.append("capabilities: some are still effective")
        else:
            status["uid"] = os.geteuid()
            status["capabilities"] = "none" if linux.effective_capabilities() == 0 else "some left"
        linux.set_no_new_privs()
        abi = linux.landlock_abi()
        rules = [(p, linux.READ) for p in spec.get("read", [])]
        rules += [(p, linux.WRITE) for p in spec.get("write", [])]
        rules += [(p, linux.DEVICE) for p in spec.get("devices", [])]
        # the CUDA driver writes into its process's /proc/<pid>, and cudaGetDeviceCount fails with error 304 when
        # it cannot (seen on an H200, 2026-12-01; and under ncu, whose target is a child of the sandboxed program,
        # 2026-12-02). As an unprivileged uid in its own pid namespace (a private /proc) the program may write what
        # the file modes let that uid write there: only its own processes' entries. As uid 0 (no capabilities, but
        # the owner of /proc/sys and /proc/sysrq-trigger) only its own /proc/<pid>, resolved here before exec.
        proc_all = status.get("uid") not in (None, 0) and status.get("proc") == "private"
        rules.append(("/proc" if proc_all else "/proc/self", linux.READ | linux.FS_WRITE_FILE | linux.FS_TRUNCATE))
        status["proc_writes"] = "the uid's own processes" if proc_all else "its own /proc/<pid>"
        if abi:
            try:
                applied = linux.landlock_restrict(rules, abi, tuple(spec.get("landlock_skip", ())))
                status["landlock"] = {k: v for k, v in applied.items() if k not in ("paths", "skipped")}
                if not applied["tcp"] and "net" not in status["namespaces"]:
                    missing.append(f"network: no network namespace and Landlock ABI {abi} cannot block TCP")
                if not applied["scopes"]:
                    status["notes"].append(f"Landlock ABI {abi} < 6: signals and abstract sockets are not scoped")
            except OSError as exc:
                missing.append(f"landlock: {exc}")
        else:
            missing.append("landlock: not available in this kernel")
        status["ok"] = not (required and missing)
        _write_status(status_fd, status)
        if status_fd is not None:
            os.close(status_fd)
        if required and missing:
            os._exit(REFUSED_EXIT)
        os.execv(argv[0], argv)
    except BaseException as exc:  # noqa: BLE001 - never fall through to the init's code
        missing.append(f"launcher: {type(exc).__name__}: {exc}")
        status["ok"] = False
        _write_status(status_fd, status)
        os._exit(REFUSED_EXIT)


def main() -> None:
    """Run the launcher (see the module docstring)."""
    spec = json.loads(sys.argv[1])
    argv = sys.argv[sys.argv.index("--") + 1:]
    linux.set_parent_death_signal(signal.SIGKILL)
    if spec.get("parent_pid") and os.getppid() != spec["parent_pid"]:
        os._exit(1)  # the trusted side died before the death signal was set
    status: dict[str, Any] = {"ok": False, "namespaces": [], "missing": [], "notes": [], "mode": spec.get("mode")}
    missing = status["missing"]
    if os.geteuid() == 0 and spec.get("uid") is not None:  # before unshare: a child made after it is the new pid 1
        status["uid_ok"], why = _uid_can_run(spec["uid"], spec.get("gid", spec["uid"]), spec.get("uid_must_read", []))
        if not status["uid_ok"]:
            status["notes"].append(f"kept uid 0 without capabilities: {why}")
        else:  # the scratch directory becomes the sandbox uid's
            for root, dirs, files in os.walk(spec["scratch"]):
                for name in [root, *(os.path.join(root, n) for n in dirs + files)]:
                    os.chown(name, spec["uid"], spec.get("gid", spec["uid"]), follow_symlinks=False)
    if spec.get("namespaces", True):
        flags = sum(linux.NAMESPACE_FLAGS.values())
        try:
            if os.geteuid() == 0:
                linux.unshare(flags)
            else:
                uid, gid = os.geteuid(), os.getegid()
                linux.unshare(flags | linux.CLONE_NEWUSER)
                linux.map_own_ids(uid, gid)
                status["notes"].append("namespaces through an unprivileged user namespace")
            status["namespaces"] = list(linux.NAMESPACE_FLAGS)
        except OSError as exc:
            missing.append(f"namespaces: {exc.strerror or exc}")
    else:
        missing.append("namespaces: turned off by the spec")
    init_pid = os.fork()
    if init_pid:
        for fd in (spec.get("control_fd"), spec.get("status_fd")):
            if fd is not None:
                os.close(fd)
        _, wait_status = os.waitpid(init_pid, 0)
        os._exit(os.waitstatus_to_exitcode(wait_status) & 0xFF)
    # the init
    linux.set_parent_death_signal(signal.SIGKILL)
    in_namespace = bool(status["namespaces"])
    if in_namespace:
        try:
            linux.private_proc()
            status["proc"] = "private"
        except OSError as exc:
            missing.append(f"/proc: {exc.strerror or exc}")
            in_namespace = False
    status["kill_all"] = "pid namespace" if in_namespace else "subreaper"
    if not in_namespace:
        try:
            linux.set_child_subreaper()
        except OSError as exc:
            missing.append(f"subreaper: {exc}")
    cgroup = None
    if spec.get("pids_max"):
        cgroup, why = _pids_cgroup(int(spec["pids_max"]))
        status["pids_max"] = int(spec["pids_max"]) if cgroup else None
        if cgroup is None:
            status["notes"].append(f"no process-count limit: {why}")
    init = _Init(in_namespace, spec.get("control_fd"))
    worker = os.fork()
    if worker == 0:
        if cgroup:
            try:
                _join_cgroup(cgroup)
            except OSError as exc:
                status["notes"].append(f"no process-count limit: {exc.strerror}")
                status["pids_max"] = None
        _worker(spec, argv, status)
    init.worker = worker
    status_fd = spec.get("status_fd")
    if status_fd is not None:
        os.close(status_fd)
    code = init.serve()
    if cgroup:
        for _ in range(100):
            try:
                os.rmdir(cgroup)
                break
            except OSError:
                time.sleep(0.01)
    os._exit(code & 0xFF if code >= 0 else 128 + (-code))


if __name__ == "__main__":
    main()
