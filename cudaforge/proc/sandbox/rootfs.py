"""A minimal root file system for a sandbox (stdlib only): what it cannot see, it cannot read, connect to or chmod.

Run by the sandbox's init (``cudaforge.proc.sandbox.launch``), as root or as the root of a fresh user namespace, in its
own mount and pid namespaces. :func:`plan` reads the host's view of the paths a sandbox may use (before anything is
mounted); :func:`enter` builds a new root on a tmpfs from that plan and makes it this mount namespace's root
(``pivot_root``), the host's root detached. The new root holds:

* read-only binds of the paths the sandbox may read (interpreter, packages, toolchain, CUDA toolkit and driver,
  the few files of /etc it needs), each at its own path, so nothing changes for the program; a folder the host
  keeps unreadable on the way (a 0700 home holding the interpreter) is not in the way here: only the bound folder
  itself is there, below folders of the tmpfs that anyone may search;
* read-write binds of its scratch folder (and any extra writable folder the spec names);
* a /dev with only the device nodes the spec names, a small private /dev/shm, and /dev/fd and friends;
* a fresh /proc of its own pid namespace, /sys read-only (its cgroups hidden), and a private /tmp on a tmpfs of
  bounded size.

Nothing else of the host is there: not the verifier's working folder, not the run directories, not the
checkout, not the user's home, not the host's /tmp.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from cudaforge.proc.sandbox import linux

BASE = "/tmp"
"""Where the scaffolding tmpfs is mounted in the sandbox's own mount namespace (hidden from the host)."""


@dataclass(frozen=True)
class Entry:
    """One path of the new root."""

    path: str
    """Where it appears in the new root (the host's path: nothing moves)."""
    kind: str
    """``ro``, ``rw`` or ``dev`` (binds), ``link`` (a symbolic link), ``tmpfs``, ``proc``."""
    source: str = ""
    """The host path bound (resolved: no link in it), or the link's text, or the tmpfs options."""
    is_dir: bool = True


def _within(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def plan(read: list[str], write: list[str], devices: list[str], *, tmp_bytes: int, tmp_files: int) -> list[Entry]:
    """The entries of the new root, read off the host now (call before anything is mounted). Paths that do not
    exist are left out; ``/proc`` becomes a fresh proc, ``/tmp`` a private tmpfs; links are kept as links and
    their targets added read-only."""
    entries: dict[str, Entry] = {}
    pending = [(p, "ro") for p in read] + [(p, "rw") for p in write] + [(p, "dev") for p in devices]
    seen: set[tuple[str, str]] = set()
    while pending:
        path, kind = pending.pop(0)
        path = os.path.normpath(path) if path else ""
        if not path.startswith("/") or (path, kind) in seen or not os.path.lexists(path):
            continue
        seen.add((path, kind))
        if path in ("/", BASE) or _within(path, "/proc") and kind == "ro":
            continue  # the root and /tmp are ours; /proc is mounted fresh
        if os.path.islink(path) and kind == "ro":
            entries.setdefault(path, Entry(path, "link", os.readlink(path), False))
            pending.append((os.path.realpath(path), "ro"))
            continue
        real = os.path.realpath(path)
        entries[path] = Entry(path, kind, real, os.path.isdir(real))
    if "/sys" in entries:  # the host's cgroups (other evaluations' usage among them) stay out of sight
        entries["/sys/fs/cgroup"] = Entry("/sys/fs/cgroup", "tmpfs", "mode=0555,size=4k,nr_inodes=16")
    entries["/proc"] = Entry("/proc", "proc")
    entries[BASE] = Entry(BASE, "tmpfs", f"mode=1777,size={tmp_bytes},nr_inodes={tmp_files}")
    entries["/dev"] = Entry("/dev", "tmpfs", "mode=0755,size=64k,nr_inodes=256")
    entries["/dev/shm"] = Entry("/dev/shm", "tmpfs", f"mode=1777,size={min(tmp_bytes, 64 << 20)},nr_inodes=1024")
    ordered = sorted(entries.values(), key=lambda e: (e.path.count("/"), e.path))
    kept: list[Entry] = []
    for entry in ordered:  # a read-only path inside one already there is there already
        if entry.kind in ("ro", "link") and any(k.kind in ("ro", "rw") and _within(entry.path, k.path) for k in kept):
            continue
        kept.append(entry)
    return kept


def _make_target(target: str, is_dir: bool) -> None:
    if os.path.lexists(target):
        return
    os.makedirs(os.path.dirname(target), mode=0o755, exist_ok=True)
    if is_dir:
        os.mkdir(target, 0o755)
    else:
        os.close(os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))


def enter(entries: list[Entry]) -> list[str]:
    """Build the new root from ``entries`` and pivot into it; the host's root is gone from this mount namespace
    when it returns. Returns the paths that could not be placed (each also a reason the caller may refuse for).
    Raises OSError when the scaffolding itself cannot be made (no mount rights: no new root at all)."""
    os.umask(0o022)
    linux.mount(None, "/", None, linux.MS_REC | linux.MS_PRIVATE)
    linux.mount("tmpfs", BASE, "tmpfs", linux.MS_NOSUID | linux.MS_NODEV, "mode=0755,size=64k,nr_inodes=64")
    os.mkdir(f"{BASE}/new", 0o755)
    os.mkdir(f"{BASE}/old", 0o755)
    linux.pivot_root(BASE, f"{BASE}/old")
    os.chdir("/")
    # now "/" is the scaffolding, "/old" the host's root, "/new" the root being made (a tmpfs of its own, so that
    # it is a mount point pivot_root accepts)
    linux.mount("tmpfs", "/new", "tmpfs", linux.MS_NOSUID | linux.MS_NODEV, "mode=0755,size=1m,nr_inodes=4096")
    failed: list[str] = []
    for entry in sorted(entries, key=lambda e: (e.path.count("/"), e.path)):
        target = "/new" + entry.path
        try:
            if entry.kind == "link":
                if not os.path.lexists(target):
                    os.makedirs(os.path.dirname(target), mode=0o755, exist_ok=True)
                    os.symlink(entry.source, target)
            elif entry.kind == "proc":
                _make_target(target, True)
                linux.mount("proc", target, "proc", linux.MS_NOSUID | linux.MS_NODEV | linux.MS_NOEXEC)
            elif entry.kind == "tmpfs":
                _make_target(target, True)
                linux.mount("tmpfs", target, "tmpfs", linux.MS_NOSUID | linux.MS_NODEV, entry.source)
                if entry.path == "/dev":
                    for name, link in (
                        ("fd", "/proc/self/fd"),
                        ("stdin", "/proc/self/fd/0"),
                        ("stdout", "/proc/self/fd/1"),
                        ("stderr", "/proc/self/fd/2"),
                    ):
                        os.symlink(link, f"{target}/{name}")
            else:
                _make_target(target, entry.is_dir)
                linux.bind("/old" + entry.source, target, read_only=entry.kind == "ro", devices=entry.kind == "dev")
        except OSError as exc:
            failed.append(f"{entry.path} ({exc.strerror or exc})")
    os.chdir("/new")
    linux.pivot_root(".", ".")  # the scaffolding (and the host's root below it) now sits on top of "/" ...
    linux.umount(".", linux.MNT_DETACH)  # ... and goes, with everything mounted in it
    os.chdir("/")
    linux.mount(None, "/", None, linux.MS_REMOUNT | linux.MS_RDONLY | linux.MS_NOSUID | linux.MS_NODEV)
    return failed
