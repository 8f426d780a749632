"""Scratch folders of sandboxes (:func:`new_scratch`, :func:`release_scratch`): a private writable folder per
sandbox or build, a tmpfs of its own with a size quota as root, and the sweep of those left by trusted processes
that died without removing them. Stdlib only, like the rest of ``cudaforge.proc.sandbox``."""

from __future__ import annotations

import os
import re
import shutil
import tempfile

SCRATCH_NAME = re.compile(r"^cudaforge-[a-z]+-(\d+)-")
"""Scratch folders are named ``cudaforge-<kind>-<pid of the trusted process>-...`` (:func:`new_scratch`)."""


def new_scratch(kind: str, quota_bytes: int = 0, quota_files: int = 0) -> str:
    """A fresh scratch folder ``<tmp>/cudaforge-<kind>-<pid>-XXXX``. As root, with a quota, it is a tmpfs of its
    own of at most ``quota_bytes`` and ``quota_files`` entries (a write past them fails with ENOSPC); else a plain
    folder. Pair with :func:`release_scratch`."""
    sweep_stale_scratch()
    path = tempfile.mkdtemp(prefix=f"cudaforge-{kind}-{os.getpid()}-")
    if quota_bytes and os.geteuid() == 0:
        from cudaforge.proc.sandbox import linux

        try:
            linux.mount(
                "tmpfs",
                path,
                "tmpfs",
                linux.MS_NOSUID | linux.MS_NODEV,
                f"mode=0700,size={int(quota_bytes)},nr_inodes={int(quota_files or 1_000_000)}",
            )
        except OSError:
            pass  # no quota: the sandbox's status says so (scratch_quota)
    return path


def scratch_quota(path: str) -> str | None:
    """The quota of a scratch folder made by :func:`new_scratch` ("2.0 GiB, 50000 entries"), or None if it has none."""
    try:
        info = os.statvfs(path)
        if os.path.ismount(path) and info.f_blocks:
            return f"{info.f_blocks * info.f_frsize / (1 << 30):.1f} GiB, {info.f_files} entries"
    except OSError:
        pass
    return None


def release_scratch(path: str) -> None:
    """Remove a scratch folder (unmounting its tmpfs first); never raises, never follows a link."""
    if not path or not SCRATCH_NAME.match(os.path.basename(path)):
        return
    if os.path.ismount(path):
        from cudaforge.proc.sandbox import linux

        try:
            linux.umount(path)
        except OSError:
            pass
    shutil.rmtree(path, ignore_errors=True)


def _dead(pid: str) -> bool:
    try:
        os.kill(int(pid), 0)
        return False
    except ProcessLookupError:
        return True
    except (OSError, ValueError):
        return False


def sweep_stale_scratch() -> int:
    """Unmount and remove the scratch tmpfs mounts left by trusted processes that died without removing them
    (killed: their pid is in the folder's name), and the empty cgroups of launchers killed with their sandbox.
    Returns how many scratch folders went."""
    if os.geteuid() != 0:
        return 0
    import glob

    places = ["/sys/fs/cgroup", "/sys/fs/cgroup/*"]  # v2's root, v1's controllers; and this process's own cgroups
    try:
        places += ["/sys/fs/cgroup" + line.rstrip("\n").split(":", 2)[2] for line in open("/proc/self/cgroup")]
        places += [
            "/sys/fs/cgroup/memory" + line.rstrip("\n").split(":", 2)[2]
            for line in open("/proc/self/cgroup")
            if ":memory:" in line
        ]
    except (OSError, IndexError):
        pass
    for cgroup in sorted({c for place in places for c in glob.glob(f"{place}/cudaforge-sandbox-*")})[:1000]:
        pid = os.path.basename(cgroup).split("-")[2]
        if pid == "1" or _dead(pid):  # pid 1: made inside a pid namespace by an earlier launcher, never a live one
            try:
                os.rmdir(cgroup)
            except OSError:
                pass
    gone = 0
    tmp = tempfile.gettempdir().rstrip("/") + "/"
    try:
        lines = open("/proc/self/mountinfo").read().splitlines()
    except OSError:
        return 0
    for line in lines:
        fields = line.split(" ")
        if len(fields) < 5 or not fields[4].startswith(("/tmp/", tmp)):
            continue
        path = fields[4].replace("\\040", " ")
        found = SCRATCH_NAME.match(os.path.basename(path))
        if not found:  # any temporary folder: a test's or a run's TMPDIR may be one below /tmp
            continue
        if not _dead(found.group(1)):
            continue  # its owner lives (or cannot be told apart from one that does)
        release_scratch(path)
        gone += 1
    return gone
