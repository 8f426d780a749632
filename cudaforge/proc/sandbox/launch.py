"""The sandbox launcher: ``CUDAFORGE_SANDBOX_SPEC=SPEC_JSON python -m cudaforge.proc.sandbox.launch -- PROGRAM ARG...``.

The spec travels in the environment, not on the command line: the init's command line is readable by everyone in
the sandbox (``/proc/1/cmdline``), its environment only by its own uid; the launcher takes it out of the environment
before anything else runs, so PROGRAM never sees it.

Trusted code, stdlib only, run by the trusted side (``cudaforge.proc.sandbox.Sandbox``) in a new session.
It applies what the spec asks for, reports what it applied on the spec's status descriptor (one JSON
line), and executes PROGRAM as the sandboxed worker. Three processes:

* the **outer** launcher (outside any new namespace): dies with its parent (``PR_SET_PDEATHSIG``),
  waits for the init and exits with the worker's status;
* the **init**: pid 1 of a new pid namespace (then its death kills every process in the namespace); it
  makes the sandbox's minimal root file system (``cudaforge.proc.sandbox.rootfs``: a fresh root holding only
  what the spec lets it read, its scratch folder, a private /tmp and /dev, a private /proc), serves the
  trusted side's stop/continue requests on the control descriptor (``S``/``C``, answered ``s``/``c``:
  every process of the sandbox is stopped or continued) and, when the worker exits or the control
  descriptor closes, kills every remaining process of the sandbox and exits;
* the **worker**: a new session; its cgroup (process count, memory); rlimits; an unprivileged uid (the
  spec's, never 0: as root a uid of its own, else the caller's in a user namespace); no capability;
  ``no_new_privs``; Landlock; a seccomp filter (``cudaforge.proc.sandbox.seccomp``); then ``exec``.

The wall is: the namespaces, the minimal root, a uid other than 0 with no capability, and the seccomp filter.
When a part of it cannot be applied, the worker exits with code 97 before executing anything, its status saying
which, unless the spec allows a weak sandbox (``allow_weak``, from ``eval.allow_weak_sandbox``; never under
``mode=required``): then it runs, and its status says ``weak``. Landlock, the cgroup limits and the rlimits are
further layers: what of them is missing is a note.
"""

from __future__ import annotations

import json
import os
import select
import signal
import sys
import time
from typing import Any, NoReturn

from cudaforge.proc.sandbox import linux, rootfs, seccomp

REFUSED_EXIT = 97
SPEC_ENV = "CUDAFORGE_SANDBOX_SPEC"
"""The environment variable the trusted side hands the launcher its spec in (taken out before PROGRAM runs)."""
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


def _own_cgroup(controller: str) -> str:
    """This process's cgroup (v1: in ``controller``'s hierarchy; v2: the unified one), as a path below its root."""
    try:
        for line in open("/proc/self/cgroup"):
            _, names, path = line.rstrip("\n").split(":", 2)
            if controller in names.split(",") or (names == "" and controller == ""):
                return path
    except (OSError, ValueError):
        pass
    return "/"


def _make_cgroup(bases: list[str], files: dict[str, str]) -> tuple[str | None, str]:
    """A new cgroup in the first of ``bases`` that takes it, with ``files`` written (name -> value; a name that does
    not exist there is skipped unless it is the first); (its folder, "") or (None, why not)."""
    why = "no cgroup folder"
    for base in bases:
        if not os.path.isdir(base):
            continue
        path = os.path.join(base, f"cudaforge-sandbox-{os.getpid()}-{time.monotonic_ns()}")
        try:
            os.mkdir(path)
            for index, (name, value) in enumerate(files.items()):
                if index and not os.path.exists(os.path.join(path, name)):
                    continue
                with open(os.path.join(path, name), "w") as f:
                    f.write(value)
            return path, ""
        except OSError as exc:
            try:
                os.rmdir(path)
            except OSError:
                pass
            why = f"{base}: {exc.strerror}"
    return None, why


def _cgroups(pids_max: int, memory_bytes: int, status: dict[str, Any]) -> list[str]:
    """The sandbox's cgroups: at most ``pids_max`` tasks and ``memory_bytes`` of memory (0: no limit asked); the
    folders to join. What could not be made is a note (a further layer, not the wall)."""
    made: list[str] = []
    if os.path.exists("/sys/fs/cgroup/cgroup.controllers"):  # v2: one folder for both, where both are delegated
        for base in dict.fromkeys([os.path.normpath("/sys/fs/cgroup" + _own_cgroup("")), "/sys/fs/cgroup"]):
            try:
                enabled = open(os.path.join(base, "cgroup.subtree_control")).read().split()
            except OSError:
                continue
            files = {}
            if pids_max and "pids" in enabled:
                files["pids.max"] = str(pids_max)
            if memory_bytes and "memory" in enabled:
                files.update({"memory.max": str(memory_bytes), "memory.swap.max": "0"})
            path = _make_cgroup([base], files)[0] if files else None
            if path:
                made.append(path)
                status["pids_max"] = pids_max if "pids.max" in files else None
                status["memory_max"] = memory_bytes if "memory.max" in files else None
                break
    if pids_max and status.get("pids_max") is None:
        path, why = _make_cgroup(["/sys/fs/cgroup/pids"], {"pids.max": str(pids_max)})
        status["pids_max"] = pids_max if path else None
        if path:
            made.append(path)
        else:
            status["notes"].append(f"no process-count limit: {why}")
    if memory_bytes and status.get("memory_max") is None:
        v1 = "/sys/fs/cgroup/memory"
        path, why = _make_cgroup(
            [v1 + _own_cgroup("memory").rstrip("/"), v1],
            {"memory.limit_in_bytes": str(memory_bytes), "memory.memsw.limit_in_bytes": str(memory_bytes)},
        )
        status["memory_max"] = memory_bytes if path else None
        if path:
            made.append(path)
        else:
            status["notes"].append(f"no memory limit: {why}")
    return made


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


def _refuse_now(spec: dict[str, Any], status: dict[str, Any]) -> bool:
    """Whether what is missing of the wall stops the program: always under ``required``, under ``auto`` unless
    the spec allows a weak sandbox."""
    if not status["missing"]:
        return False
    return spec.get("mode") == "required" or not spec.get("allow_weak", False)


def _worker(spec: dict[str, Any], argv: list[str], status: dict[str, Any]) -> None:
    """Apply the worker's protections and exec ``argv`` (never returns)."""
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
            status["notes"].append(f"rlimits: {exc}")
        if os.geteuid() == 0:
            uid = spec.get("uid")
            if not uid:
                raise OSError(1, "the spec names no unprivileged uid to run as")
            gid = spec.get("gid", uid)
            os.setgroups([])
            os.setresgid(gid, gid, gid)
            os.setresuid(uid, uid, uid)  # every capability goes with uid 0
        linux.drop_all_capabilities()  # also those a user namespace gave its maker
        status["uid"] = os.geteuid()
        if status["uid"] == 0:
            missing.append("uid: the program would run as uid 0")
        status["capabilities"] = "none" if linux.effective_capabilities() == 0 else "some left"
        if status["capabilities"] != "none":
            missing.append("capabilities: some are still effective")
        linux.set_no_new_privs()
        abi = linux.landlock_abi()
        rules = [(p, linux.READ) for p in spec.get("read", [])]
        rules += [(p, linux.WRITE) for p in spec.get("write", [])]
        rules += [(p, linux.DEVICE) for p in spec.get("devices", [])]
        if status.get("rootfs") == "minimal":  # a private /tmp and /dev/shm, bounded tmpfs folders of its own; the
            rules += [(rootfs.BASE, linux.WRITE), ("/dev/shm", linux.WRITE)]  # folders to list (in the new root they
            rules += [(p, linux.READ) for p in spec.get("list", [])]  # hold only what is bound below them)
        # the CUDA driver writes into its process's /proc/<pid>, and cudaGetDeviceCount fails with error 304 when
        # it cannot (seen on an H200, 2026-12-01; and under ncu, whose target is a child of the sandboxed program,
        # 2026-12-02). As an unprivileged uid in its own pid namespace (a private /proc) the program may write what
        # the file modes let that uid write there: only its own processes' entries.
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
                status["notes"].append(f"landlock: {exc}")
        else:
            status["notes"].append("landlock: not available in this kernel")
        try:
            status["seccomp"] = seccomp.install()
        except OSError as exc:
            missing.append(f"seccomp: {exc.strerror or exc}")
        if not os.access(argv[0], os.X_OK):
            missing.append(f"uid {status['uid']} cannot run {argv[0]} here")
        refused = _refuse_now(spec, status) or not os.access(argv[0], os.X_OK)
        status["weak"] = bool(missing) and not refused
        status["ok"] = not refused
        _write_status(status_fd, status)
        if status_fd is not None:
            os.close(status_fd)
        if refused:
            os._exit(REFUSED_EXIT)
        os.execv(argv[0], argv)
    except BaseException as exc:  # noqa: BLE001 - never fall through to the init's code
        missing.append(f"launcher: {type(exc).__name__}: {exc}")
        status["ok"] = False
        _write_status(status_fd, status)
        os._exit(REFUSED_EXIT)


def _give_scratch(spec: dict[str, Any]) -> None:
    """As root: the scratch folder (and what the trusted side put in it) becomes the sandbox uid's."""
    uid, gid = spec["uid"], spec.get("gid", spec["uid"])
    for root, dirs, files in os.walk(spec["scratch"]):
        for name in [root, *(os.path.join(root, n) for n in dirs + files)]:
            os.chown(name, uid, gid, follow_symlinks=False)


def _enter_root(spec: dict[str, Any], entries: list[rootfs.Entry], status: dict[str, Any]) -> None:
    """In the init: the minimal root, then whether the sandbox uid can run the program there."""
    failed = rootfs.enter(entries)
    status["rootfs"] = "minimal"
    status["proc"] = "private"
    if failed:
        status["notes"].append("not in the sandbox's root: " + "; ".join(failed[:8]))
    if os.geteuid() == 0:
        ok, why = _uid_can_run(spec["uid"], spec.get("gid", spec["uid"]), spec.get("uid_must_read", []))
        if not ok:
            status["missing"].append(f"uid: {why} in the sandbox's root")


def _new_pid_namespace(spec: dict[str, Any], status: dict[str, Any]) -> bool:
    """The pid namespace the init will lead (and, for a user without root, the user namespace that owns it), unless
    ``spec`` turns namespaces off; whether it was made (why not goes to ``status["missing"]``)."""
    if not spec.get("namespaces", True):
        status["missing"].append("namespaces: turned off (eval.sandbox_namespaces=false)")
        return False
    try:
        if os.geteuid() == 0:
            linux.unshare(linux.CLONE_NEWPID)
        else:
            uid, gid = os.geteuid(), os.getegid()
            linux.unshare(linux.CLONE_NEWPID | linux.CLONE_NEWUSER)
            linux.map_own_ids(uid, gid)
            status["notes"].append("namespaces through an unprivileged user namespace")
    except OSError as exc:
        status["missing"].append(f"namespaces: {exc.strerror or exc}")
        return False
    return True


def _outer_waits(init_pid: int, spec: dict[str, Any], cgroups: list[str]) -> NoReturn:
    """The outer launcher after the init's fork: it waits for the init, removes the cgroups and exits with its
    status."""
    for fd in (spec.get("control_fd"), spec.get("status_fd")):
        if fd is not None:
            os.close(fd)
    _, wait_status = os.waitpid(init_pid, 0)
    for cgroup in cgroups:
        for _ in range(100):
            try:
                os.rmdir(cgroup)
                break
            except OSError:
                time.sleep(0.01)
    os._exit(os.waitstatus_to_exitcode(wait_status) & 0xFF)


def main() -> None:
    """Run the launcher (see the module docstring)."""
    spec = json.loads(os.environ.pop(SPEC_ENV, "{}"))
    argv = sys.argv[sys.argv.index("--") + 1 :]
    linux.set_parent_death_signal(signal.SIGKILL)
    if spec.get("parent_pid") and os.getppid() != spec["parent_pid"]:
        os._exit(1)  # the trusted side died before the death signal was set
    status: dict[str, Any] = {
        "ok": False,
        "namespaces": [],
        "missing": [],
        "notes": [],
        "mode": spec.get("mode"),
        "rootfs": None,
        "seccomp": None,
    }
    missing = status["missing"]
    if os.geteuid() == 0 and spec.get("uid"):
        _give_scratch(spec)
    entries = rootfs.plan(
        spec.get("read", []),
        spec.get("write", []),
        spec.get("devices", []),
        tmp_bytes=int(spec.get("tmp_bytes", 1 << 30)),
        tmp_files=int(spec.get("tmp_files", 100_000)),
    )
    # The outer launcher stays in the host's mount namespace (it removes the cgroups at the end); only a new pid
    # namespace (and, for a user without root, the user namespace that owns it) is made here. The init makes the
    # mount, network and IPC namespaces its own.
    namespaces = _new_pid_namespace(spec, status)
    cgroups = _cgroups(int(spec.get("pids_max") or 0), int(spec.get("memory_bytes") or 0), status)
    status["cgroups"] = cgroups
    init_pid = os.fork()
    if init_pid:
        _outer_waits(init_pid, spec, cgroups)  # never returns
    # the init
    linux.set_parent_death_signal(signal.SIGKILL)
    for cgroup in cgroups:  # its children, the worker and everything it starts, are in them from birth
        try:
            _join_cgroup(cgroup)
        except OSError as exc:
            status["notes"].append(f"cgroup {cgroup}: {exc.strerror}")
            for key, name in (
                ("pids_max", "pids.max"),
                ("memory_max", "memory.max"),
                ("memory_max", "memory.limit_in_bytes"),
            ):
                if os.path.exists(os.path.join(cgroup, name)):
                    status[key] = None
    in_namespace = namespaces
    if in_namespace:
        try:
            linux.unshare(linux.CLONE_NEWNS | linux.CLONE_NEWNET | linux.CLONE_NEWIPC)
            status["namespaces"] = list(linux.NAMESPACE_FLAGS)
        except OSError as exc:
            missing.append(f"namespaces: {exc.strerror or exc}")
            in_namespace = False
    if in_namespace:
        try:
            _enter_root(spec, entries, status)
        except OSError as exc:
            missing.append(f"minimal root: {exc.strerror or exc}")
            try:
                linux.private_proc()
                status["proc"] = "private"
            except OSError as exc2:
                missing.append(f"/proc: {exc2.strerror or exc2}")
    elif namespaces:
        missing.append("minimal root: needs a mount namespace")
    else:
        missing.append("minimal root: needs namespaces")
    status["kill_all"] = "pid namespace" if namespaces else "subreaper"
    if not namespaces:
        try:
            linux.set_child_subreaper()
        except OSError as exc:
            missing.append(f"subreaper: {exc}")
    init = _Init(namespaces, spec.get("control_fd"))
    worker = os.fork()
    if worker == 0:
        _worker(spec, argv, status)
    init.worker = worker
    status_fd = spec.get("status_fd")
    if status_fd is not None:
        os.close(status_fd)
    code = init.serve()
    os._exit(code & 0xFF if code >= 0 else 128 + (-code))


if __name__ == "__main__":
    main()
