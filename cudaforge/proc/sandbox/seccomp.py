"""A seccomp filter for the sandboxed worker, in classic BPF built here (stdlib and ctypes only; no libseccomp).

The launcher installs it right after ``no_new_privs`` and before ``exec``; every process the worker starts inherits
it and cannot remove it. It is a deny-list: CUDA drivers, Triton, compilers, Python and Nsight Compute use a wide and
changing set of system calls, so everything not named here is allowed. What it does:

* a system call made through another ABI than the native one (i386 ``int 0x80`` on x86_64, AArch32) kills the
  process (those numbers mean other calls, and the i386 ``socketcall`` would get around the socket rule);
  x32 numbers on x86_64 get ``ENOSYS``;
* the calls in ``DENIED`` (kernel keyrings, io_uring, namespaces and mounts, ptrace, bpf, perf, module loading, ...)
  fail with ``EPERM``, so that callers see an ordinary refusal and degrade;
* ``clone3`` fails with ``ENOSYS`` (a filter cannot read its flags, which are in memory; glibc then uses ``clone``),
  and ``clone`` fails with ``EPERM`` when its flags ask for a new namespace (threads and ``fork`` still work);
* ``socket`` and ``socketpair`` work for ``AF_UNIX`` only; other families fail with ``EAFNOSUPPORT``;
* ``fallocate`` works in its plain mode only (0, which grows a file under the file-size limit like a write); any other
  mode fails with ``EOPNOTSUPP``, as on a file system without it (callers fall back). ``FALLOC_FL_KEEP_SIZE`` would
  reserve blocks past the end of a file without growing it, which ``RLIMIT_FSIZE`` does not count: on a log file the
  trusted side keeps on its own disk, that filled the disk. The ``ioctl`` requests that do the same
  (``RESERVE_IOCTLS``: ``FS_IOC_RESVSP``, ``FS_IOC_RESVSP64``, ``FS_IOC_ZERO_RANGE`` and their un-reserving twins)
  fail with ``EOPNOTSUPP`` too; every other ``ioctl`` is allowed.

Syscall numbers are the kernel's (x86_64: ``arch/x86/entry/syscalls/syscall_64.tbl``; arm64: the generic table,
``include/uapi/asm-generic/unistd.h``), checked against the UAPI headers of Linux 6.1.
"""

from __future__ import annotations

import ctypes
import errno
import os
import platform
import struct
import sys

_libc: ctypes.CDLL | None
try:
    _libc = ctypes.CDLL(None, use_errno=True)
    _libc.syscall.restype = ctypes.c_long
except (OSError, AttributeError, TypeError):  # not a Unix with a C library loaded
    _libc = None

# ----------------------------------------------------------------------------------------- policy

DENIED: tuple[str, ...] = (
    "keyctl",  # kernel keyrings are shared with the host's root (uid 0 in the sandbox reads them)
    "add_key",  # keyrings, as above
    "request_key",  # keyrings, as above; can also start a host-side upcall helper
    "io_uring_setup",  # io_uring: a large attack surface, and its operations bypass this filter
    "io_uring_enter",  # io_uring, as above
    "io_uring_register",  # io_uring, as above
    "unshare",  # new namespaces (a user namespace gives capabilities inside it): kernel attack surface
    "setns",  # joining other namespaces
    "mount",  # mounts (the sandbox's mounts are set up before the filter)
    "umount2",  # unmounting what hides the host
    "pivot_root",  # changing the root mount
    "chroot",  # changing the root directory
    "move_mount",  # the new mount API
    "open_tree",  # the new mount API
    "fsopen",  # the new mount API
    "fsconfig",  # the new mount API
    "fsmount",  # the new mount API
    "fspick",  # the new mount API
    "mount_setattr",  # the new mount API
    "ptrace",  # inspecting or driving other processes
    "process_vm_writev",  # writing another process's memory
    "bpf",  # eBPF programs and maps: kernel attack surface
    "perf_event_open",  # performance counters: side channels and kernel attack surface
    "userfaultfd",  # lets an attacker stall the kernel at a chosen point while it copies user memory (races)
    "kexec_load",  # loading a new kernel
    "kexec_file_load",  # loading a new kernel
    "init_module",  # loading kernel modules
    "finit_module",  # loading kernel modules
    "delete_module",  # unloading kernel modules
    "reboot",  # rebooting the host
    "swapon",  # swap configuration
    "swapoff",  # swap configuration
    "acct",  # process accounting
    "syslog",  # the kernel log (addresses, other users' activity)
    "quotactl",  # disk quotas
    "open_by_handle_at",  # opens files by handle, around path-based checks (the "shocker" container escape)
    "name_to_handle_at",  # file handles, as above
    "fanotify_init",  # watching the whole file system
    "lookup_dcookie",  # kernel profiling (removed in Linux 6.8; the number stays reserved)
    "vhangup",  # hanging up the terminal
    "iopl",  # x86 I/O privilege level (x86 only)
    "ioperm",  # x86 I/O port access (x86 only)
    "sethostname",  # host identity
    "setdomainname",  # host identity
    "settimeofday",  # the host's clock
    "clock_settime",  # the host's clock
    "clock_adjtime",  # the host's clock
    "adjtimex",  # the host's clock (reading it goes through clock_gettime, which is allowed)
    "pidfd_getfd",  # taking a file descriptor out of another process
)
"""System calls that fail with ``EPERM`` (those an architecture does not have are skipped)."""

CLONE_NEWNS = 0x00020000
CLONE_NEWCGROUP = 0x02000000
CLONE_NEWUTS = 0x04000000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000
CLONE_NAMESPACE_FLAGS = {
    "CLONE_NEWNS": CLONE_NEWNS,
    "CLONE_NEWCGROUP": CLONE_NEWCGROUP,
    "CLONE_NEWUTS": CLONE_NEWUTS,
    "CLONE_NEWIPC": CLONE_NEWIPC,
    "CLONE_NEWUSER": CLONE_NEWUSER,
    "CLONE_NEWPID": CLONE_NEWPID,
    "CLONE_NEWNET": CLONE_NEWNET,
}
"""``clone`` flags that make it fail with ``EPERM`` (``CLONE_NEWTIME`` only exists for ``clone3`` and ``unshare``)."""

RESERVE_IOCTLS = {
    "FS_IOC_RESVSP": 0x40305828,
    "FS_IOC_UNRESVSP": 0x40305829,
    "FS_IOC_RESVSP64": 0x4030582A,
    "FS_IOC_UNRESVSP64": 0x4030582B,
    "FS_IOC_ZERO_RANGE": 0x40305839,
}
"""``ioctl`` requests (``_IOW('X', n, struct space_resv)``, the same on x86_64 and arm64) that reach the kernel's
fallocate with ``FALLOC_FL_KEEP_SIZE`` on any file system: they fail with ``EOPNOTSUPP``, like that fallocate."""

AF_UNIX = 1
SOCKET_FAMILIES = ("AF_UNIX",)
"""The only socket family ``socket`` and ``socketpair`` accept."""

_SPECIAL = (
    "clone",
    "clone3",
    "socket",
    "socketpair",
    "fallocate",
    "ioctl",
)  # calls with their own rule, not plain denials

# --------------------------------------------------------------------------------- syscall tables

# Plain denials, then other calls ``extra_deny`` may name, then the calls with their own rule.
_X86_64: dict[str, int] = {
    "keyctl": 250,
    "add_key": 248,
    "request_key": 249,
    "io_uring_setup": 425,
    "io_uring_enter": 426,
    "io_uring_register": 427,
    "unshare": 272,
    "setns": 308,
    "mount": 165,
    "umount2": 166,
    "pivot_root": 155,
    "chroot": 161,
    "move_mount": 429,
    "open_tree": 428,
    "fsopen": 430,
    "fsconfig": 431,
    "fsmount": 432,
    "fspick": 433,
    "mount_setattr": 442,
    "ptrace": 101,
    "process_vm_writev": 311,
    "bpf": 321,
    "perf_event_open": 298,
    "userfaultfd": 323,
    "kexec_load": 246,
    "kexec_file_load": 320,
    "init_module": 175,
    "finit_module": 313,
    "delete_module": 176,
    "reboot": 169,
    "swapon": 167,
    "swapoff": 168,
    "acct": 163,
    "syslog": 103,
    "quotactl": 179,
    "open_by_handle_at": 304,
    "name_to_handle_at": 303,
    "fanotify_init": 300,
    "lookup_dcookie": 212,
    "vhangup": 153,
    "iopl": 172,
    "ioperm": 173,
    "sethostname": 170,
    "setdomainname": 171,
    "settimeofday": 164,
    "clock_settime": 227,
    "clock_adjtime": 305,
    "adjtimex": 159,
    "pidfd_getfd": 438,
    # for extra_deny
    "process_vm_readv": 310,
    "kcmp": 312,
    "personality": 135,
    "memfd_secret": 447,
    "pidfd_open": 434,
    "pidfd_send_signal": 424,
    "process_madvise": 440,
    "move_pages": 279,
    "migrate_pages": 256,
    "mbind": 237,
    "set_mempolicy": 238,
    "io_setup": 206,
    "io_submit": 209,
    "vmsplice": 278,
    "fanotify_mark": 301,
    "modify_ldt": 154,
    "uselib": 134,
    "mknod": 133,
    "mknodat": 259,
    "memfd_create": 319,
    "execveat": 322,
    "landlock_create_ruleset": 444,
    "landlock_add_rule": 445,
    "landlock_restrict_self": 446,
    "seccomp": 317,
    "nfsservctl": 180,
    "_sysctl": 156,
    "ustat": 136,
    "sysfs": 139,
    # own rules
    "clone": 56,
    "clone3": 435,
    "socket": 41,
    "socketpair": 53,
    "fallocate": 285,
    "ioctl": 16,
}

_AARCH64: dict[str, int] = {
    "keyctl": 219,
    "add_key": 217,
    "request_key": 218,
    "io_uring_setup": 425,
    "io_uring_enter": 426,
    "io_uring_register": 427,
    "unshare": 97,
    "setns": 268,
    "mount": 40,
    "umount2": 39,
    "pivot_root": 41,
    "chroot": 51,
    "move_mount": 429,
    "open_tree": 428,
    "fsopen": 430,
    "fsconfig": 431,
    "fsmount": 432,
    "fspick": 433,
    "mount_setattr": 442,
    "ptrace": 117,
    "process_vm_writev": 271,
    "bpf": 280,
    "perf_event_open": 241,
    "userfaultfd": 282,
    "kexec_load": 104,
    "kexec_file_load": 294,
    "init_module": 105,
    "finit_module": 273,
    "delete_module": 106,
    "reboot": 142,
    "swapon": 224,
    "swapoff": 225,
    "acct": 89,
    "syslog": 116,
    "quotactl": 60,
    "open_by_handle_at": 265,
    "name_to_handle_at": 264,
    "fanotify_init": 262,
    "lookup_dcookie": 18,
    "vhangup": 58,
    "sethostname": 161,
    "setdomainname": 162,
    "settimeofday": 170,
    "clock_settime": 112,
    "clock_adjtime": 266,
    "adjtimex": 171,
    "pidfd_getfd": 438,
    # for extra_deny
    "process_vm_readv": 270,
    "kcmp": 272,
    "personality": 92,
    "memfd_secret": 447,
    "pidfd_open": 434,
    "pidfd_send_signal": 424,
    "process_madvise": 440,
    "move_pages": 239,
    "migrate_pages": 238,
    "mbind": 235,
    "set_mempolicy": 237,
    "io_setup": 0,
    "io_submit": 2,
    "vmsplice": 75,
    "fanotify_mark": 263,
    "mknodat": 33,
    "memfd_create": 279,
    "execveat": 281,
    "landlock_create_ruleset": 444,
    "landlock_add_rule": 445,
    "landlock_restrict_self": 446,
    "seccomp": 277,
    "nfsservctl": 42,
    # own rules
    "clone": 220,
    "clone3": 435,
    "socket": 198,
    "socketpair": 199,
    "fallocate": 47,
    "ioctl": 29,
}

AUDIT_ARCH_X86_64 = 0xC000003E
AUDIT_ARCH_AARCH64 = 0xC00000B7
X32_SYSCALL_BIT = 0x40000000

_ARCHES: dict[str, tuple[int, dict[str, int]]] = {
    "x86_64": (AUDIT_ARCH_X86_64, _X86_64),
    "aarch64": (AUDIT_ARCH_AARCH64, _AARCH64),
}
"""Machine name -> (AUDIT_ARCH value, system call numbers)."""


def syscall_table(arch: str | None = None) -> dict[str, int]:
    """The system call numbers this module knows for ``arch`` (default: this machine's), name -> number."""
    arch = arch or native_arch()
    if arch not in _ARCHES:
        raise OSError(errno.ENOTSUP, f"seccomp: no system call table for architecture {arch!r}")
    return dict(_ARCHES[arch][1])


def native_arch() -> str:
    """This process's architecture as this module names it (``x86_64``, ``aarch64``), or what the machine says.

    A 32-bit interpreter on a 64-bit kernel, or a big-endian one, is not x86_64/aarch64 for this purpose: its system
    calls come through another ABI, and a filter for the native one would kill it at once.
    """
    machine = platform.machine().lower()
    machine = {"amd64": "x86_64", "arm64": "aarch64"}.get(machine, machine)
    if machine in _ARCHES and (struct.calcsize("P") != 8 or sys.byteorder != "little"):
        return f"{machine} (32-bit or big-endian user space)"
    return machine


# -------------------------------------------------------------------------------------- BPF build

_BPF_LD_W_ABS = 0x00 | 0x00 | 0x20  # BPF_LD | BPF_W | BPF_ABS
_BPF_JEQ_K = 0x05 | 0x10 | 0x00  # BPF_JMP | BPF_JEQ | BPF_K
_BPF_JGE_K = 0x05 | 0x30 | 0x00  # BPF_JMP | BPF_JGE | BPF_K
_BPF_JSET_K = 0x05 | 0x40 | 0x00  # BPF_JMP | BPF_JSET | BPF_K
_BPF_RET_K = 0x06 | 0x00  # BPF_RET | BPF_K

SECCOMP_RET_KILL_PROCESS = 0x80000000
SECCOMP_RET_ERRNO = 0x00050000
SECCOMP_RET_ALLOW = 0x7FFF0000

_OFF_NR = 0  # offsetof(struct seccomp_data, nr)
_OFF_ARCH = 4  # offsetof(struct seccomp_data, arch)
_OFF_ARG0_LOW = 16  # offsetof(struct seccomp_data, args[0]); the low 32 bits on a little-endian machine
_OFF_ARG1_LOW = 24  # offsetof(struct seccomp_data, args[1]); fallocate's mode, ioctl's request (their low 32 bits)

BPF_MAXINSNS = 4096


class SockFilter(ctypes.Structure):
    """``struct sock_filter``: one classic BPF instruction."""

    _fields_ = [("code", ctypes.c_uint16), ("jt", ctypes.c_uint8), ("jf", ctypes.c_uint8), ("k", ctypes.c_uint32)]


class SockFprog(ctypes.Structure):
    """``struct sock_fprog``: a program's length and instructions."""

    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(SockFilter))]


class _Assembler:
    """Collects instructions whose jump targets are labels, then resolves them into 8-bit relative offsets."""

    def __init__(self) -> None:
        """An empty program."""
        self.code: list[tuple[int, int | str, int | str, int]] = []
        self.labels: dict[str, int] = {}

    def label(self, name: str) -> None:
        """Name the position of the next instruction."""
        self.labels[name] = len(self.code)

    def stmt(self, code: int, k: int) -> None:
        """Append a load or return."""
        self.code.append((code, 0, 0, k))

    def jump(self, code: int, k: int, jt: int | str = 0, jf: int | str = 0) -> None:
        """Append a conditional jump; ``jt``/``jf`` are labels, or 0 for the next instruction."""
        self.code.append((code, jt, jf, k))

    def assemble(self) -> list[tuple[int, int, int, int]]:
        """The program as (code, jt, jf, k) tuples, with every jump forward and within 255 instructions."""
        out = []
        for pc, (code, jt, jf, k) in enumerate(self.code):
            offsets = []
            for target in (jt, jf):
                offset = target if isinstance(target, int) else self.labels[target] - pc - 1
                if not 0 <= offset <= 255:
                    raise ValueError(f"seccomp: jump of {offset} at instruction {pc} does not fit in 8 bits")
                offsets.append(offset)
            out.append((code, offsets[0], offsets[1], k & 0xFFFFFFFF))
        if len(out) > BPF_MAXINSNS:
            raise ValueError(f"seccomp: {len(out)} instructions, more than {BPF_MAXINSNS}")
        return out


def _errno_ret(err: int) -> int:
    """The filter's return value that makes the call fail with ``err``."""
    return SECCOMP_RET_ERRNO | (err & 0xFFFF)


def denied_names(arch: str | None = None, extra_deny: tuple[str, ...] = ()) -> list[str]:
    """The names ``install(extra_deny)`` would deny with ``EPERM`` on ``arch``: those the architecture has.

    Raises ``ValueError`` for a name no table knows, or one of the calls with their own rule (clone, clone3,
    socket, socketpair, fallocate, ioctl).
    """
    table = syscall_table(arch)
    known = set(_X86_64) | set(_AARCH64)
    for name in extra_deny:
        if name in _SPECIAL:
            raise ValueError(f"seccomp: {name} has its own rule and cannot be denied outright")
        if name not in known:
            raise ValueError(f"seccomp: no system call number known for {name!r}")
    names: list[str] = []
    for name in DENIED + tuple(extra_deny):
        if name in table and name not in names:
            names.append(name)
    return names


def build_filter(arch: str | None = None, extra_deny: tuple[str, ...] = ()) -> list[tuple[int, int, int, int]]:
    """The filter's instructions for ``arch`` (default: this machine's) as (code, jt, jf, k) tuples."""
    arch = arch or native_arch()
    table = syscall_table(arch)
    audit_arch = _ARCHES[arch][0]
    asm = _Assembler()
    asm.stmt(_BPF_LD_W_ABS, _OFF_ARCH)
    asm.jump(_BPF_JEQ_K, audit_arch, 0, "kill")
    asm.stmt(_BPF_LD_W_ABS, _OFF_NR)
    if arch == "x86_64":
        asm.jump(_BPF_JGE_K, X32_SYSCALL_BIT, "enosys", 0)
    asm.jump(_BPF_JEQ_K, table["clone3"], "enosys", 0)
    asm.jump(_BPF_JEQ_K, table["clone"], "clone", 0)
    asm.jump(_BPF_JEQ_K, table["socket"], "socket", 0)
    asm.jump(_BPF_JEQ_K, table["socketpair"], "socket", 0)
    asm.jump(_BPF_JEQ_K, table["fallocate"], "fallocate", 0)
    asm.jump(_BPF_JEQ_K, table["ioctl"], "ioctl", 0)
    # one shared return for every denial; the assembler checks that each jump to it fits in 8 bits
    # (the tables hold under 100 names, so the longest jump is about 110 instructions)
    for name in denied_names(arch, extra_deny):
        asm.jump(_BPF_JEQ_K, table[name], "eperm", 0)
    asm.stmt(_BPF_RET_K, SECCOMP_RET_ALLOW)
    asm.label("clone")
    asm.stmt(_BPF_LD_W_ABS, _OFF_ARG0_LOW)
    asm.jump(_BPF_JSET_K, sum(CLONE_NAMESPACE_FLAGS.values()), "eperm", "allow")
    asm.label("socket")
    asm.stmt(_BPF_LD_W_ABS, _OFF_ARG0_LOW)
    asm.jump(_BPF_JEQ_K, AF_UNIX, "allow", "eafnosupport")
    asm.label("fallocate")
    asm.stmt(_BPF_LD_W_ABS, _OFF_ARG1_LOW)
    asm.jump(_BPF_JEQ_K, 0, "allow", "eopnotsupp")
    asm.label("ioctl")
    asm.stmt(_BPF_LD_W_ABS, _OFF_ARG1_LOW)  # the request: an unsigned int
    for request in RESERVE_IOCTLS.values():
        asm.jump(_BPF_JEQ_K, request, "eopnotsupp", 0)
    asm.stmt(_BPF_RET_K, SECCOMP_RET_ALLOW)
    asm.label("allow")
    asm.stmt(_BPF_RET_K, SECCOMP_RET_ALLOW)
    asm.label("eperm")
    asm.stmt(_BPF_RET_K, _errno_ret(errno.EPERM))
    asm.label("enosys")
    asm.stmt(_BPF_RET_K, _errno_ret(errno.ENOSYS))
    asm.label("eopnotsupp")
    asm.stmt(_BPF_RET_K, _errno_ret(errno.EOPNOTSUPP))
    asm.label("eafnosupport")
    asm.stmt(_BPF_RET_K, _errno_ret(errno.EAFNOSUPPORT))
    asm.label("kill")
    asm.stmt(_BPF_RET_K, SECCOMP_RET_KILL_PROCESS)
    return asm.assemble()


# ------------------------------------------------------------------------------------- install

PR_GET_SECCOMP = 21
PR_SET_SECCOMP = 22
PR_SET_NO_NEW_PRIVS = 38
SECCOMP_MODE_FILTER = 2
SECCOMP_SET_MODE_FILTER = 1
SECCOMP_GET_ACTION_AVAIL = 2
SECCOMP_FILTER_FLAG_TSYNC = 1
_SYS_SECCOMP = {"x86_64": 317, "aarch64": 277}


def _prctl(option: int, arg2: int = 0, arg3: int = 0, arg4: int = 0, arg5: int = 0) -> int:
    """``prctl(2)``; raises ``OSError`` with the errno on failure."""
    if _libc is None:
        raise OSError(errno.ENOSYS, "prctl: no C library")
    fn = _libc.prctl
    fn.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
    fn.restype = ctypes.c_int
    result: int = fn(option, arg2, arg3, arg4, arg5)
    if result < 0:
        err = ctypes.get_errno()
        raise OSError(err, f"prctl({option}): {os.strerror(err)}")
    return result


def _seccomp(arch: str, operation: int, flags: int, address: int) -> int:
    """The ``seccomp(2)`` system call (``address``: its pointer argument); returns its result, or -errno."""
    assert _libc is not None
    result = _libc.syscall(
        ctypes.c_long(_SYS_SECCOMP[arch]), ctypes.c_uint(operation), ctypes.c_uint(flags), ctypes.c_void_p(address)
    )
    return -ctypes.get_errno() if result < 0 else result


def available() -> bool:
    """Whether ``install`` can work here: Linux with seccomp filter mode, on an architecture this module knows."""
    if _libc is None or not sys.platform.startswith("linux") or native_arch() not in _ARCHES:
        return False
    try:
        if _prctl(PR_GET_SECCOMP) not in (0, SECCOMP_MODE_FILTER):
            return False
    except OSError:
        return False  # EINVAL: a kernel without CONFIG_SECCOMP
    action = ctypes.c_uint32(SECCOMP_RET_ERRNO)
    result = _seccomp(native_arch(), SECCOMP_GET_ACTION_AVAIL, 0, ctypes.addressof(action))
    if result == 0:
        return True
    if result == -errno.ENOSYS:  # no seccomp(2) (before Linux 3.17): filter mode through prctl, if the kernel has it
        return os.path.exists("/proc/sys/kernel/seccomp/actions_avail") or _filter_mode_in_config()
    return False


def _filter_mode_in_config() -> bool:
    """Whether this process's status shows the seccomp fields (a kernel built with seccomp filters)."""
    try:
        with open("/proc/self/status") as f:
            return any(line.startswith("Seccomp:") for line in f)
    except OSError:
        return False


def install(extra_deny: tuple[str, ...] = ()) -> dict[str, object]:
    """Install the filter on this process (every thread, where the kernel can) and return what now holds.

    Sets ``no_new_privs`` first (the kernel asks for it from a process without ``CAP_SYS_ADMIN``; setting it twice is
    harmless). ``extra_deny`` names further system calls to fail with ``EPERM``. Raises ``OSError(ENOTSUP)`` on an
    architecture without a table here, ``ValueError`` for an unknown name in ``extra_deny``, and ``OSError`` with the
    kernel's errno when it refuses the filter. Filters stack: installing twice applies both.
    """
    arch = native_arch()
    if arch not in _ARCHES or _libc is None or not sys.platform.startswith("linux"):
        raise OSError(errno.ENOTSUP, f"seccomp: no filter for architecture {arch!r} on {sys.platform}")
    program = build_filter(arch, extra_deny)
    filters = (SockFilter * len(program))(*(SockFilter(*insn) for insn in program))
    prog = SockFprog(len(program), ctypes.cast(filters, ctypes.POINTER(SockFilter)))
    _prctl(PR_SET_NO_NEW_PRIVS, 1)
    via, tsync = "seccomp", True
    result = _seccomp(arch, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, ctypes.addressof(prog))
    if result == -errno.ENOSYS:
        via, tsync = "prctl", False
        _prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.addressof(prog))
    elif result < 0:
        raise OSError(-result, f"seccomp: {os.strerror(-result)}")
    elif result > 0:  # TSYNC: that thread's filters diverged from this one's; nothing was installed
        raise OSError(errno.EBUSY, f"seccomp: thread {result} cannot be synchronized with this filter")
    denied = denied_names(arch, extra_deny)
    return {
        "arch": arch,
        "denied": denied,
        "denied_errno": "EPERM",
        "socket_families": list(SOCKET_FAMILIES),
        "socket_errno": "EAFNOSUPPORT",
        "clone_namespace_flags": list(CLONE_NAMESPACE_FLAGS),
        "enosys": ["clone3"] + (["x32 system calls"] if arch == "x86_64" else []),
        "other_arch": "kill_process",
        "via": via,
        "tsync": tsync,
        "instructions": len(program),
    }
