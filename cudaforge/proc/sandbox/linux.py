"""The Linux primitives the sandbox is made of, through ctypes (stdlib only; no torch).

Landlock (file-system, TCP and scope rules), namespaces (``unshare``), mounts, capabilities,
``prctl`` and rlimits. Each function raises ``OSError`` with the errno when the kernel refuses;
the launcher (``cudaforge.proc.sandbox.launch``) decides what a refusal means (degrade or refuse).
Syscall numbers and constants are the kernel's UAPI; Landlock's three syscalls have the same
numbers on every architecture.
"""

from __future__ import annotations

import ctypes
import errno
import os
import re
import resource
from collections.abc import Callable

_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long

# ---------------------------------------------------------------------------------------- prctl

PR_SET_PDEATHSIG = 1
PR_SET_DUMPABLE = 4
PR_CAPBSET_DROP = 24
PR_SET_NO_NEW_PRIVS = 38
PR_SET_CHILD_SUBREAPER = 36
PR_CAP_AMBIENT = 47
PR_CAP_AMBIENT_CLEAR_ALL = 4
CAP_LAST_CAP_GUESS = 63


def _check(result: int, what: str) -> int:
    if result < 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"{what}: {os.strerror(errno)}")
    return result


def prctl(option: int, arg2: int = 0, arg3: int = 0, arg4: int = 0, arg5: int = 0) -> int:
    """``prctl(2)``."""
    fn = _libc.prctl
    fn.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
    return _check(fn(option, arg2, arg3, arg4, arg5), f"prctl({option})")


def set_parent_death_signal(sig: int) -> None:
    """Receive ``sig`` when the thread that forked this process exits."""
    prctl(PR_SET_PDEATHSIG, sig)


def set_no_new_privs() -> None:
    """No exec can grant privileges again (set-uid binaries, file capabilities); Landlock needs it."""
    prctl(PR_SET_NO_NEW_PRIVS, 1)


def set_child_subreaper() -> None:
    """Orphaned descendants are re-parented to this process (so it can find and kill them)."""
    prctl(PR_SET_CHILD_SUBREAPER, 1)


def set_not_dumpable() -> None:
    """Other processes of the same uid cannot read this one's memory or ``/proc/<pid>/environ``."""
    prctl(PR_SET_DUMPABLE, 0)


# ------------------------------------------------------------------------------- capabilities

_LINUX_CAPABILITY_VERSION_3 = 0x20080522


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]


def drop_all_capabilities() -> None:
    """Empty the bounding, ambient, effective, permitted and inheritable sets of this process.

    With the bounding set empty, an exec as uid 0 gains no capability either: root stays root by
    uid (file ownership) but loses every privilege (no mounts, no module loading, no raw devices,
    no ptrace of others, no signals to other users' processes).
    """
    try:
        last = int(open("/proc/sys/kernel/cap_last_cap").read().strip())
    except (OSError, ValueError):
        last = CAP_LAST_CAP_GUESS
    for cap in range(last + 1):
        try:
            prctl(PR_CAPBSET_DROP, cap)
        except OSError:
            pass  # EINVAL past the kernel's last cap; EPERM without CAP_SETPCAP (then none are held anyway)
    try:
        prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL)
    except OSError:
        pass
    header = _CapHeader(_LINUX_CAPABILITY_VERSION_3, 0)
    data = (_CapData * 2)()
    _check(_libc.capset(ctypes.byref(header), data), "capset")


def effective_capabilities() -> int:
    """This process's effective capability mask (from /proc/self/status)."""
    for line in open("/proc/self/status"):
        if line.startswith("CapEff:"):
            return int(line.split()[1], 16)
    return 0


# --------------------------------------------------------------------------------- namespaces

CLONE_NEWNS = 0x00020000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000

NAMESPACE_FLAGS = {"pid": CLONE_NEWPID, "net": CLONE_NEWNET, "mnt": CLONE_NEWNS, "ipc": CLONE_NEWIPC}


def unshare(flags: int) -> None:
    """``unshare(2)``: new namespaces for this process (a new pid namespace applies to its next child)."""
    _check(_libc.unshare(flags), f"unshare({flags:#x})")


def map_own_ids(uid: int, gid: int) -> None:
    """In a fresh user namespace, map this process's outside uid and gid to the same ids inside."""
    with open("/proc/self/setgroups", "w") as f:
        f.write("deny")
    with open("/proc/self/uid_map", "w") as f:
        f.write(f"{uid} {uid} 1")
    with open("/proc/self/gid_map", "w") as f:
        f.write(f"{gid} {gid} 1")


MS_RDONLY = 1
MS_NOSUID = 2
MS_NODEV = 4
MS_NOEXEC = 8
MS_REMOUNT = 32
MS_NOATIME = 1024
MS_NODIRATIME = 2048
MS_BIND = 4096
MS_REC = 16384
MS_PRIVATE = 1 << 18
MS_RELATIME = 1 << 21
MNT_DETACH = 2


def mount(source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    """``mount(2)``."""
    enc: Callable[[str | None], bytes | None] = lambda s: None if s is None else s.encode()  # noqa: E731
    fn = _libc.mount
    fn.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p]
    _check(fn(enc(source), enc(target), enc(fstype), flags, enc(data)), f"mount {target}")


_SYS_PIVOT_ROOT = {"x86_64": 155, "aarch64": 41}.get(os.uname().machine, 155)
"""``pivot_root``'s number (glibc has no wrapper)."""


def umount(target: str, flags: int = MNT_DETACH) -> None:
    """``umount2(2)`` (lazily by default: the mount goes now, its users keep what they hold)."""
    fn = _libc.umount2
    fn.argtypes = [ctypes.c_char_p, ctypes.c_int]
    _check(fn(target.encode(), flags), f"umount {target}")


def pivot_root(new_root: str, put_old: str) -> None:
    """``pivot_root(2)``: ``new_root`` becomes this mount namespace's root, the old root moves to ``put_old``."""
    _check(_libc.syscall(_SYS_PIVOT_ROOT, new_root.encode(), put_old.encode()), "pivot_root")


_STATVFS_TO_MS = {
    os.ST_NOSUID: MS_NOSUID,
    os.ST_NODEV: MS_NODEV,
    os.ST_NOEXEC: MS_NOEXEC,
    os.ST_RDONLY: MS_RDONLY,
    os.ST_NOATIME: MS_NOATIME,
    os.ST_NODIRATIME: MS_NODIRATIME,
    os.ST_RELATIME: MS_RELATIME,
}
"""The mount flags ``statvfs`` reports, as ``mount(2)`` spells them (a remount must keep the locked ones)."""


def mount_flags(path: str) -> int:
    """The ``MS_*`` flags of the mount ``path`` is on."""
    flags = os.statvfs(path).f_flag
    return sum(ms for st, ms in _STATVFS_TO_MS.items() if flags & st)


_SYS_MOUNT_SETATTR = 442  # the same number on x86_64 and aarch64
_AT_FDCWD = -100
_AT_RECURSIVE = 0x8000
_MOUNT_ATTR_RDONLY, _MOUNT_ATTR_NOSUID, _MOUNT_ATTR_NODEV = 0x1, 0x2, 0x4


class _MountAttr(ctypes.Structure):
    """``struct mount_attr`` of ``mount_setattr(2)``."""

    _fields_ = [
        ("attr_set", ctypes.c_uint64),
        ("attr_clr", ctypes.c_uint64),
        ("propagation", ctypes.c_uint64),
        ("userns_fd", ctypes.c_uint64),
    ]


def bind(source: str, target: str, *, read_only: bool, devices: bool = False) -> None:
    """Bind ``source`` (and the mounts below it) onto ``target``; read-only unless asked, no set-uid bits, no device
    nodes unless ``devices``, for the mounts below it too (a remount changes only the top one: /sys's cgroup, debugfs
    or securityfs mounts stayed writable). The flags the source's mount already has stay (a user namespace may not
    drop them)."""
    mount(source, target, None, MS_BIND | MS_REC)
    flags = mount_flags(target) | MS_REMOUNT | MS_BIND | MS_NOSUID
    if read_only:
        flags |= MS_RDONLY
    if not devices:
        flags |= MS_NODEV
    mount(None, target, None, flags)
    attr = _MountAttr(
        (_MOUNT_ATTR_RDONLY if read_only else 0) | _MOUNT_ATTR_NOSUID | (0 if devices else _MOUNT_ATTR_NODEV), 0, 0, 0
    )
    result = _libc.syscall(
        _SYS_MOUNT_SETATTR, _AT_FDCWD, target.encode(), _AT_RECURSIVE, ctypes.byref(attr), ctypes.sizeof(attr)
    )
    if result == 0:
        return
    # a kernel before 5.12 (ENOSYS), or a filter of the host's that refuses the call (EPERM): each mount below, one by
    # one; one that cannot be made so raises, and the bind counts as not placed
    below = [m for m in _mount_points() if m.startswith(target.rstrip("/") + "/")]
    for point in below:
        extra = (MS_RDONLY if read_only else 0) | (0 if devices else MS_NODEV)
        mount(None, point, None, mount_flags(point) | MS_REMOUNT | MS_BIND | MS_NOSUID | extra)


def _mount_points() -> list[str]:
    """This mount namespace's mount points (``/proc/self/mountinfo``'s fifth field, octal escapes decoded), read
    through the host's /proc while a new root is being built (``/old``, :func:`rootfs.enter`)."""
    for path in ("/proc/self/mountinfo", "/old/proc/self/mountinfo"):
        if os.path.exists(path):
            with open(path, "rb") as f:
                lines = f.read().splitlines()
            break
    else:
        raise OSError(errno.ENOENT, "no /proc to list the mounts below a bind in")
    points = []
    for line in lines:
        fields = line.split(b" ")
        if len(fields) > 4:
            raw = fields[4]
            points.append(re.sub(rb"\\([0-7]{3})", lambda m: bytes([int(m.group(1), 8)]), raw).decode(errors="replace"))
    return points


def private_proc() -> None:
    """In a new mount and pid namespace: make every mount private, then mount a /proc that shows only
    this pid namespace's processes."""
    mount(None, "/", None, MS_REC | MS_PRIVATE)
    mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)


# ---------------------------------------------------------------------------------- Landlock

_SYS_LANDLOCK_CREATE_RULESET = 444
_SYS_LANDLOCK_ADD_RULE = 445
_SYS_LANDLOCK_RESTRICT_SELF = 446
_LANDLOCK_CREATE_RULESET_VERSION = 1
_LANDLOCK_RULE_PATH_BENEATH = 1

FS_EXECUTE = 1 << 0
FS_WRITE_FILE = 1 << 1
FS_READ_FILE = 1 << 2
FS_READ_DIR = 1 << 3
FS_REMOVE_DIR = 1 << 4
FS_REMOVE_FILE = 1 << 5
FS_MAKE_CHAR = 1 << 6
FS_MAKE_DIR = 1 << 7
FS_MAKE_REG = 1 << 8
FS_MAKE_SOCK = 1 << 9
FS_MAKE_FIFO = 1 << 10
FS_MAKE_BLOCK = 1 << 11
FS_MAKE_SYM = 1 << 12
FS_REFER = 1 << 13  # ABI 2
FS_TRUNCATE = 1 << 14  # ABI 3
FS_IOCTL_DEV = 1 << 15  # ABI 5
NET_BIND_TCP = 1 << 0  # ABI 4
NET_CONNECT_TCP = 1 << 1  # ABI 4
SCOPE_ABSTRACT_UNIX_SOCKET = 1 << 0  # ABI 6
SCOPE_SIGNAL = 1 << 1  # ABI 6

FILE_RIGHTS = FS_EXECUTE | FS_WRITE_FILE | FS_READ_FILE | FS_TRUNCATE | FS_IOCTL_DEV
"""The rights a rule on a single file (not a directory) may carry."""
READ = FS_EXECUTE | FS_READ_FILE | FS_READ_DIR
"""Read and execute a hierarchy."""
WRITE = (
    READ
    | FS_WRITE_FILE
    | FS_REMOVE_DIR
    | FS_REMOVE_FILE
    | FS_MAKE_DIR
    | FS_MAKE_REG
    | FS_MAKE_SYM
    | FS_MAKE_SOCK
    | FS_MAKE_FIFO
    | FS_REFER
    | FS_TRUNCATE
)
"""Everything but device nodes, within a hierarchy."""
DEVICE = FS_READ_FILE | FS_WRITE_FILE | FS_TRUNCATE | FS_IOCTL_DEV
"""Open a device node for reading and writing (``O_TRUNC`` too: compilers write to ``-o /dev/null``) and use its
ioctls."""


def landlock_abi() -> int:
    """The kernel's Landlock ABI version (0 when Landlock is absent or disabled)."""
    result = _libc.syscall(_SYS_LANDLOCK_CREATE_RULESET, None, ctypes.c_size_t(0), _LANDLOCK_CREATE_RULESET_VERSION)
    return int(result) if result > 0 else 0


def _fs_rights(abi: int) -> int:
    rights = (1 << 13) - 1
    if abi >= 2:
        rights |= FS_REFER
    if abi >= 3:
        rights |= FS_TRUNCATE
    if abi >= 5:
        rights |= FS_IOCTL_DEV
    return rights


class _RulesetAttr(ctypes.Structure):
    _fields_ = [
        ("handled_access_fs", ctypes.c_uint64),
        ("handled_access_net", ctypes.c_uint64),
        ("scoped", ctypes.c_uint64),
    ]


class _PathBeneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def landlock_restrict(rules: list[tuple[str, int]], abi: int, skip: tuple[str, ...] = ()) -> dict[str, object]:
    """Restrict this process (and every later child) to ``rules``: ``(path, rights)`` pairs; nothing else in
    the file system, no TCP bind or connect (ABI 4+), no signals and no abstract unix sockets outside the
    sandbox (ABI 6+). Paths that do not exist are skipped. Needs ``set_no_new_privs()`` first.

    ``skip`` leaves classes of rights unhandled (``net``, ``scopes``, ``ioctl``: diagnosis only). Returns what
    was enforced: ``{abi, tcp, scopes, paths, skipped}`` (``skipped``: paths no rule can name, such as pipes).
    """
    if abi < 1:
        raise OSError(95, "Landlock is not available")
    handled = _fs_rights(abi)
    if "ioctl" in skip:
        handled &= ~FS_IOCTL_DEV
    attr = _RulesetAttr(handled, 0, 0)
    size = 8
    if abi >= 4 and "net" not in skip:
        attr.handled_access_net, size = NET_BIND_TCP | NET_CONNECT_TCP, 16
    if abi >= 6 and "scopes" not in skip:
        attr.scoped, size = SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL, 24
    ruleset = _check(
        _libc.syscall(_SYS_LANDLOCK_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(size), 0),
        "landlock_create_ruleset",
    )
    applied: list[str] = []
    skipped: list[str] = []
    try:
        for path, rights in rules:
            try:
                fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
            except OSError:
                continue
            try:
                allowed = rights & handled
                if not os.path.isdir(path):
                    allowed &= FILE_RIGHTS
                rule = _PathBeneath(allowed, fd)
                if (
                    _libc.syscall(_SYS_LANDLOCK_ADD_RULE, ruleset, _LANDLOCK_RULE_PATH_BENEATH, ctypes.byref(rule), 0)
                    < 0
                ):
                    skipped.append(path)  # e.g. a pipe behind /dev/stdout: nothing to grant there
                    continue
                applied.append(path)
            finally:
                os.close(fd)
        _check(_libc.syscall(_SYS_LANDLOCK_RESTRICT_SELF, ruleset, 0), "landlock_restrict_self")
    finally:
        os.close(ruleset)
    return {
        "abi": abi,
        "tcp": abi >= 4 and "net" not in skip,
        "scopes": abi >= 6 and "scopes" not in skip,
        "paths": applied,
        "skipped": skipped,
    }


# ------------------------------------------------------------------------------------ rlimits

RLIMITS = {
    "cpu": resource.RLIMIT_CPU,
    "fsize": resource.RLIMIT_FSIZE,
    "nproc": resource.RLIMIT_NPROC,
    "nofile": resource.RLIMIT_NOFILE,
    "core": resource.RLIMIT_CORE,
}
"""The rlimits a sandbox spec may set, by the names it uses."""


def set_rlimits(limits: dict[str, int]) -> dict[str, int]:
    """Lower each named rlimit (soft and hard) to the value given; returns those set."""
    done = {}
    for name, value in limits.items():
        which = RLIMITS[name]
        soft, hard = resource.getrlimit(which)
        value = int(value)
        if hard != resource.RLIM_INFINITY:
            value = min(value, hard)
        resource.setrlimit(which, (value, value))
        done[name] = value
    return done
