"""One lock per GPU, so that profiling never overlaps timing on the same device.

An exclusive ``flock`` on ``<lock_dir>/gpu-<id>.lock``: it works across processes (a runner's
threads each open their own file, so they exclude each other too), and the kernel releases it
when the holder dies, so a killed run leaves no stale lock. The evaluator takes the same lock
around its timed phase and the profiler around ncu. Only the standard library is imported.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import time
from collections.abc import Iterator
from pathlib import Path

DEFAULT_LOCK_DIR = "~/.cache/cudaforge/locks"
"""Where the lock files live unless ``$CUDAFORGE_LOCK_DIR`` or an explicit directory says otherwise."""


class GpuLockTimeout(TimeoutError):
    """The GPU's lock was not free within the timeout."""


def lock_path(gpu_id: str | int, lock_dir: str | Path | None = None) -> Path:
    """The lock file of GPU ``gpu_id`` (its physical id, as ``CUDA_VISIBLE_DEVICES`` takes it)."""
    root = Path(lock_dir or os.environ.get("CUDAFORGE_LOCK_DIR") or DEFAULT_LOCK_DIR).expanduser()
    safe = re.sub(r"[^A-Za-z0-9_.-]", "_", str(gpu_id))
    return root / f"gpu-{safe}.lock"


@contextlib.contextmanager
def gpu_lock(
    gpu_id: str | int, lock_dir: str | Path | None = None, timeout_s: float | None = None, poll_s: float = 0.05
) -> Iterator[float]:
    """Hold GPU ``gpu_id``'s lock for the ``with`` block; yields the seconds spent waiting.

    ``timeout_s`` None waits for ever; otherwise :class:`GpuLockTimeout` is raised when the lock
    stays taken that long. Every user of a GPU must spell its id the same way (index or UUID).
    """
    path = lock_path(gpu_id, lock_dir)
    path.parent.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    with path.open("a+") as handle:
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if timeout_s is not None and time.monotonic() - started >= timeout_s:
                    raise GpuLockTimeout(f"GPU {gpu_id} stayed locked for {timeout_s:g} s ({path})") from None
                time.sleep(poll_s)
        try:
            yield time.monotonic() - started
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
