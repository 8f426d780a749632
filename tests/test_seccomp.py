"""Tests of the sandbox's seccomp filter (``cudaforge.proc.sandbox.seccomp``).

Every test that installs the filter does so in a child process (a fresh interpreter started with ``subprocess``),
never in the pytest process, and reads back what the child saw as one JSON line. A pure-Python BPF interpreter
also checks the programs built for both architectures, including the one this machine cannot run.
"""

from __future__ import annotations

import errno
import json
import os
import platform
import re
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from cudaforge.proc.sandbox import seccomp

REPO = Path(__file__).resolve().parent.parent
MACHINE = {"amd64": "x86_64", "arm64": "aarch64"}.get(platform.machine().lower(), platform.machine().lower())


def _seccomp_in_kernel() -> bool:
    """Whether this is Linux with a kernel built with seccomp (its status files show the field)."""
    try:
        return "Seccomp:" in Path("/proc/self/status").read_text()
    except OSError:
        return False


needs_seccomp = pytest.mark.skipif(
    not sys.platform.startswith("linux") or MACHINE not in ("x86_64", "aarch64") or not _seccomp_in_kernel(),
    reason="seccomp filters need Linux with seccomp on x86_64 or aarch64",
)

# Syscall numbers the tests use, written out here separately from the module's tables (a second source).
NR = {
    "x86_64": {
        "io_uring_setup": 425,
        "unshare": 272,
        "keyctl": 250,
        "mount": 165,
        "ptrace": 101,
        "perf_event_open": 298,
        "bpf": 321,
        "clone": 56,
        "clone3": 435,
        "getpid": 39,
        "personality": 135,
        "fallocate": 285,
        "ioctl": 16,
    },
    "aarch64": {
        "io_uring_setup": 425,
        "unshare": 97,
        "keyctl": 219,
        "mount": 40,
        "ptrace": 117,
        "perf_event_open": 241,
        "bpf": 280,
        "clone": 220,
        "clone3": 435,
        "getpid": 172,
        "personality": 92,
        "fallocate": 47,
        "ioctl": 29,
    },
}

PRELUDE = textwrap.dedent(
    """
    import ctypes, errno, json, os, resource, socket, sys
    from cudaforge.proc.sandbox import seccomp
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    NR = {nr}

    def sc(nr, *args):
        '''A raw system call: its result, or the errno's name.'''
        nr = NR[nr] if isinstance(nr, str) else nr
        ctypes.set_errno(0)
        result = libc.syscall(ctypes.c_long(nr), *(ctypes.c_long(a) for a in args))
        return errno.errorcode.get(ctypes.get_errno(), ctypes.get_errno()) if result < 0 else result

    def err(fn, *args):
        '''Call a libc function: 'ok', or the errno's name.'''
        ctypes.set_errno(0)
        return "ok" if fn(*args) >= 0 else errno.errorcode.get(ctypes.get_errno(), ctypes.get_errno())

    def pyerr(fn, *args):
        '''Call a Python function: 'ok', or the errno's name of the OSError it raised.'''
        try:
            fn(*args)
            return "ok"
        except OSError as exc:
            return errno.errorcode.get(exc.errno, exc.errno)

    INFO = seccomp.install({extra}) if {install} else None
    OUT = {{}}
    """
)


def run_child(
    body: str, *, install: bool = True, extra: tuple[str, ...] = (), cwd: Path | None = None, check: bool = True
) -> dict | subprocess.CompletedProcess:
    """Run ``body`` in a fresh interpreter that first installs the filter (unless ``install`` is false).

    The body fills the dict ``OUT``; returns ``{"info": install's result, "out": OUT}`` (or, with ``check`` false,
    the completed process, for children expected to die).
    """
    script = PRELUDE.format(nr=repr(NR.get(MACHINE, {})), extra=repr(extra), install=install)
    script += textwrap.dedent(body) + '\nprint(json.dumps({"info": INFO, "out": OUT}))\n'
    env = dict(
        os.environ,
        LITELLM_LOCAL_MODEL_COST_MAP="True",
        WANDB_MODE="disabled",
        PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep),
    )
    proc = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=cwd or REPO,
        start_new_session=True,
    )  # no controlling terminal (vhangup)
    if not check:
        return proc
    assert proc.returncode == 0, f"child failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
    return json.loads(proc.stdout.strip().splitlines()[-1])


# ------------------------------------------------------------------------------------- the kernel


@needs_seccomp
def test_available_here() -> None:
    """On Linux with seccomp, on x86_64 or aarch64, the module says it can install."""
    assert seccomp.available() is True


@needs_seccomp
def test_install_reports_arch_and_real_names(tmp_path: Path) -> None:
    """install() names this architecture, and lists only calls this architecture has, all from DENIED."""
    result = run_child(
        "OUT['seccomp_mode'] = open('/proc/self/status').read().split('Seccomp:')[1].split()[0]", cwd=tmp_path
    )
    info, out = result["info"], result["out"]
    assert info["arch"] == MACHINE
    assert out["seccomp_mode"] == "2"
    assert info["socket_families"] == ["AF_UNIX"]
    assert info["via"] == "seccomp" and info["tsync"] is True
    assert 0 < info["instructions"] < 200
    table = seccomp.syscall_table(MACHINE)
    assert set(info["denied"]) <= set(seccomp.DENIED)
    assert all(name in table for name in info["denied"])
    missing = set(seccomp.DENIED) - set(info["denied"])
    assert missing == (set() if MACHINE == "x86_64" else {"iopl", "ioperm"})


def _header_numbers(path: Path) -> dict[str, int]:
    """``__NR_name`` -> number from a kernel UAPI header (the generic one spells 64-bit calls ``__NR3264_``)."""
    numbers = {}
    for match in re.finditer(r"^#define __NR(?:3264)?_(\w+)\s+(\d+)\s*$", path.read_text(), re.MULTILINE):
        numbers.setdefault(match.group(1), int(match.group(2)))
    return numbers


def test_tables_match_kernel_headers() -> None:
    """Where this machine has the kernel's UAPI headers, both tables agree with them (the generic table is arm64's)."""
    headers = {
        "x86_64": [Path("/usr/include/x86_64-linux-gnu/asm/unistd_64.h"), Path("/usr/include/asm/unistd_64.h")],
        "aarch64": [Path("/usr/include/asm-generic/unistd.h")],
    }
    checked = 0
    for arch, paths in headers.items():
        path = next((p for p in paths if p.exists()), None)
        if path is None:
            continue
        numbers = _header_numbers(path)
        table = seccomp.syscall_table(arch)
        for name, nr in table.items():
            if name in numbers:  # an older header may lack the newest calls
                assert numbers[name] == nr, f"{arch} {name}: {nr} here, {numbers[name]} in {path}"
                checked += 1
        for name, nr in NR[arch].items():
            assert numbers.get(name, nr) == nr, f"the tests' own {arch} number for {name} is wrong"
    if not checked:
        pytest.skip("no kernel UAPI headers on this machine")
    assert checked > 60


@needs_seccomp
def test_every_denied_call_fails_with_eperm(tmp_path: Path) -> None:
    """Each call install() lists fails with EPERM (called with all arguments -1, which the kernel would refuse too)."""
    body = """
        # io_uring_setup(1, NULL) is EFAULT without the filter: the filter is on before anything else is tried
        assert sc('io_uring_setup', 1, 0) == 'EPERM'
        table = seccomp.syscall_table()
        OUT['results'] = {name: sc(table[name], -1, -1, -1, -1, -1, -1) for name in INFO['denied']}
    """
    result = run_child(body, cwd=tmp_path)
    assert result["out"]["results"] == {name: "EPERM" for name in result["info"]["denied"]}
    assert len(result["out"]["results"]) >= 45


@needs_seccomp
def test_named_calls_fail_with_eperm(tmp_path: Path) -> None:
    """io_uring, user namespaces, keyrings, mount, ptrace, perf and bpf: EPERM, through libc where it has them."""
    body = """
        params = ctypes.create_string_buffer(120)
        OUT['io_uring_setup'] = sc('io_uring_setup', 4, ctypes.addressof(params))
        OUT['unshare'] = err(libc.unshare, 0x10000000)  # CLONE_NEWUSER
        OUT['unshare_raw'] = sc('unshare', 0x10000000)
        OUT['keyctl'] = sc('keyctl', 0, -3, 0)  # KEYCTL_GET_KEYRING_ID of the session keyring
        OUT['mount'] = err(libc.mount, b'none', b'/nonexistent-seccomp-test', b'tmpfs', ctypes.c_ulong(0), None)
        OUT['ptrace'] = err(libc.ptrace, 0, 0, None, None)  # PTRACE_TRACEME
        attr = ctypes.create_string_buffer(128)
        OUT['perf_event_open'] = sc('perf_event_open', ctypes.addressof(attr), 0, -1, -1, 0)
        OUT['bpf'] = sc('bpf', 0, ctypes.addressof(attr), 128)  # BPF_MAP_CREATE
    """
    out = run_child(body, cwd=tmp_path)["out"]
    assert out == {name: "EPERM" for name in out}
    assert len(out) == 8


@needs_seccomp
def test_without_the_filter_the_same_calls_answer_otherwise(tmp_path: Path) -> None:
    """Control: the kernel's own answers differ from the filter's, so the filtered answers come from the filter."""
    body = """
        OUT['keyctl_bad_op'] = sc('keyctl', -1, 0, 0)
        OUT['clone3_null'] = sc('clone3', 0, 0)
        OUT['inet_socketpair'] = pyerr(socket.socketpair, socket.AF_INET)
        OUT['personality'] = 'ok' if isinstance(sc('personality', 0xFFFFFFFF), int) else 'error'
    """
    plain = run_child(body, install=False, cwd=tmp_path)["out"]
    filtered = run_child(body, extra=("personality",), cwd=tmp_path)["out"]
    eop = errno.errorcode[errno.EOPNOTSUPP]  # ENOTSUP and EOPNOTSUPP are one number on Linux
    assert plain == {"keyctl_bad_op": eop, "clone3_null": "EINVAL", "inet_socketpair": eop, "personality": "ok"}
    assert filtered == {
        "keyctl_bad_op": "EPERM",
        "clone3_null": "ENOSYS",
        "inet_socketpair": "EAFNOSUPPORT",
        "personality": "error",
    }


@needs_seccomp
def test_sockets_unix_only(tmp_path: Path) -> None:
    """AF_INET fails with EAFNOSUPPORT, AF_INET6 and AF_NETLINK fail; AF_UNIX sockets and socketpair work."""
    body = """
        OUT['inet'] = pyerr(socket.socket, socket.AF_INET, socket.SOCK_STREAM)
        OUT['inet_udp'] = pyerr(socket.socket, socket.AF_INET, socket.SOCK_DGRAM)
        OUT['inet6'] = pyerr(socket.socket, socket.AF_INET6, socket.SOCK_STREAM)
        OUT['netlink'] = pyerr(socket.socket, socket.AF_NETLINK, socket.SOCK_RAW, 0)
        OUT['packet'] = pyerr(socket.socket, 17, socket.SOCK_RAW, 0)  # AF_PACKET
        a, b = socket.socketpair()
        a.sendall(b'ping')
        OUT['socketpair'] = b.recv(4).decode()
        path = os.path.join(os.getcwd(), 's')
        server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        server.bind(path)
        server.listen(1)
        client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
        client.connect(path)
        conn, _ = server.accept()
        client.sendall(b'pong')
        OUT['unix'] = conn.recv(4).decode()
        OUT['unix_dgram'] = pyerr(socket.socket, socket.AF_UNIX, socket.SOCK_DGRAM)
    """
    out = run_child(body, cwd=tmp_path)["out"]
    assert out["inet"] == "EAFNOSUPPORT" and out["inet_udp"] == "EAFNOSUPPORT"
    assert out["inet6"] == "EAFNOSUPPORT" and out["netlink"] == "EAFNOSUPPORT" and out["packet"] == "EAFNOSUPPORT"
    assert out["socketpair"] == "ping" and out["unix"] == "pong" and out["unix_dgram"] == "ok"


@needs_seccomp
def test_fallocate_grows_a_file_only_under_the_size_limit(tmp_path: Path) -> None:
    """The plain fallocate works (and a file-size limit bounds it); keeping the size (blocks reserved past the end,
    which the limit does not count) fails with EOPNOTSUPP, and so do the ioctls that reserve blocks the same way
    (red team: FS_IOC_RESVSP64 reserved 4 GiB in 0.01 s), so a log file on the host's disk cannot be grown unseen."""
    body = """
        libc.fallocate.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_long, ctypes.c_long]
        fd = os.open('f', os.O_CREAT | os.O_WRONLY, 0o600)
        OUT['plain'] = err(libc.fallocate, fd, 0, 0, 1 << 20)
        OUT['keep_size'] = err(libc.fallocate, fd, 1, 0, 64 << 20)
        OUT['zero_range'] = err(libc.fallocate, fd, 0x10, 0, 1 << 20)
        OUT['posix'] = pyerr(os.posix_fallocate, fd, 0, 2 << 20)
        import fcntl, struct
        resv = struct.pack("hhqqiI4i", 0, 0, 4 << 20, 64 << 20, 0, 0, 0, 0, 0, 0)  # struct space_resv
        OUT['resvsp64'] = pyerr(fcntl.ioctl, fd, 0x4030582A, resv)
        OUT['zero_range_ioctl'] = pyerr(fcntl.ioctl, fd, 0x40305839, resv)
        OUT['tty_ioctl'] = pyerr(fcntl.ioctl, fd, 0x5401, bytes(64))  # another request reaches the kernel
        OUT['size'] = os.fstat(fd).st_size
        OUT['blocks'] = os.fstat(fd).st_blocks * 512
    """
    out = run_child(body, cwd=tmp_path)["out"]
    assert out["plain"] == "ok" and out["posix"] == "ok" and out["size"] == 2 << 20
    notsup = errno.errorcode[errno.EOPNOTSUPP]  # ENOTSUP on Linux: the same number
    assert out["keep_size"] == notsup and out["zero_range"] == notsup
    assert out["resvsp64"] == notsup and out["zero_range_ioctl"] == notsup  # the ioctls that reserve the same way
    assert out["tty_ioctl"] == "ENOTTY"  # the kernel's answer for a file that is not a terminal
    assert out["blocks"] < 8 << 20  # nothing reserved past the end


@needs_seccomp
def test_fork_threads_and_exec_work_and_inherit(tmp_path: Path) -> None:
    """fork, threads (started before and after install) and subprocess work; exec'd programs keep the filter."""
    body = """
        import subprocess, threading
        pid = os.fork()
        if pid == 0:
            os._exit(42 if sc('io_uring_setup', 1, 0) == 'EPERM' else 1)
        OUT['fork'] = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
        seen = []
        thread = threading.Thread(target=lambda: seen.append(sc('io_uring_setup', 1, 0)))
        thread.start()
        thread.join()
        OUT['thread'] = seen
        probe = (
            "import ctypes, errno, json, socket\\n"
            "libc = ctypes.CDLL(None, use_errno=True)\\n"
            f"r = libc.syscall({NR['io_uring_setup']}, 1, 0)\\n"
            "status = open('/proc/self/status').read().split('Seccomp:')[1].split()[0]\\n"
            "try:\\n    socket.socket(socket.AF_INET); s = 'ok'\\n"
            "except OSError as e:\\n    s = errno.errorcode[e.errno]\\n"
            "print(json.dumps([errno.errorcode[ctypes.get_errno()] if r < 0 else r, status, s]))\\n"
        )
        proc = subprocess.run([sys.executable, '-c', probe], capture_output=True, text=True)
        OUT['subprocess'] = [proc.returncode, json.loads(proc.stdout), proc.stderr]
        OUT['print1'] = subprocess.run([sys.executable, '-c', 'print(1)'], capture_output=True, text=True).stdout
        OUT['shell'] = subprocess.run('echo $((6 * 7)) | cat', shell=True, capture_output=True, text=True).stdout
    """
    out = run_child(body, cwd=tmp_path)["out"]
    assert out["fork"] == 42
    assert out["thread"] == ["EPERM"]
    assert out["subprocess"] == [0, ["EPERM", "2", "EAFNOSUPPORT"], ""]
    assert out["print1"] == "1\n"
    assert out["shell"] == "42\n"


@needs_seccomp
def test_tsync_covers_threads_started_before_install(tmp_path: Path) -> None:
    """A thread already running when install() is called is filtered too (SECCOMP_FILTER_FLAG_TSYNC)."""
    script = textwrap.dedent(
        """
        import ctypes, errno, json, os, sys, threading
        from cudaforge.proc.sandbox import seccomp
        libc = ctypes.CDLL(None, use_errno=True)
        go, seen = threading.Event(), []
        def worker():
            '''Wait until the filter is installed, then try io_uring_setup.'''
            go.wait()
            r = libc.syscall(NR_IO_URING_SETUP, 1, 0)
            seen.append(errno.errorcode[ctypes.get_errno()] if r < 0 else r)
        thread = threading.Thread(target=worker)
        thread.start()
        info = seccomp.install()
        go.set()
        thread.join()
        print(json.dumps([info['tsync'], seen]))
        """
    ).replace("NR_IO_URING_SETUP", str(NR[MACHINE]["io_uring_setup"]))
    env = dict(os.environ, PYTHONPATH=str(REPO), LITELLM_LOCAL_MODEL_COST_MAP="True", WANDB_MODE="disabled")
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, env=env, cwd=tmp_path
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == [True, ["EPERM"]]


@needs_seccomp
def test_clone_with_namespace_flags_fails(tmp_path: Path) -> None:
    """A raw clone asking for any new namespace fails with EPERM; a plain raw clone (a fork) works."""
    body = """
        flags = {'NEWNS': 0x00020000, 'NEWCGROUP': 0x02000000, 'NEWUTS': 0x04000000, 'NEWIPC': 0x08000000,
                 'NEWUSER': 0x10000000, 'NEWPID': 0x20000000, 'NEWNET': 0x40000000}
        def raw_clone(flag):
            '''clone(flag | SIGCHLD) as a raw call: the child's exit code, or the errno's name.'''
            r = sc('clone', flag | 17, 0, 0, 0, 0)  # | SIGCHLD; no new stack: a fork
            if r == 0:
                os._exit(7)
            if isinstance(r, int):
                return os.waitstatus_to_exitcode(os.waitpid(r, 0)[1])
            return r
        OUT['ns'] = {name: raw_clone(flag) for name, flag in flags.items()}
        OUT['ns_all'] = raw_clone(sum(flags.values()))
        OUT['plain'] = raw_clone(0)
    """
    out = run_child(body, cwd=tmp_path)["out"]
    assert out["ns"] == {name: "EPERM" for name in out["ns"]} and len(out["ns"]) == 7
    assert out["ns_all"] == "EPERM"
    assert out["plain"] == 7


@needs_seccomp
def test_clone3_and_x32_get_enosys(tmp_path: Path) -> None:
    """clone3 fails with ENOSYS (so glibc falls back to clone); on x86_64 so do x32 system calls."""
    body = """
        args = ctypes.create_string_buffer(88)  # struct clone_args, zeroed: would be a fork
        r = sc('clone3', ctypes.addressof(args), 88)
        if r == 0:
            os._exit(0)
        OUT['clone3'] = r
        OUT['x32_getpid'] = sc(0x40000000 + NR['getpid']) if INFO['arch'] == 'x86_64' else 'ENOSYS'
        OUT['getpid'] = sc('getpid') == os.getpid()
    """
    out = run_child(body, cwd=tmp_path)["out"]
    assert out == {"clone3": "ENOSYS", "x32_getpid": "ENOSYS", "getpid": True}


@pytest.mark.skipif(MACHINE != "x86_64", reason="i386 system calls exist on x86_64 only")
@needs_seccomp
def test_i386_system_call_kills_the_process(tmp_path: Path) -> None:
    """An ``int 0x80`` (i386 ABI) system call kills the process with SIGSYS."""
    body = """
        import mmap
        code = bytes([0xB8, 20, 0, 0, 0, 0xCD, 0x80, 0xC3])  # mov eax, 20 (i386 getpid); int 0x80; ret
        buf = mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
        buf.write(code)
        fn = ctypes.CFUNCTYPE(ctypes.c_int)(ctypes.addressof(ctypes.c_char.from_buffer(buf)))
        OUT['pid'] = [fn(), os.getpid()]
    """
    plain = run_child(body, install=False, check=False, cwd=tmp_path)
    if plain.returncode != 0 or len(set(json.loads(plain.stdout.splitlines()[-1])["out"]["pid"])) != 1:
        pytest.skip(f"this kernel does not run i386 system calls (rc {plain.returncode})")
    filtered = run_child(body, check=False, cwd=tmp_path)
    assert filtered.returncode == -signal.SIGSYS, (filtered.returncode, filtered.stdout, filtered.stderr)


@needs_seccomp
def test_extra_deny(tmp_path: Path) -> None:
    """Names in extra_deny fail with EPERM too and are listed; names for another architecture are skipped."""
    body = "OUT['personality'] = sc('personality', 0xFFFFFFFF)"
    result = run_child(body, extra=("personality", "modify_ldt"), cwd=tmp_path)
    assert result["out"]["personality"] == "EPERM"
    assert "personality" in result["info"]["denied"]
    assert ("modify_ldt" in result["info"]["denied"]) == (MACHINE == "x86_64")


def test_bad_extra_deny_names_are_refused() -> None:
    """Unknown names, and calls with their own rule, are refused before anything is installed."""
    with pytest.raises(ValueError, match="no system call number"):
        seccomp.build_filter("x86_64", ("no_such_call",))
    with pytest.raises(ValueError, match="own rule"):
        seccomp.build_filter("aarch64", ("clone",))


@needs_seccomp
def test_unknown_architecture_raises_enotsup(tmp_path: Path) -> None:
    """On an architecture without a table install() raises OSError(ENOTSUP), available() is false, nothing holds."""
    body = """
        seccomp.native_arch = lambda: 'riscv64'
        OUT['available'] = seccomp.available()
        try:
            seccomp.install()
            OUT['install'] = 'installed'
        except OSError as exc:
            OUT['install'] = errno.errorcode[exc.errno]
        OUT['mode'] = open('/proc/self/status').read().split('Seccomp:')[1].split()[0]
    """
    out = run_child(body, install=False, cwd=tmp_path)["out"]
    assert out == {"available": False, "install": errno.errorcode[errno.ENOTSUP], "mode": "0"}


# ------------------------------------------------------------------------- the programs themselves


def _run_bpf(program: list[tuple[int, int, int, int]], nr: int, arch: int, arg0: int = 0, arg1: int = 0) -> int:
    """Interpret a classic BPF seccomp program on one ``seccomp_data`` (just the instructions this module uses)."""
    data = {0: nr & 0xFFFFFFFF, 4: arch, 16: arg0 & 0xFFFFFFFF, 20: (arg0 >> 32) & 0xFFFFFFFF, 24: arg1 & 0xFFFFFFFF}
    acc, pc = 0, 0
    while True:
        assert 0 <= pc < len(program), f"fell off the program at {pc}"
        code, jt, jf, k = program[pc]
        if code == 0x20:  # LD W ABS
            acc = data[k]
        elif code == 0x06:  # RET K
            return k
        elif code in (0x15, 0x35, 0x45):  # JEQ, JGE, JSET
            taken = {0x15: acc == k, 0x35: acc >= k, 0x45: bool(acc & k)}[code]
            pc += jt if taken else jf
        else:
            raise AssertionError(f"unexpected instruction {code:#x}")
        pc += 1


ALLOW, KILL = 0x7FFF0000, 0x80000000
EPERM, ENOSYS, EAFNOSUPPORT, EOPNOTSUPP = (
    0x00050000 | e for e in (errno.EPERM, errno.ENOSYS, errno.EAFNOSUPPORT, errno.EOPNOTSUPP)
)


@pytest.mark.parametrize("arch,audit", [("x86_64", 0xC000003E), ("aarch64", 0xC00000B7)])
def test_programs_decide_as_documented(arch: str, audit: int) -> None:
    """For both architectures: other ABIs are killed, denials are EPERM, special rules hold, the rest is allowed."""
    program = seccomp.build_filter(arch)
    assert len(program) < 200
    table = seccomp.syscall_table(arch)
    denied = seccomp.denied_names(arch)
    other = 0x40000003 if arch == "x86_64" else 0x40000028  # AUDIT_ARCH_I386, AUDIT_ARCH_ARM
    assert _run_bpf(program, table["keyctl"], other) == KILL
    assert _run_bpf(program, 0, other) == KILL
    for name in denied:
        assert _run_bpf(program, table[name], audit) == EPERM, name
    assert _run_bpf(program, table["clone3"], audit) == ENOSYS
    for flag in seccomp.CLONE_NAMESPACE_FLAGS.values():
        assert _run_bpf(program, table["clone"], audit, flag | 17) == EPERM
    assert _run_bpf(program, table["clone"], audit, 0x3D0F00) == ALLOW  # glibc's pthread_create flags
    assert _run_bpf(program, table["clone"], audit, 0x01200011) == ALLOW  # glibc's fork flags
    assert _run_bpf(program, table["clone"], audit, 0x80) == ALLOW  # CSIGNAL bits, not CLONE_NEWTIME
    for name in ("socket", "socketpair"):
        assert _run_bpf(program, table[name], audit, 1) == ALLOW
        assert _run_bpf(program, table[name], audit, 0xFFFFFFFF00000001) == ALLOW  # int family: low 32 bits
        for family in (2, 10, 16, 17, 40):
            assert _run_bpf(program, table[name], audit, family) == EAFNOSUPPORT
    assert _run_bpf(program, table["fallocate"], audit, 3, 0) == ALLOW  # the plain mode, on fd 3
    for mode in (0x01, 0x03, 0x10, 0x20, 0x40):  # KEEP_SIZE, PUNCH_HOLE|KEEP_SIZE, ZERO_RANGE, INSERT, UNSHARE
        assert _run_bpf(program, table["fallocate"], audit, 3, mode) == EOPNOTSUPP
    for request in (0x5401, 0x4030582C, 0xC0104600, 0x80086601):  # TCGETS, a neighbour, a driver's, FS_IOC_GETFLAGS
        assert _run_bpf(program, table["ioctl"], audit, 2, request) == ALLOW
    for request in seccomp.RESERVE_IOCTLS.values():
        assert _run_bpf(program, table["ioctl"], audit, 2, request) == EOPNOTSUPP
        assert _run_bpf(program, table["ioctl"], audit, 2, request | 0xFFFFFFFF00000000) == EOPNOTSUPP  # unsigned int
    special = {table[n] for n in ("clone", "clone3", "socket", "socketpair", "fallocate", "ioctl")}
    denied_nrs = {table[n] for n in denied}
    for nr in range(0, 470):
        if nr not in special and nr not in denied_nrs:
            assert _run_bpf(program, nr, audit) == ALLOW, nr
    if arch == "x86_64":
        assert _run_bpf(program, 0x40000000 + 39, audit) == ENOSYS
        assert {"iopl", "ioperm"} <= set(denied)
    else:
        assert not {"iopl", "ioperm"} & set(denied)
        assert _run_bpf(program, 1 << 30, audit) == ALLOW  # no x32 on arm64


def test_long_extra_deny_list_still_assembles() -> None:
    """Every name a table knows can be denied at once: the program stays small and every jump fits in 8 bits."""
    for arch in ("x86_64", "aarch64"):
        extra = tuple(
            n
            for n in seccomp.syscall_table(arch)
            if n not in ("clone", "clone3", "socket", "socketpair", "fallocate", "ioctl")
        )
        program = seccomp.build_filter(arch, extra)
        assert len(program) < 256
        assert all(0 <= jt < 256 and 0 <= jf < 256 for _, jt, jf, _ in program)
